//! Cosign-compatible keyed signatures (ECDSA P-256 over SHA-256): the simple-signing payload cosign signs for an
//! OCI artifact, detached signatures over a component's bytes (what `cosign sign-blob` makes), trusted public keys,
//! and private keys in PKCS#8, SEC1 or cosign's own encrypted format. No I/O besides reading key files.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Media type of the layer holding a cosign signature payload.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// Layer annotation holding the base64 signature over the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `type` cosign writes into its payloads.
pub const COSIGN_SIGNATURE_TYPE: &str = "cosign container image signature";
/// ConfigMap key (and directory file) of a detached signature over the component.
pub const DETACHED_SIGNATURE_KEY: &str = "plugin.wasm.sig";
/// Environment variable holding the password of an encrypted cosign key (cosign's own name for it).
pub const PASSWORD_ENV: &str = "COSIGN_PASSWORD";

/// Why a key or signature is refused.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// A key file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A public key is not an ECDSA P-256 key in PEM.
    #[error("{name}: not an ECDSA P-256 public key in PEM (`-----BEGIN PUBLIC KEY-----`): {message}")]
    PublicKey {
        /// Where the key came from.
        name: String,
        /// The parser's complaint.
        message: String,
    },
    /// A private key is not a P-256 key in a known format.
    #[error(
        "{name}: not an ECDSA P-256 private key in PEM (PKCS#8 `PRIVATE KEY`, SEC1 `EC PRIVATE KEY`, or cosign's \
         `ENCRYPTED SIGSTORE PRIVATE KEY`): {message}"
    )]
    PrivateKey {
        /// Where the key came from.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An encrypted cosign key did not decrypt.
    #[error("{name}: the key did not decrypt with the password in {PASSWORD_ENV} (wrong password?)")]
    Decrypt {
        /// Where the key came from.
        name: String,
    },
    /// A signature is not base64.
    #[error("the signature is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// A payload does not parse or is not a cosign signature payload.
    #[error("the signature payload is not a cosign simple-signing payload: {0}")]
    Payload(String),
    /// Encoding a key failed.
    #[error("encoding the key: {0}")]
    Encode(String),
}

/// Local result alias.
pub type Result<T, E = SignatureError> = std::result::Result<T, E>;

/// The tag cosign stores an artifact's signatures under: `sha256-<hex>.sig`.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replace(':', "-"))
}

/// Cosign's simple-signing payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleSigning {
    /// What the signature vouches for.
    pub critical: Critical,
    /// Free annotations (`null` when none).
    pub optional: Option<BTreeMap<String, serde_json::Value>>,
}

/// The part of a payload a verifier must check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Critical {
    /// The repository that was signed.
    pub identity: Identity,
    /// The manifest that was signed.
    pub image: Image,
    /// Always [`COSIGN_SIGNATURE_TYPE`].
    #[serde(rename = "type")]
    pub type_: String,
}

/// `docker-reference`: `registry/repository`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `registry/repository`.
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

/// `docker-manifest-digest`: the signed manifest's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `sha256:…`.
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

impl SimpleSigning {
    /// The payload cosign signs for `repository` (`registry/repository`) at `manifest_digest`.
    pub fn new(repository: &str, manifest_digest: &str) -> Self {
        Self {
            critical: Critical {
                identity: Identity {
                    docker_reference: repository.to_owned(),
                },
                image: Image {
                    docker_manifest_digest: manifest_digest.to_owned(),
                },
                type_: COSIGN_SIGNATURE_TYPE.to_owned(),
            },
            optional: None,
        }
    }

    /// The payload as signed bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a payload serialises")
    }

    /// Parses a payload and checks its type.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let payload: Self = serde_json::from_slice(bytes).map_err(|e| SignatureError::Payload(e.to_string()))?;
        if payload.critical.type_ != COSIGN_SIGNATURE_TYPE {
            return Err(SignatureError::Payload(format!(
                "its type is {:?}, not {COSIGN_SIGNATURE_TYPE:?}",
                payload.critical.type_
            )));
        }
        Ok(payload)
    }
}

/// A public key signatures are checked against.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// Where it came from (a file name), for logs and messages.
    pub name: String,
    /// sha256 of the key's SubjectPublicKeyInfo, the first 16 hex digits.
    pub fingerprint: String,
    key: VerifyingKey,
}

impl TrustedKey {
    /// Parses a PEM `PUBLIC KEY` (what `cosign generate-key-pair` writes as `cosign.pub`).
    pub fn from_pem(name: &str, pem: &str) -> Result<Self> {
        let key = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|e| SignatureError::PublicKey {
            name: name.to_owned(),
            message: e.to_string(),
        })?;
        Ok(Self::new(name, key))
    }

    /// Reads a PEM public key file.
    pub fn load(path: &Path) -> Result<Self> {
        let pem = std::fs::read_to_string(path).map_err(|source| SignatureError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_pem(&path.display().to_string(), &pem)
    }

    fn new(name: &str, key: VerifyingKey) -> Self {
        let der = key
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default();
        Self {
            name: name.to_owned(),
            fingerprint: hex::encode(&Sha256::digest(&der)[..8]),
            key,
        }
    }

    /// Whether `signature` (base64 of DER or of the 64-byte form) is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        self.verifies_prehash(&Sha256::digest(message), signature)
    }

    /// Like [`verifies`](Self::verifies), for a message known by its SHA-256 only.
    pub fn verifies_prehash(&self, sha256: &[u8], signature: &str) -> bool {
        let Ok(bytes) = BASE64.decode(signature.trim()) else {
            return false;
        };
        let Ok(signature) = Signature::from_der(&bytes).or_else(|_| Signature::from_slice(&bytes)) else {
            return false;
        };
        self.key.verify_prehash(sha256, &signature).is_ok()
    }

    /// The key in PEM.
    pub fn to_pem(&self) -> String {
        self.key
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .unwrap_or_default()
    }
}

/// The public keys a host trusts; when any are configured, every plugin must be signed by one of them.
#[derive(Debug, Clone, Default)]
pub struct SignaturePolicy {
    keys: Vec<TrustedKey>,
}

impl SignaturePolicy {
    /// No keys: signatures are not required.
    pub fn none() -> Self {
        Self::default()
    }

    /// A policy requiring a signature by one of `keys`.
    pub fn require(keys: Vec<TrustedKey>) -> Self {
        Self { keys }
    }

    /// Reads the trusted keys from PEM files.
    pub fn load(paths: &[impl AsRef<Path>]) -> Result<Self> {
        let keys = paths
            .iter()
            .map(|p| TrustedKey::load(p.as_ref()))
            .collect::<Result<_>>()?;
        Ok(Self { keys })
    }

    /// Whether plugins must be signed.
    pub fn is_required(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// The trusted key that made `signature` over `message`, if any.
    pub fn verifying_key(&self, message: &[u8], signature: &str) -> Option<&TrustedKey> {
        let digest = Sha256::digest(message);
        self.keys.iter().find(|key| key.verifies_prehash(&digest, signature))
    }

    /// Names of the trusted keys, for messages.
    pub fn describe(&self) -> String {
        self.keys
            .iter()
            .map(|k| format!("{} ({})", k.name, k.fingerprint))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why a plugin is refused under a signature policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// An inline (or URL) component without `plugin.wasm.sig`.
    #[error(
        "signatures are required, and the package has no `{DETACHED_SIGNATURE_KEY}` (sign the component with \
         `wasm-reconciler plugin sign`)"
    )]
    MissingDetached,
    /// A detached signature no trusted key made.
    #[error("`{DETACHED_SIGNATURE_KEY}` is not a signature over this component by a trusted key ({keys})")]
    UntrustedDetached {
        /// The trusted keys.
        keys: String,
    },
    /// An artifact with no signatures in its registry.
    #[error("signatures are required, and {reference} has none (no `{tag}` in its repository)")]
    Unsigned {
        /// The artifact.
        reference: String,
        /// The signature tag looked for.
        tag: String,
    },
    /// Signatures exist, but none by a trusted key over this artifact.
    #[error("none of the {count} signature(s) of {reference} is by a trusted key ({keys}) over this manifest")]
    Untrusted {
        /// The artifact.
        reference: String,
        /// How many signatures were found.
        count: usize,
        /// The trusted keys.
        keys: String,
    },
}

impl SignaturePolicy {
    /// Checks a detached signature over a component; `Ok(None)` when signatures are not required.
    pub fn check_detached(&self, wasm: &[u8], signature: Option<&str>) -> Result<Option<&TrustedKey>, PolicyError> {
        if !self.is_required() {
            return Ok(None);
        }
        let signature = signature.ok_or(PolicyError::MissingDetached)?;
        self.verifying_key(wasm, signature)
            .map(Some)
            .ok_or_else(|| PolicyError::UntrustedDetached { keys: self.describe() })
    }

    /// Checks the cosign signatures of the artifact `manifest_digest` (`(payload, signature)` pairs); the key that
    /// signed it, or `Ok(None)` when signatures are not required.
    pub fn check_artifact<'a>(
        &self,
        reference: &str,
        manifest_digest: &str,
        signatures: impl IntoIterator<Item = (&'a [u8], &'a str)>,
    ) -> Result<Option<&TrustedKey>, PolicyError> {
        if !self.is_required() {
            return Ok(None);
        }
        let mut count = 0;
        for (payload, signature) in signatures {
            count += 1;
            let Some(key) = self.verifying_key(payload, signature) else {
                continue;
            };
            match SimpleSigning::parse(payload) {
                Ok(signed) if signed.critical.image.docker_manifest_digest == manifest_digest => return Ok(Some(key)),
                Ok(signed) => tracing::warn!(
                    reference,
                    signed = %signed.critical.image.docker_manifest_digest,
                    "a trusted signature is for another manifest; ignoring it"
                ),
                Err(error) => tracing::warn!(reference, error = %error, "a trusted signature has an unusable payload"),
            }
        }
        if count == 0 {
            return Err(PolicyError::Unsigned {
                reference: reference.to_owned(),
                tag: signature_tag(manifest_digest),
            });
        }
        Err(PolicyError::Untrusted {
            reference: reference.to_owned(),
            count,
            keys: self.describe(),
        })
    }
}

/// A private key that signs plugins.
pub struct PluginSigner {
    key: SigningKey,
}

impl std::fmt::Debug for PluginSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSigner").finish_non_exhaustive()
    }
}

impl PluginSigner {
    /// A fresh random key.
    pub fn generate() -> Self {
        use p256::elliptic_curve::Generate as _;
        Self {
            key: SigningKey::generate(),
        }
    }

    /// Reads a PEM private key: PKCS#8, SEC1, or cosign's encrypted format (password from `password`).
    pub fn from_pem(name: &str, pem: &str, password: Option<&str>) -> Result<Self> {
        let invalid = |message: String| SignatureError::PrivateKey {
            name: name.to_owned(),
            message,
        };
        let pem = pem.trim();
        let label = pem
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("-----BEGIN "))
            .and_then(|line| line.strip_suffix("-----"))
            .ok_or_else(|| invalid("no PEM header".into()))?;
        let key = match label {
            "PRIVATE KEY" => SigningKey::from_pkcs8_pem(pem).map_err(|e| invalid(e.to_string()))?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_pem(pem)
                .map(SigningKey::from)
                .map_err(|e| invalid(e.to_string()))?,
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
                let json = BASE64.decode(body.trim()).map_err(|e| invalid(e.to_string()))?;
                let der = decrypt_cosign_key(name, &json, password.unwrap_or_default())?;
                SigningKey::from_pkcs8_der(&der).map_err(|e| invalid(e.to_string()))?
            }
            other => return Err(invalid(format!("unknown PEM type {other:?}"))),
        };
        Ok(Self { key })
    }

    /// Reads a PEM private key file; an encrypted cosign key takes its password from `COSIGN_PASSWORD`.
    pub fn load(path: &Path) -> Result<Self> {
        let pem = std::fs::read_to_string(path).map_err(|source| SignatureError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let password = std::env::var(PASSWORD_ENV).ok();
        Self::from_pem(&path.display().to_string(), &pem, password.as_deref())
    }

    /// Signs `message`: base64 of the DER signature, as cosign writes it.
    pub fn sign(&self, message: &[u8]) -> String {
        let signature: Signature = self.key.sign(message);
        BASE64.encode(signature.to_der().as_bytes())
    }

    /// The public half.
    pub fn trusted_key(&self, name: &str) -> TrustedKey {
        TrustedKey::new(name, *self.key.verifying_key())
    }

    /// The private key as unencrypted PKCS#8 PEM.
    pub fn to_pkcs8_pem(&self) -> Result<String> {
        self.key
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .map(|pem| pem.to_string())
            .map_err(|e| SignatureError::Encode(e.to_string()))
    }
}

/// cosign's encrypted private key: JSON with scrypt parameters, a NaCl secretbox nonce and the ciphertext of the
/// PKCS#8 DER key (go-securesystemslib's `encrypted` package).
#[derive(Debug, Serialize, Deserialize)]
struct EncryptedKey {
    kdf: Kdf,
    cipher: Cipher,
    #[serde(with = "base64_bytes")]
    ciphertext: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    #[serde(with = "base64_bytes")]
    salt: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Cipher {
    name: String,
    #[serde(with = "base64_bytes")]
    nonce: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        BASE64.decode(text).map_err(serde::de::Error::custom)
    }
}

fn decrypt_cosign_key(name: &str, json: &[u8], password: &str) -> Result<Vec<u8>> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    let invalid = |message: String| SignatureError::PrivateKey {
        name: name.to_owned(),
        message,
    };
    let encrypted: EncryptedKey = serde_json::from_slice(json).map_err(|e| invalid(e.to_string()))?;
    if encrypted.kdf.name != "scrypt" || encrypted.cipher.name != "nacl/secretbox" {
        return Err(invalid(format!(
            "unsupported encryption {} + {}",
            encrypted.kdf.name, encrypted.cipher.name
        )));
    }
    let KdfParams { n, r, p } = encrypted.kdf.params;
    if !n.is_power_of_two() || n < 2 {
        return Err(invalid(format!("scrypt N = {n} is not a power of two")));
    }
    let params = scrypt::Params::new(n.trailing_zeros() as u8, r, p).map_err(|e| invalid(e.to_string()))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &encrypted.kdf.salt, &params, &mut key).map_err(|e| invalid(e.to_string()))?;
    if encrypted.cipher.nonce.len() != 24 {
        return Err(invalid("the nonce is not 24 bytes".into()));
    }
    let cipher = crypto_secretbox::XSalsa20Poly1305::new(&key.into());
    let nonce = crypto_secretbox::Nonce::from_slice(&encrypted.cipher.nonce);
    cipher
        .decrypt(nonce, encrypted.ciphertext.as_slice())
        .map_err(|_| SignatureError::Decrypt { name: name.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_with_its_key_and_message() {
        let signer = PluginSigner::generate();
        let other = PluginSigner::generate();
        let signature = signer.sign(b"component bytes");
        let policy = SignaturePolicy::require(vec![other.trusted_key("other"), signer.trusted_key("mine")]);
        assert_eq!(
            policy
                .verifying_key(b"component bytes", &signature)
                .map(|k| k.name.as_str()),
            Some("mine")
        );
        assert!(policy.verifying_key(b"other bytes", &signature).is_none());
        assert!(policy.verifying_key(b"component bytes", "not base64!").is_none());
        let only_other = SignaturePolicy::require(vec![other.trusted_key("other")]);
        assert!(only_other.verifying_key(b"component bytes", &signature).is_none());
        assert!(!SignaturePolicy::none().is_required());
    }

    #[test]
    fn keys_round_trip_through_pem() {
        let signer = PluginSigner::generate();
        let pem = signer.to_pkcs8_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let again = PluginSigner::from_pem("k", &pem, None).unwrap();
        let public = TrustedKey::from_pem("k.pub", &signer.trusted_key("k").to_pem()).unwrap();
        assert!(public.verifies(b"m", &again.sign(b"m")));
        let sec1 = p256::SecretKey::from(signer.key.as_nonzero_scalar())
            .to_sec1_pem(p256::pkcs8::LineEnding::LF)
            .unwrap();
        let from_sec1 = PluginSigner::from_pem("k", &sec1, None).unwrap();
        assert!(public.verifies(b"m", &from_sec1.sign(b"m")));
        let error =
            TrustedKey::from_pem("bad.pub", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----").unwrap_err();
        assert!(
            error.to_string().starts_with("bad.pub: not an ECDSA P-256 public key"),
            "{error}"
        );
    }

    /// Encrypts a PKCS#8 key as go-securesystemslib does for cosign (small scrypt cost, for speed).
    fn cosign_encrypted(signer: &PluginSigner, password: &str) -> String {
        use crypto_secretbox::aead::{Aead as _, KeyInit as _};
        let der = signer.key.to_pkcs8_der().unwrap();
        let salt = [7u8; 32];
        let nonce = [9u8; 24];
        let mut key = [0u8; 32];
        scrypt::scrypt(
            password.as_bytes(),
            &salt,
            &scrypt::Params::new(10, 8, 1).unwrap(),
            &mut key,
        )
        .unwrap();
        let ciphertext = crypto_secretbox::XSalsa20Poly1305::new(&key.into())
            .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), der.as_bytes())
            .unwrap();
        let json = serde_json::to_vec(&EncryptedKey {
            kdf: Kdf {
                name: "scrypt".into(),
                params: KdfParams { n: 1024, r: 8, p: 1 },
                salt: salt.to_vec(),
            },
            cipher: Cipher {
                name: "nacl/secretbox".into(),
                nonce: nonce.to_vec(),
            },
            ciphertext,
        })
        .unwrap();
        format!(
            "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
            BASE64.encode(json)
        )
    }

    #[test]
    fn cosign_encrypted_keys_decrypt_with_their_password() {
        let signer = PluginSigner::generate();
        let pem = cosign_encrypted(&signer, "s3cret");
        let loaded = PluginSigner::from_pem("cosign.key", &pem, Some("s3cret")).unwrap();
        assert!(signer.trusted_key("k").verifies(b"m", &loaded.sign(b"m")));
        let error = PluginSigner::from_pem("cosign.key", &pem, Some("wrong")).unwrap_err();
        assert!(matches!(error, SignatureError::Decrypt { .. }), "{error}");
    }

    #[test]
    fn policies_check_detached_and_artifact_signatures() {
        let signer = PluginSigner::generate();
        let stranger = PluginSigner::generate();
        let policy = SignaturePolicy::require(vec![signer.trusted_key("trusted.pub")]);
        assert!(SignaturePolicy::none().check_detached(b"wasm", None).unwrap().is_none());
        assert!(matches!(
            policy.check_detached(b"wasm", None),
            Err(PolicyError::MissingDetached)
        ));
        assert!(
            policy
                .check_detached(b"wasm", Some(&signer.sign(b"wasm")))
                .unwrap()
                .is_some()
        );
        let error = policy
            .check_detached(b"wasm", Some(&stranger.sign(b"wasm")))
            .unwrap_err();
        assert!(error.to_string().contains("trusted.pub"), "{error}");

        let digest = format!("sha256:{}", "cd".repeat(32));
        let other_digest = format!("sha256:{}", "ef".repeat(32));
        let payload = SimpleSigning::new("r/p", &digest).to_bytes();
        let other_payload = SimpleSigning::new("r/p", &other_digest).to_bytes();
        let good = signer.sign(&payload);
        let strangers = stranger.sign(&payload);
        let replayed = signer.sign(&other_payload);
        let check = |pairs: &[(&[u8], &str)]| policy.check_artifact("oci://r/p:v1", &digest, pairs.iter().copied());
        assert!(matches!(check(&[]), Err(PolicyError::Unsigned { .. })));
        assert!(matches!(
            check(&[(&payload, &strangers)]),
            Err(PolicyError::Untrusted { count: 1, .. })
        ));
        assert!(
            matches!(
                check(&[(&other_payload, &replayed)]),
                Err(PolicyError::Untrusted { .. })
            ),
            "a trusted signature of another manifest does not count"
        );
        assert!(check(&[(&payload, &strangers), (&payload, &good)]).unwrap().is_some());
    }

    #[test]
    fn payloads_are_cosigns() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = SimpleSigning::new("127.0.0.1:5000/plugins/echo", &digest);
        let text = String::from_utf8(payload.to_bytes()).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"critical\":{{\"identity\":{{\"docker-reference\":\"127.0.0.1:5000/plugins/echo\"}},\"image\":\
                 {{\"docker-manifest-digest\":\"{digest}\"}},\"type\":\"cosign container image signature\"}},\
                 \"optional\":null}}"
            )
        );
        assert_eq!(SimpleSigning::parse(text.as_bytes()).unwrap(), payload);
        let other_type = text.replace("cosign container image signature", "something else");
        assert!(SimpleSigning::parse(other_type.as_bytes()).is_err());
        assert_eq!(signature_tag(&digest), format!("sha256-{}.sig", "ab".repeat(32)));
    }
}
