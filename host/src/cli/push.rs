//! `wasm-reconciler plugin push`: a validated component pushed to an OCI registry as a wasm artifact (CNCF layout:
//! one `application/wasm` layer, an `application/vnd.wasm.config.v0+json` config); prints the digest reference.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use oci_client::secrets::RegistryAuth;

use super::run::RegistryArgs;
use crate::delivery::artifact::{ComponentShape, WasmArtifact, rfc3339};
use crate::delivery::credentials::RegistryCredentials;
use crate::delivery::{OciReference, PluginSigner, RegistryClient};

/// Environment variable with the registry password for `--username`.
pub const PASSWORD_ENV: &str = "WASM_RECONCILER_REGISTRY_PASSWORD";

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The target is not an `oci://` reference with a tag.
    #[error("the target must be oci://REGISTRY/REPOSITORY:TAG (a tag, not a digest: the digest is what a push makes)")]
    NeedsTag,
    /// The credentials could not be read.
    #[error("reading registry credentials from {path}")]
    AuthFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `--username` without a password.
    #[error("--username needs the password in {PASSWORD_ENV}")]
    NoPassword,
}

/// Registry credentials for the commands that push or read: a Docker `config.json`, or a user name with the
/// password in the environment.
#[derive(Debug, Clone, Args)]
pub struct CredentialArgs {
    /// Docker config file with credentials (`{"auths": {...}}`, as `docker login` or a dockerconfigjson Secret
    /// holds them).
    #[arg(long, value_name = "FILE", env = "WASM_RECONCILER_REGISTRY_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    /// User name for the registry; the password comes from `WASM_RECONCILER_REGISTRY_PASSWORD`.
    #[arg(long, value_name = "USER", env = "WASM_RECONCILER_REGISTRY_USERNAME")]
    pub username: Option<String>,
}

impl CredentialArgs {
    /// The credentials for `registry`.
    pub fn auth(&self, registry: &str) -> Result<RegistryAuth, PushError> {
        if let Some(user) = &self.username {
            let password = std::env::var(PASSWORD_ENV).map_err(|_| PushError::NoPassword)?;
            return Ok(RegistryAuth::Basic(user.clone(), password));
        }
        match &self.auth_file {
            None => Ok(RegistryAuth::Anonymous),
            Some(path) => {
                let failed = |source: Box<dyn std::error::Error + Send + Sync>| PushError::AuthFile {
                    path: path.clone(),
                    source,
                };
                let json = std::fs::read(path).map_err(|e| failed(Box::new(e)))?;
                let credentials = RegistryCredentials::parse(&json).map_err(|e| failed(Box::new(e)))?;
                Ok(credentials.for_registry(registry))
            }
        }
    }
}

/// Arguments of `plugin push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The component (`.wasm`).
    pub file: PathBuf,
    /// Where to push: `oci://REGISTRY/REPOSITORY:TAG`.
    pub target: String,
    /// Also sign the pushed artifact with this private key (as `plugin sign` does).
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// Write the digest reference to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Runs `plugin push`; `validate` checks the component with the host's loader first.
pub(super) async fn run(
    args: &PushArgs,
    validate: impl FnOnce(&[u8]) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let reference = OciReference::parse(&args.target)?;
    if reference.tag.is_none() || reference.digest.is_some() {
        return Err(PushError::NeedsTag.into());
    }
    let wasm = super::read_file(&args.file)?;
    validate(&wasm)?;
    let signer = args.sign_key.as_deref().map(PluginSigner::load).transpose()?;
    let shape = ComponentShape::of(&wasm)?;
    let created = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    let annotations = BTreeMap::from([(
        "org.opencontainers.image.title".to_owned(),
        args.file
            .file_name()
            .map_or_else(|| "plugin.wasm".into(), |n| n.to_string_lossy().into_owned()),
    )]);
    let artifact = WasmArtifact::new(&wasm, shape, &rfc3339(created), annotations)?;
    let client = RegistryClient::new(args.registry.options(), None)?;
    let auth = args.credentials.auth(&reference.registry)?;
    let started = std::time::Instant::now();
    let digest = client.push(&reference, &wasm, &artifact, &auth).await?;
    let pushed = reference.with_digest(&digest);
    tracing::info!(reference = %pushed, bytes = wasm.len(), elapsed_ms = started.elapsed().as_millis() as u64, "pushed");
    if let Some(signer) = signer {
        super::sign::sign_artifact(&client, &signer, &pushed, &digest, &auth).await?;
    }
    match &args.output {
        Some(path) => std::fs::write(path, format!("{pushed}\n"))
            .map_err(|e| std::io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))?,
        None => println!("{pushed}"),
    }
    Ok(())
}
