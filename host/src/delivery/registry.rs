//! The registry client: resolves tags, pulls wasm artifacts (oci-client) and components at URLs, pushes artifacts
//! and cosign signatures. Plain HTTP reaches only loopback and explicitly insecure hosts; TLS trusts the system
//! roots plus an optional CA bundle. Pulled components are bounded in size, verified against their digests and
//! kept by digest in a [`ComponentStore`]; progress and outcome are logged.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use sha2::{Digest, Sha256};

use super::artifact::{
    self, ACCEPTED_MANIFEST_MEDIA_TYPES, ArtifactError, ComponentLayer, WasmArtifact, sha256_digest,
};
use super::component_store::ComponentStore;
use super::package::MAX_COMPONENT_BYTES;
use super::reference::{OciReference, UrlReference, is_loopback, split_authority};
use super::signature::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, signature_tag};

/// How registries are reached: host flags `--insecure-registry` and `--registry-ca`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryOptions {
    /// Registries (`host` or `host:port`) that may be reached over plain HTTP besides loopback ones.
    pub insecure_registries: Vec<String>,
    /// PEM bundle of extra CA certificates trusted besides the system roots.
    pub ca_bundle: Option<PathBuf>,
}

impl RegistryOptions {
    /// Whether `authority` (`host[:port]`) may be reached over plain HTTP: loopback, or listed.
    pub fn allows_plain_http(&self, authority: &str) -> bool {
        let (host, _) = split_authority(authority);
        is_loopback(authority)
            || self
                .insecure_registries
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(authority) || listed.eq_ignore_ascii_case(host))
    }
}

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The CA bundle could not be read.
    #[error("reading the CA bundle {path}")]
    CaBundle {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An HTTP client could not be built (a bad certificate in the bundle, …).
    #[error("building the HTTP client: {0}")]
    Client(String),
    /// Plain HTTP to a host that is neither loopback nor listed as insecure.
    #[error(
        "refusing plain HTTP to {authority}: only loopback registries and hosts given with --insecure-registry may \
         be reached without TLS"
    )]
    PlainHttp {
        /// `host[:port]`.
        authority: String,
    },
    /// Nothing answered.
    #[error("{authority} is unreachable: {message}")]
    Unreachable {
        /// `host[:port]`.
        authority: String,
        /// What the connection attempt said.
        message: String,
    },
    /// The manifest (tag or digest) does not exist.
    #[error("{reference}: manifest not found in the registry")]
    ManifestNotFound {
        /// The reference.
        reference: String,
    },
    /// The registry refused the credentials (or wants some).
    #[error("{reference}: the registry refused access ({message}); is the pull secret right?")]
    Unauthorized {
        /// The reference.
        reference: String,
        /// What the registry said.
        message: String,
    },
    /// Any other registry failure.
    #[error("{operation} {reference}")]
    Oci {
        /// What was being done.
        operation: &'static str,
        /// The reference.
        reference: String,
        /// oci-client's error.
        #[source]
        source: OciDistributionError,
    },
    /// The manifest is not a wasm component artifact.
    #[error("{reference} is not a wasm component artifact")]
    Artifact {
        /// The reference.
        reference: String,
        /// What is wrong.
        #[source]
        source: ArtifactError,
    },
    /// Content did not hash to its digest.
    #[error("{what} has digest {actual}, but {expected} was expected")]
    DigestMismatch {
        /// What was checked.
        what: String,
        /// The digest named.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// More bytes than announced or allowed.
    #[error("{what} is larger than {limit} bytes")]
    TooLarge {
        /// What was downloaded.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// A URL answered with an error status.
    #[error("GET {url} answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// A URL request failed.
    #[error("GET {url}")]
    Request {
        /// The URL.
        url: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
}

impl RegistryError {
    /// Whether trying again later may succeed: the registry was down, a manifest or signature may be pushed later,
    /// credentials may be fixed. Content that arrived and is wrong (digest, layout, size) is not retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. }
            | Self::ManifestNotFound { .. }
            | Self::Unauthorized { .. }
            | Self::Request { .. }
            | Self::Oci { .. } => true,
            Self::Status { status, .. } => *status == 404 || *status == 429 || *status >= 500,
            Self::CaBundle { .. }
            | Self::Client(_)
            | Self::PlainHttp { .. }
            | Self::Artifact { .. }
            | Self::DigestMismatch { .. }
            | Self::TooLarge { .. } => false,
        }
    }
}

/// Local result alias.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

/// How a registry is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Https,
    Http,
}

/// A component pulled from a registry or URL.
#[derive(Debug, Clone)]
pub struct PulledComponent {
    /// The manifest digest (`sha256:…`); for a URL, the component's digest.
    pub manifest_digest: String,
    /// The component's digest (`sha256:…`).
    pub component_digest: String,
    /// The component.
    pub wasm: Arc<Vec<u8>>,
    /// Whether it came from the store rather than the network.
    pub cached: bool,
}

/// One cosign signature found beside an artifact: the payload and the signature over it.
#[derive(Debug, Clone)]
pub struct SignatureLayer {
    /// The simple-signing payload.
    pub payload: Vec<u8>,
    /// base64 signature over the payload.
    pub signature: String,
}

/// Largest signature payload read.
const MAX_PAYLOAD_BYTES: i64 = 1024 * 1024;
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a read may stall.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How many redirects a URL reference may follow.
const MAX_REDIRECTS: usize = 5;
/// How often progress is logged during a download.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Talks to registries and URLs. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct RegistryClient {
    options: RegistryOptions,
    extra_roots: Vec<Vec<u8>>,
    schemes: Mutex<HashMap<String, Scheme>>,
    store: ComponentStore,
}

impl RegistryClient {
    /// A client with `options`; pulled blobs are kept in `<artifact_cache>/oci` when given.
    pub fn new(options: RegistryOptions, artifact_cache: Option<PathBuf>) -> Result<Self> {
        crate::install_crypto_provider();
        let extra_roots = match &options.ca_bundle {
            None => Vec::new(),
            Some(path) => {
                let pem = std::fs::read(path).map_err(|source| RegistryError::CaBundle {
                    path: path.clone(),
                    source,
                })?;
                split_pem_certificates(&pem)
            }
        };
        let client = Self {
            options,
            extra_roots,
            schemes: Mutex::default(),
            store: ComponentStore::new(artifact_cache),
        };
        // Fail at start-up on a bad bundle rather than at the first pull.
        client.http_client()?;
        Ok(client)
    }

    /// The options.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// The manifest digest a reference names now: its own digest when pinned (no request), else the tag's.
    pub async fn resolve(&self, reference: &OciReference, auth: &RegistryAuth) -> Result<String> {
        if let Some(digest) = &reference.digest {
            return Ok(digest.clone());
        }
        let client = self.oci_client(&reference.registry, auth).await?;
        client
            .fetch_manifest_digest(&reference.to_client(), auth)
            .await
            .map_err(|source| classify(reference, "resolving", source))
    }

    /// Pulls the component of a wasm artifact, checking the manifest against the reference's digest, the layer's
    /// layout, size and digest; served from the store when the digests are already known.
    pub async fn pull(&self, plugin: &str, reference: &OciReference, auth: &RegistryAuth) -> Result<PulledComponent> {
        let started = Instant::now();
        let manifest = match reference.digest.as_deref().and_then(|digest| self.store.get(digest)) {
            Some(manifest) => manifest,
            None => {
                let (manifest, _) = self
                    .oci_client(&reference.registry, auth)
                    .await?
                    .pull_manifest_raw(&reference.to_client(), auth, ACCEPTED_MANIFEST_MEDIA_TYPES)
                    .await
                    .map_err(|source| classify(reference, "pulling the manifest of", source))?;
                if manifest.len() > artifact::MAX_MANIFEST_BYTES {
                    return Err(RegistryError::TooLarge {
                        what: format!("the manifest of {reference}"),
                        limit: artifact::MAX_MANIFEST_BYTES as u64,
                    });
                }
                Arc::new(manifest.to_vec())
            }
        };
        let manifest_digest = sha256_digest(&manifest);
        if let Some(expected) = &reference.digest
            && *expected != manifest_digest
        {
            return Err(RegistryError::DigestMismatch {
                what: format!("the manifest of {reference}"),
                expected: expected.clone(),
                actual: manifest_digest,
            });
        }
        let layer = artifact::component_layer(&manifest).map_err(|source| RegistryError::Artifact {
            reference: reference.to_string(),
            source,
        })?;
        self.store.put(&manifest_digest, manifest.clone());
        if let Some(wasm) = self.store.get(&layer.digest) {
            tracing::info!(plugin, reference = %reference, digest = %manifest_digest, bytes = wasm.len(), "component found in the cache; not pulled");
            return Ok(PulledComponent {
                manifest_digest,
                component_digest: layer.digest,
                wasm,
                cached: true,
            });
        }
        let client = self.oci_client(&reference.registry, auth).await?;
        let pinned = reference.with_digest(&manifest_digest);
        tracing::info!(plugin, reference = %pinned, bytes = layer.size, "pulling the component");
        let stream = client
            .pull_blob_stream(&pinned.to_client(), &layer.descriptor)
            .await
            .map_err(|source| classify(reference, "pulling the component of", source))?;
        let wasm = read_bounded(plugin, &format!("the component of {reference}"), stream.stream, &layer).await?;
        let wasm = Arc::new(wasm);
        self.store.put(&layer.digest, wasm.clone());
        tracing::info!(
            plugin,
            reference = %pinned,
            bytes = wasm.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "component pulled and verified"
        );
        Ok(PulledComponent {
            manifest_digest,
            component_digest: layer.digest,
            wasm,
            cached: false,
        })
    }

    /// Fetches a component from a URL; `sha256` (hex or `sha256:hex`), the ConfigMap's pin, names it in the store.
    pub async fn fetch(&self, plugin: &str, reference: &UrlReference, sha256: &str) -> Result<PulledComponent> {
        let digest = format!(
            "sha256:{}",
            sha256.trim().trim_start_matches("sha256:").to_ascii_lowercase()
        );
        if let Some(wasm) = self.store.get(&digest) {
            tracing::info!(plugin, url = %reference.url, bytes = wasm.len(), "component found in the cache; not fetched");
            return Ok(PulledComponent {
                manifest_digest: digest.clone(),
                component_digest: digest,
                wasm,
                cached: true,
            });
        }
        if reference.plain_http && !self.options.allows_plain_http(&reference.authority) {
            return Err(RegistryError::PlainHttp {
                authority: reference.authority.clone(),
            });
        }
        let started = Instant::now();
        tracing::info!(plugin, url = %reference.url, "fetching the component");
        let request = |source| RegistryError::Request {
            url: reference.url.clone(),
            source,
        };
        let response = self.http_client()?.get(&reference.url).send().await.map_err(request)?;
        if !response.status().is_success() {
            return Err(RegistryError::Status {
                url: reference.url.clone(),
                status: response.status().as_u16(),
            });
        }
        let mut body = response.bytes_stream();
        let mut wasm = Vec::new();
        let mut logged = Instant::now();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(request)?;
            if wasm.len() + chunk.len() > MAX_COMPONENT_BYTES {
                return Err(RegistryError::TooLarge {
                    what: reference.url.clone(),
                    limit: MAX_COMPONENT_BYTES as u64,
                });
            }
            wasm.extend_from_slice(&chunk);
            if logged.elapsed() >= PROGRESS_EVERY {
                logged = Instant::now();
                tracing::info!(plugin, url = %reference.url, bytes = wasm.len(), "fetching the component");
            }
        }
        let actual = sha256_digest(&wasm);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                what: reference.url.clone(),
                expected: digest,
                actual,
            });
        }
        let wasm = Arc::new(wasm);
        self.store.put(&digest, wasm.clone());
        tracing::info!(plugin, url = %reference.url, bytes = wasm.len(), elapsed_ms = started.elapsed().as_millis() as u64, "component fetched and verified");
        Ok(PulledComponent {
            manifest_digest: digest.clone(),
            component_digest: digest,
            wasm,
            cached: false,
        })
    }

    /// The cosign signatures stored beside the artifact `manifest_digest` (tag `sha256-<hex>.sig` in the same
    /// repository); none when that tag does not exist.
    pub async fn signatures(
        &self,
        reference: &OciReference,
        manifest_digest: &str,
        auth: &RegistryAuth,
    ) -> Result<Vec<SignatureLayer>> {
        let signatures = reference.with_tag(&signature_tag(manifest_digest));
        let client = self.oci_client(&reference.registry, auth).await?;
        let manifest = match client
            .pull_manifest_raw(&signatures.to_client(), auth, ACCEPTED_MANIFEST_MEDIA_TYPES)
            .await
            .map_err(|source| classify(&signatures, "pulling the signatures", source))
        {
            Ok((manifest, _)) => manifest,
            Err(RegistryError::ManifestNotFound { .. }) => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let manifest: OciImageManifest = serde_json::from_slice(&manifest).map_err(|e| RegistryError::Artifact {
            reference: signatures.to_string(),
            source: ArtifactError::Parse(e.to_string()),
        })?;
        let mut found = Vec::new();
        for layer in &manifest.layers {
            let Some(signature) = layer.annotations.as_ref().and_then(|a| a.get(SIGNATURE_ANNOTATION)) else {
                continue;
            };
            if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE || layer.size > MAX_PAYLOAD_BYTES {
                continue;
            }
            let mut payload = Vec::new();
            client
                .pull_blob(&signatures.to_client(), layer, &mut payload)
                .await
                .map_err(|source| classify(&signatures, "pulling a signature payload of", source))?;
            found.push(SignatureLayer {
                payload,
                signature: signature.clone(),
            });
        }
        Ok(found)
    }

    /// Pushes `wasm` as a wasm artifact to `reference` (its tag); returns the manifest digest.
    pub async fn push(
        &self,
        reference: &OciReference,
        wasm: &[u8],
        artifact: &WasmArtifact,
        auth: &RegistryAuth,
    ) -> Result<String> {
        let client = self.oci_client(&reference.registry, auth).await?;
        let target = reference.to_client();
        for (digest, bytes) in [
            (&artifact.layer_digest, wasm),
            (&artifact.config_digest, &artifact.config[..]),
        ] {
            let exists = client
                .blob_exists(&target, digest)
                .await
                .map_err(|source| classify(reference, "pushing to", source))?;
            if exists {
                tracing::debug!(digest = %digest, "blob already in the registry");
                continue;
            }
            client
                .push_blob(&target, bytes.to_vec(), digest)
                .await
                .map_err(|source| classify(reference, "pushing a blob to", source))?;
        }
        client
            .push_manifest_raw(
                &target,
                artifact.manifest.clone(),
                reqwest::header::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(|source| classify(reference, "pushing the manifest to", source))?;
        Ok(artifact.manifest_digest.clone())
    }

    /// Adds a cosign signature over `payload` to the signatures of `manifest_digest` (tag `sha256-<hex>.sig`),
    /// keeping the ones already there; returns the signature manifest's digest.
    pub async fn push_signature(
        &self,
        reference: &OciReference,
        manifest_digest: &str,
        payload: &[u8],
        signature: &str,
        auth: &RegistryAuth,
    ) -> Result<String> {
        let target = reference.with_tag(&signature_tag(manifest_digest));
        let client = self.oci_client(&reference.registry, auth).await?;
        let mut layers = match client
            .pull_manifest_raw(&target.to_client(), auth, ACCEPTED_MANIFEST_MEDIA_TYPES)
            .await
            .map_err(|source| classify(&target, "pulling the signatures", source))
        {
            Ok((manifest, _)) => serde_json::from_slice::<OciImageManifest>(&manifest)
                .map(|m| m.layers)
                .unwrap_or_default(),
            Err(RegistryError::ManifestNotFound { .. }) => Vec::new(),
            Err(error) => return Err(error),
        };
        let payload_digest = sha256_digest(payload);
        let already = layers.iter().any(|layer| {
            layer.digest == payload_digest
                && layer
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                    .map(String::as_str)
                    == Some(signature)
        });
        if !already {
            layers.push(OciDescriptor {
                media_type: SIMPLE_SIGNING_MEDIA_TYPE.into(),
                digest: payload_digest.clone(),
                size: payload.len() as i64,
                annotations: Some(BTreeMap::from([(
                    SIGNATURE_ANNOTATION.to_owned(),
                    signature.to_owned(),
                )])),
                ..OciDescriptor::default()
            });
        }
        // The image config cosign writes for its signature manifests.
        let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "", "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"}], "os": "",
            "rootfs": {"type": "layers", "diff_ids": diff_ids}, "config": {},
        }))
        .expect("JSON serialises");
        let config_digest = sha256_digest(&config);
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(artifact::MANIFEST_MEDIA_TYPE.into()),
            config: OciDescriptor {
                media_type: oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE.into(),
                digest: config_digest.clone(),
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers,
            subject: None,
            artifact_type: None,
            annotations: None,
        };
        let manifest = serde_json::to_vec(&manifest).expect("a manifest serialises");
        let client_target = target.to_client();
        for (digest, bytes) in [(&payload_digest, payload.to_vec()), (&config_digest, config)] {
            client
                .push_blob(&client_target, bytes, digest)
                .await
                .map_err(|source| classify(&target, "pushing a signature blob to", source))?;
        }
        let digest = sha256_digest(&manifest);
        client
            .push_manifest_raw(
                &client_target,
                manifest,
                reqwest::header::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(|source| classify(&target, "pushing the signature manifest to", source))?;
        Ok(digest)
    }

    /// An oci-client for `registry`, speaking HTTPS, or plain HTTP when the registry is allowed it and does not
    /// speak TLS.
    async fn oci_client(&self, registry: &str, auth: &RegistryAuth) -> Result<oci_client::Client> {
        let scheme = self.scheme(registry).await?;
        let config = ClientConfig {
            protocol: match scheme {
                Scheme::Https => ClientProtocol::Https,
                Scheme::Http => ClientProtocol::Http,
            },
            extra_root_certificates: self
                .extra_roots
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            user_agent: concat!("wasm-reconciler/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config).map_err(|e| RegistryError::Client(crate::error_chain(&e)))?;
        // Every request this client makes to `registry` carries `auth`, not only the first one.
        client.store_auth_if_needed(registry, auth).await;
        Ok(client)
    }

    /// HTTPS for every registry, except that one allowed plain HTTP (loopback or listed) which does not answer
    /// over TLS but answers `/v2/` as a registry over HTTP gets HTTP. Remembered once known.
    async fn scheme(&self, registry: &str) -> Result<Scheme> {
        if !self.options.allows_plain_http(registry) {
            return Ok(Scheme::Https);
        }
        if let Some(scheme) = self
            .schemes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(registry)
        {
            return Ok(*scheme);
        }
        let client = self.http_client()?;
        let https_error = match client.get(format!("https://{registry}/v2/")).send().await {
            Ok(_) => {
                self.remember_scheme(registry, Scheme::Https);
                return Ok(Scheme::Https);
            }
            Err(error) => error,
        };
        match client.get(format!("http://{registry}/v2/")).send().await {
            Ok(response) if response.headers().contains_key("docker-distribution-api-version") => {
                tracing::debug!(registry, "the registry speaks plain HTTP");
                self.remember_scheme(registry, Scheme::Http);
                Ok(Scheme::Http)
            }
            Ok(_) | Err(_) => Err(RegistryError::Unreachable {
                authority: registry.to_owned(),
                message: crate::error_chain(&https_error),
            }),
        }
    }

    fn remember_scheme(&self, registry: &str, scheme: Scheme) {
        self.schemes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(registry.to_owned(), scheme);
    }

    fn http_client(&self) -> Result<reqwest::Client> {
        let options = self.options.clone();
        // A redirect may not lead from HTTPS to plain HTTP on a host that is not allowed it.
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            let url = attempt.url();
            let authority = match (url.host_str(), url.port()) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                (Some(host), None) => host.to_owned(),
                (None, _) => String::new(),
            };
            if url.scheme() == "http" && !options.allows_plain_http(&authority) {
                let refused = RegistryError::PlainHttp { authority };
                attempt.error(refused)
            } else if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.stop()
            } else {
                attempt.follow()
            }
        });
        let mut builder = reqwest::Client::builder()
            .redirect(redirects)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("wasm-reconciler/", env!("CARGO_PKG_VERSION")));
        for pem in &self.extra_roots {
            let certificate =
                reqwest::Certificate::from_pem(pem).map_err(|e| RegistryError::Client(crate::error_chain(&e)))?;
            builder = builder.add_root_certificate(certificate);
        }
        builder
            .build()
            .map_err(|e| RegistryError::Client(crate::error_chain(&e)))
    }
}

/// Reads a blob stream, refusing more bytes than the layer declares, and checks size and digest.
async fn read_bounded(
    plugin: &str,
    what: &str,
    mut stream: futures::stream::BoxStream<'static, std::result::Result<bytes::Bytes, std::io::Error>>,
    layer: &ComponentLayer,
) -> Result<Vec<u8>> {
    let mut hasher = Sha256::new();
    let mut wasm = Vec::with_capacity(layer.size as usize);
    let mut logged = Instant::now();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| RegistryError::Unreachable {
            authority: what.to_owned(),
            message: format!("the download broke off: {e}"),
        })?;
        if (wasm.len() + chunk.len()) as u64 > layer.size {
            return Err(RegistryError::TooLarge {
                what: what.to_owned(),
                limit: layer.size,
            });
        }
        hasher.update(&chunk);
        wasm.extend_from_slice(&chunk);
        if logged.elapsed() >= PROGRESS_EVERY {
            logged = Instant::now();
            tracing::info!(plugin, bytes = wasm.len(), of = layer.size, "pulling the component");
        }
    }
    let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
    if actual != layer.digest || wasm.len() as u64 != layer.size {
        return Err(RegistryError::DigestMismatch {
            what: what.to_owned(),
            expected: layer.digest.clone(),
            actual,
        });
    }
    Ok(wasm)
}

/// Sorts oci-client's errors into what a user can act on.
fn classify(reference: &OciReference, operation: &'static str, source: OciDistributionError) -> RegistryError {
    match &source {
        OciDistributionError::ImageManifestNotFoundError(_) => RegistryError::ManifestNotFound {
            reference: reference.to_string(),
        },
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound
                )
            }) =>
        {
            RegistryError::ManifestNotFound {
                reference: reference.to_string(),
            }
        }
        OciDistributionError::RegistryError { envelope, .. }
            if envelope
                .errors
                .iter()
                .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) =>
        {
            RegistryError::Unauthorized {
                reference: reference.to_string(),
                message: envelope.to_string(),
            }
        }
        OciDistributionError::UnauthorizedError { url } => RegistryError::Unauthorized {
            reference: reference.to_string(),
            message: format!("401 from {url}"),
        },
        OciDistributionError::AuthenticationFailure(message) => RegistryError::Unauthorized {
            reference: reference.to_string(),
            message: message.clone(),
        },
        OciDistributionError::ServerError { code: 404, .. } => RegistryError::ManifestNotFound {
            reference: reference.to_string(),
        },
        OciDistributionError::DigestError(error) => RegistryError::DigestMismatch {
            what: reference.to_string(),
            expected: reference.digest.clone().unwrap_or_default(),
            actual: error.to_string(),
        },
        OciDistributionError::RequestError(error)
            if error
                .status()
                .is_some_and(|status| status.as_u16() == 401 || status.as_u16() == 403) =>
        {
            RegistryError::Unauthorized {
                reference: reference.to_string(),
                message: crate::error_chain(error),
            }
        }
        OciDistributionError::RequestError(error) if error.is_connect() || error.is_timeout() => {
            RegistryError::Unreachable {
                authority: reference.registry.clone(),
                message: crate::error_chain(error),
            }
        }
        _ => RegistryError::Oci {
            operation,
            reference: reference.to_string(),
            source,
        },
    }
}

/// Each `-----BEGIN CERTIFICATE-----` block of a bundle, as its own PEM.
fn split_pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(pem);
    let mut certificates = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.starts_with("-----BEGIN CERTIFICATE-----") {
            current.clear();
        }
        current.push_str(line);
        current.push('\n');
        if line.starts_with("-----END CERTIFICATE-----") {
            certificates.push(std::mem::take(&mut current).into_bytes());
        }
    }
    certificates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_for_loopback_and_listed_hosts() {
        let options = RegistryOptions {
            insecure_registries: vec!["registry.internal:5000".into(), "mirror.lan".into()],
            ca_bundle: None,
        };
        assert!(options.allows_plain_http("127.0.0.1:5000"));
        assert!(options.allows_plain_http("localhost"));
        assert!(options.allows_plain_http("registry.internal:5000"));
        assert!(!options.allows_plain_http("registry.internal:5001"));
        assert!(
            options.allows_plain_http("mirror.lan:8080"),
            "a listed host allows any port"
        );
        assert!(!options.allows_plain_http("ghcr.io"));
        assert!(!RegistryOptions::default().allows_plain_http("10.0.0.5:5000"));
    }

    #[tokio::test]
    async fn a_plain_http_url_to_a_remote_host_is_refused_without_a_request() {
        let client = RegistryClient::new(RegistryOptions::default(), None).unwrap();
        let reference = match super::super::reference::PluginReference::parse("http://example.com/p.wasm").unwrap() {
            super::super::reference::PluginReference::Url(url) => url,
            other => panic!("{other:?}"),
        };
        let error = client.fetch("p", &reference, &"0".repeat(64)).await.unwrap_err();
        assert!(matches!(error, RegistryError::PlainHttp { .. }), "{error}");
        assert!(!error.is_retryable());
    }

    #[test]
    fn bundles_split_into_certificates() {
        let bundle = "junk\n-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        let certificates = split_pem_certificates(bundle.as_bytes());
        assert_eq!(certificates.len(), 2);
        assert!(String::from_utf8_lossy(&certificates[1]).contains("BBB"));
    }

    #[test]
    fn a_missing_ca_bundle_is_named() {
        let options = RegistryOptions {
            ca_bundle: Some(PathBuf::from("/nonexistent/ca.pem")),
            ..RegistryOptions::default()
        };
        let error = RegistryClient::new(options, None).unwrap_err();
        assert_eq!(error.to_string(), "reading the CA bundle /nonexistent/ca.pem");
    }
}
