//! Plugins by reference: one task per plugin ConfigMap whose `plugin.ref` names an OCI artifact or URL. It resolves
//! the reference, pulls and digest-checks the component, checks its signature when the host requires one, and
//! hands the package to the [`Installer`]; it re-resolves a tag every `refreshInterval` (a moved tag hot-reloads)
//! and retries what may heal (registry down, manifest or signature not there yet) with backoff. Nothing that fails
//! replaces the serving version: the failure is counted, reported and logged.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use oci_client::secrets::RegistryAuth;
use tokio_util::sync::CancellationToken;

use super::credentials::{DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE, RegistryCredentials};
use super::package::{PackageError, PluginPackage};
use super::reference::{OciReference, PluginReference};
use super::registry::{RegistryClient, RegistryError};
use super::settings::PluginSettings;
use super::signature::{PolicyError, SignaturePolicy};
use super::{Installed, Installer};

/// First wait after a failure that may heal.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Longest wait between retries.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// A plugin ConfigMap that names its component by reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencedPlugin {
    /// The plugin's name (the ConfigMap's).
    pub name: String,
    /// Where the component is.
    pub reference: PluginReference,
    /// The `wasm-reconciler.io/sha256` pin of the component, if any (required for URLs).
    pub pinned_sha256: Option<String>,
    /// `plugin.wasm.sig`, a detached signature over the component (used for URLs under a signature policy).
    pub detached_signature: Option<String>,
    /// `config.yaml`.
    pub config: Option<String>,
    /// `settings.yaml`.
    pub settings_text: Option<String>,
    /// The settings, parsed.
    pub settings: PluginSettings,
}

impl ReferencedPlugin {
    /// How long to wait before resolving again once a version serves: a tag's refresh interval; never for a
    /// digest or URL, which cannot change.
    fn refresh(&self) -> Option<Duration> {
        match &self.reference {
            PluginReference::Oci(reference) if !reference.is_pinned() => Some(self.settings.refresh_interval),
            _ => None,
        }
    }

    fn package(&self, wasm: &[u8]) -> Result<PluginPackage, PackageError> {
        PluginPackage::decode(
            Some(wasm),
            None,
            self.config.as_deref(),
            self.settings_text.as_deref(),
            self.pinned_sha256.as_deref(),
        )
    }
}

/// What references need from the host: the registry client, the signature policy, and where pull secrets live.
#[derive(Debug, Clone)]
pub struct ReferenceContext {
    /// Pulls and caches components.
    pub registry: Arc<RegistryClient>,
    /// Which signatures are required.
    pub policy: Arc<SignaturePolicy>,
    /// Secrets of the host's namespace (pull secrets), when reachable.
    pub secrets: Option<Api<Secret>>,
}

/// What a task reports about a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The version is serving.
    Loaded {
        /// How it was installed.
        installed: Installed,
        /// What was loaded, pinned (`oci://…@sha256:…` or the URL).
        source: String,
    },
    /// The version was refused; the previous one (if any) keeps serving.
    Refused {
        /// Why, with its causes.
        message: String,
        /// Whether the task tries again by itself.
        retrying: bool,
    },
}

/// Where a task's verdicts go (Events on the plugin's ConfigMap).
pub trait VerdictSink: Send + Sync + 'static {
    /// Reports one verdict.
    fn report(&self, verdict: Verdict) -> impl std::future::Future<Output = ()> + Send;
}

/// Why a referenced version was not installed.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The pull secret could not be used.
    #[error("pull secret {name:?}: {message}")]
    PullSecret {
        /// The Secret's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The registry or URL failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The signature policy refused the version.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The package did not decode (digest pin, settings, configuration).
    #[error(transparent)]
    Package(#[from] PackageError),
}

impl PullError {
    /// Whether the task tries again by itself (with backoff) rather than waiting for a change.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::PullSecret { .. } => true,
            Self::Registry(error) => error.is_retryable(),
            // A signature may be pushed after the artifact; a detached one only comes with a new ConfigMap.
            Self::Policy(PolicyError::Unsigned { .. } | PolicyError::Untrusted { .. }) => true,
            Self::Policy(_) | Self::Package(_) => false,
        }
    }
}

/// A version ready to install.
struct Fetched {
    /// The manifest digest (or the component's, for a URL): what identifies this version.
    digest: String,
    /// The package.
    package: PluginPackage,
    /// `oci://…@sha256:…` or the URL.
    source: String,
}

/// Exponential backoff from [`BACKOFF_INITIAL`] to [`BACKOFF_MAX`].
#[derive(Debug, Clone)]
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Self {
        Self { next: BACKOFF_INITIAL }
    }

    fn next(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        wait
    }

    fn reset(&mut self) {
        self.next = BACKOFF_INITIAL;
    }
}

/// Keeps one referenced plugin installed until `cancel` fires. Cancelling interrupts a resolve, pull or wait, never
/// an install in progress.
pub async fn run(
    plugin: ReferencedPlugin,
    installer: impl Installer,
    context: ReferenceContext,
    sink: impl VerdictSink,
    cancel: CancellationToken,
) {
    let name = plugin.name.clone();
    let mut serving: Option<String> = None;
    let mut given_up: Option<String> = None;
    let mut last_failure: Option<String> = None;
    let mut backoff = Backoff::new();
    tracing::info!(plugin = %name, reference = %plugin.reference, "plugin by reference");
    loop {
        let fetched = tokio::select! {
            () = cancel.cancelled() => return,
            fetched = fetch(&plugin, &context, serving.as_deref(), given_up.as_deref()) => fetched,
        };
        let wait = match fetched {
            Ok(None) => {
                if given_up.is_none() && last_failure.take().is_some() {
                    tracing::info!(plugin = %name, "the reference resolves again; the serving version is current");
                }
                backoff.reset();
                plugin.refresh()
            }
            Ok(Some(fetched)) => match installer
                .install(
                    &name,
                    PluginPackage {
                        origin: Some(format!("{} (ConfigMap {name})", fetched.source)),
                        ..fetched.package
                    },
                )
                .await
            {
                Ok(installed) => {
                    // Held: the manager said why (the plugin is pinned to a revision); the Event says it too.
                    if installed != Installed::Held {
                        tracing::info!(plugin = %name, source = %fetched.source, ?installed, "plugin by reference serving");
                    }
                    serving = Some(fetched.digest);
                    given_up = None;
                    last_failure = None;
                    backoff.reset();
                    if installed != Installed::Unchanged {
                        sink.report(Verdict::Loaded {
                            installed,
                            source: fetched.source,
                        })
                        .await;
                    }
                    plugin.refresh()
                }
                Err(error) => {
                    // The installer counted the refusal itself.
                    let message = format!("{}: {}", fetched.source, crate::error_chain(&error));
                    tracing::error!(plugin = %name, error = %message, "referenced version refused; the previous version keeps serving");
                    given_up = Some(fetched.digest);
                    last_failure = Some(message.clone());
                    sink.report(Verdict::Refused {
                        message,
                        retrying: false,
                    })
                    .await;
                    plugin.refresh()
                }
            },
            Err((digest, error)) => {
                let retrying = error.is_retryable();
                let message = crate::error_chain(&error);
                let wait = if retrying {
                    Some(backoff.next())
                } else {
                    given_up = digest;
                    plugin.refresh()
                };
                tracing::warn!(
                    plugin = %name,
                    error = %message,
                    retry_in_ms = wait.filter(|_| retrying).map(|w| w.as_millis() as u64),
                    "could not load the referenced version; the previous version keeps serving"
                );
                if last_failure.as_deref() != Some(message.as_str()) {
                    installer.record_refused(&name, &message);
                    last_failure = Some(message.clone());
                    sink.report(Verdict::Refused { message, retrying }).await;
                }
                wait
            }
        };
        match wait {
            Some(wait) => tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            },
            None => {
                cancel.cancelled().await;
                return;
            }
        }
    }
}

/// One round: the version the reference names now, unless it is the serving one (or one refused for good).
async fn fetch(
    plugin: &ReferencedPlugin,
    context: &ReferenceContext,
    serving: Option<&str>,
    given_up: Option<&str>,
) -> Result<Option<Fetched>, (Option<String>, PullError)> {
    match &plugin.reference {
        PluginReference::Oci(reference) => {
            let auth = pull_auth(plugin, context, &reference.registry)
                .await
                .map_err(|e| (None, e))?;
            let digest = context
                .registry
                .resolve(reference, &auth)
                .await
                .map_err(|e| (None, e.into()))?;
            if serving == Some(digest.as_str()) || given_up == Some(digest.as_str()) {
                return Ok(None);
            }
            if serving.is_some() {
                tracing::info!(plugin = %plugin.name, reference = %reference, digest = %digest, "the tag moved; loading the new version");
            }
            let pinned = reference.with_digest(&digest);
            fetch_artifact(plugin, context, &pinned, &digest, &auth)
                .await
                .map(Some)
                .map_err(|e| (Some(digest), e))
        }
        PluginReference::Url(url) => {
            if serving.is_some() || given_up.is_some() {
                return Ok(None);
            }
            let Some(pin) = plugin.pinned_sha256.as_deref() else {
                unreachable!("a URL reference without a pin is refused when the ConfigMap is read")
            };
            let pulled = context
                .registry
                .fetch(&plugin.name, url, pin)
                .await
                .map_err(|e| (None, e.into()))?;
            let digest = pulled.component_digest.clone();
            let failed = |e: PullError| (Some(digest.clone()), e);
            if let Some(key) = context
                .policy
                .check_detached(&pulled.wasm, plugin.detached_signature.as_deref())
                .map_err(|e| failed(e.into()))?
            {
                tracing::info!(plugin = %plugin.name, key = %key.name, "detached signature verified");
            }
            let package = plugin.package(&pulled.wasm).map_err(|e| failed(e.into()))?;
            Ok(Some(Fetched {
                digest: digest.clone(),
                package,
                source: url.url.clone(),
            }))
        }
    }
}

async fn fetch_artifact(
    plugin: &ReferencedPlugin,
    context: &ReferenceContext,
    pinned: &OciReference,
    digest: &str,
    auth: &RegistryAuth,
) -> Result<Fetched, PullError> {
    let pulled = context.registry.pull(&plugin.name, pinned, auth).await?;
    if context.policy.is_required() {
        let signatures = context.registry.signatures(pinned, digest, auth).await?;
        let key = context.policy.check_artifact(
            &pinned.to_string(),
            digest,
            signatures.iter().map(|s| (s.payload.as_slice(), s.signature.as_str())),
        )?;
        if let Some(key) = key {
            tracing::info!(plugin = %plugin.name, reference = %pinned, key = %key.name, fingerprint = %key.fingerprint, "signature verified");
        }
    }
    let package = plugin.package(&pulled.wasm)?;
    Ok(Fetched {
        digest: digest.to_owned(),
        package,
        source: pinned.to_string(),
    })
}

/// The credentials the plugin's pull secret holds for `registry`; anonymous without a pull secret.
async fn pull_auth(
    plugin: &ReferencedPlugin,
    context: &ReferenceContext,
    registry: &str,
) -> Result<RegistryAuth, PullError> {
    let Some(name) = &plugin.settings.pull_secret else {
        return Ok(RegistryAuth::Anonymous);
    };
    let failed = |message: String| PullError::PullSecret {
        name: name.clone(),
        message,
    };
    let secrets = context
        .secrets
        .as_ref()
        .ok_or_else(|| failed("this plugin source cannot read Secrets".into()))?;
    let secret = secrets
        .get_opt(name)
        .await
        .map_err(|e| failed(crate::error_chain(&e)))?
        .ok_or_else(|| failed("no such Secret in the host's namespace".into()))?;
    if secret.type_.as_deref() != Some(DOCKER_CONFIG_JSON_TYPE) {
        return Err(failed(format!(
            "its type is {:?}, not {DOCKER_CONFIG_JSON_TYPE}",
            secret.type_.unwrap_or_default()
        )));
    }
    let document = secret
        .data
        .as_ref()
        .and_then(|data| data.get(DOCKER_CONFIG_JSON_KEY))
        .ok_or_else(|| failed(format!("it has no `{DOCKER_CONFIG_JSON_KEY}`")))?;
    let credentials = RegistryCredentials::parse(&document.0).map_err(|e| failed(e.to_string()))?;
    if !credentials.has(registry) {
        tracing::warn!(plugin = %plugin.name, secret = %name, registry, "the pull secret has no credentials for this registry; pulling anonymously");
    }
    Ok(credentials.for_registry(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut backoff = Backoff::new();
        let waits: Vec<u64> = (0..11).map(|_| backoff.next().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        backoff.reset();
        assert_eq!(backoff.next(), BACKOFF_INITIAL);
    }

    #[test]
    fn tags_refresh_and_digests_do_not() {
        let plugin = |reference: &str| ReferencedPlugin {
            name: "p".into(),
            reference: PluginReference::parse(reference).unwrap(),
            pinned_sha256: None,
            detached_signature: None,
            config: None,
            settings_text: None,
            settings: PluginSettings::parse("refreshInterval: 10s").unwrap(),
        };
        assert_eq!(plugin("oci://r.example/p:v1").refresh(), Some(Duration::from_secs(10)));
        let digest = format!("oci://r.example/p:v1@sha256:{}", "0".repeat(64));
        assert_eq!(plugin(&digest).refresh(), None);
        assert_eq!(plugin("https://r.example/p.wasm").refresh(), None);
    }

    #[test]
    fn what_is_retried() {
        let registry = |error| PullError::Registry(error).is_retryable();
        assert!(registry(RegistryError::ManifestNotFound { reference: "r".into() }));
        assert!(registry(RegistryError::Unreachable {
            authority: "r".into(),
            message: "refused".into()
        }));
        assert!(!registry(RegistryError::DigestMismatch {
            what: "w".into(),
            expected: "a".into(),
            actual: "b".into()
        }));
        assert!(
            PullError::Policy(PolicyError::Unsigned {
                reference: "r".into(),
                tag: "t".into()
            })
            .is_retryable()
        );
        assert!(!PullError::Policy(PolicyError::MissingDetached).is_retryable());
        assert!(!PullError::Package(PackageError::NoComponent).is_retryable());
    }
}
