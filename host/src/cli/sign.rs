//! `wasm-reconciler plugin sign`, `verify` and `generate-key`: cosign-compatible keyed signatures (ECDSA P-256) on a
//! registry artifact (stored as cosign stores them, beside the artifact) or detached over a component file.

use std::path::{Path, PathBuf};

use clap::Args;
use oci_client::secrets::RegistryAuth;

use super::push::CredentialArgs;
use super::run::RegistryArgs;
use crate::delivery::signature::{DETACHED_SIGNATURE_KEY, SimpleSigning};
use crate::delivery::{OciReference, PluginSigner, RegistryClient, SignaturePolicy, TrustedKey};

/// Why signing or verifying failed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The signature does not verify.
    #[error("{0}")]
    NotVerified(String),
    /// A file could not be written.
    #[error("writing {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Refusing to overwrite a key.
    #[error("{0} exists; refusing to overwrite a key")]
    Exists(PathBuf),
}

/// Arguments of `plugin sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// What to sign: `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST` (the signature is pushed beside the
    /// artifact, as cosign does), or a component file (a detached signature is written).
    pub target: String,
    /// The private key (PEM: PKCS#8, SEC1, or cosign's encrypted `cosign.key` with the password in
    /// `COSIGN_PASSWORD`).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// For a file: where to write the signature (default `FILE.sig`; `-` for stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Arguments of `plugin verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// What to verify: an `oci://` reference, or a component file.
    pub target: String,
    /// A trusted public key (PEM); repeat for several.
    #[arg(long, value_name = "FILE", required = true)]
    pub key: Vec<PathBuf>,
    /// For a file: its detached signature (default `FILE.sig`).
    #[arg(long, value_name = "FILE")]
    pub signature: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub credentials: CredentialArgs,
}

/// Arguments of `plugin generate-key`.
#[derive(Debug, Args)]
pub struct GenerateKeyArgs {
    /// Where to write the private key (unencrypted PKCS#8 PEM, mode 0600).
    #[arg(long, value_name = "FILE", default_value = "plugin-signing.key")]
    pub key_out: PathBuf,
    /// Where to write the public key (PEM), for `run --trusted-key`.
    #[arg(long, value_name = "FILE", default_value = "plugin-signing.pub")]
    pub pub_out: PathBuf,
}

/// Pushes a cosign signature of `digest` (the manifest of `reference`) made with `signer`.
pub(super) async fn sign_artifact(
    client: &RegistryClient,
    signer: &PluginSigner,
    reference: &OciReference,
    digest: &str,
    auth: &RegistryAuth,
) -> Result<(), Box<dyn std::error::Error>> {
    let payload = SimpleSigning::new(&reference.repository_name(), digest).to_bytes();
    let signature = signer.sign(&payload);
    client
        .push_signature(reference, digest, &payload, &signature, auth)
        .await?;
    tracing::info!(reference = %reference.with_digest(digest), "signature pushed");
    Ok(())
}

pub(super) async fn sign(args: &SignArgs) -> Result<(), Box<dyn std::error::Error>> {
    let signer = PluginSigner::load(&args.key)?;
    if args.target.starts_with("oci://") {
        let reference = OciReference::parse(&args.target)?;
        let client = RegistryClient::new(args.registry.options(), None)?;
        let auth = args.credentials.auth(&reference.registry)?;
        let digest = client.resolve(&reference, &auth).await?;
        sign_artifact(&client, &signer, &reference, &digest, &auth).await?;
        println!("{}", reference.with_digest(&digest));
        return Ok(());
    }
    let file = PathBuf::from(&args.target);
    let wasm = super::read_file(&file)?;
    let signature = signer.sign(&wasm);
    match args.output.as_deref() {
        Some(path) if path == Path::new("-") => println!("{signature}"),
        output => {
            let path = output.map_or_else(|| detached_path(&file), Path::to_path_buf);
            std::fs::write(&path, format!("{signature}\n")).map_err(|source| SignError::Write {
                path: path.clone(),
                source,
            })?;
            eprintln!(
                "wrote {} (put it beside plugin.wasm as {DETACHED_SIGNATURE_KEY}, or pack it with --signature)",
                path.display()
            );
        }
    }
    Ok(())
}

pub(super) async fn verify(args: &VerifyArgs) -> Result<(), Box<dyn std::error::Error>> {
    let keys = args
        .key
        .iter()
        .map(|path| TrustedKey::load(path))
        .collect::<Result<Vec<_>, _>>()?;
    let policy = SignaturePolicy::require(keys);
    if args.target.starts_with("oci://") {
        let reference = OciReference::parse(&args.target)?;
        let client = RegistryClient::new(args.registry.options(), None)?;
        let auth = args.credentials.auth(&reference.registry)?;
        let digest = client.resolve(&reference, &auth).await?;
        let pinned = reference.with_digest(&digest);
        let signatures = client.signatures(&pinned, &digest, &auth).await?;
        let key = policy
            .check_artifact(
                &pinned.to_string(),
                &digest,
                signatures.iter().map(|s| (s.payload.as_slice(), s.signature.as_str())),
            )
            .map_err(|e| SignError::NotVerified(e.to_string()))?
            .expect("the policy requires signatures");
        println!("{pinned}: signed by {} ({})", key.name, key.fingerprint);
        return Ok(());
    }
    let file = PathBuf::from(&args.target);
    let wasm = super::read_file(&file)?;
    let signature_path = args.signature.clone().unwrap_or_else(|| detached_path(&file));
    let signature = std::fs::read_to_string(&signature_path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", signature_path.display())))?;
    let key = policy
        .check_detached(&wasm, Some(signature.trim()))
        .map_err(|e| SignError::NotVerified(e.to_string()))?
        .expect("the policy requires signatures");
    println!("{}: signed by {} ({})", file.display(), key.name, key.fingerprint);
    Ok(())
}

pub(super) fn generate_key(args: &GenerateKeyArgs) -> Result<(), Box<dyn std::error::Error>> {
    for path in [&args.key_out, &args.pub_out] {
        if path.exists() {
            return Err(SignError::Exists(path.clone()).into());
        }
    }
    let signer = PluginSigner::generate();
    write_private(&args.key_out, signer.to_pkcs8_pem()?.as_bytes())?;
    let public = signer.trusted_key(&args.pub_out.display().to_string());
    std::fs::write(&args.pub_out, public.to_pem()).map_err(|source| SignError::Write {
        path: args.pub_out.clone(),
        source,
    })?;
    println!(
        "private key: {} (keep it secret)\npublic key:  {} (fingerprint {}; give it to `run --trusted-key`)",
        args.key_out.display(),
        args.pub_out.display(),
        public.fingerprint
    );
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), SignError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|source| SignError::Write {
            path: path.to_owned(),
            source,
        })
}

/// `plugin.wasm` → `plugin.wasm.sig`.
fn detached_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}
