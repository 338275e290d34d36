//! A plugin package as delivered: the component bytes (possibly gzip-compressed), the plugin configuration and
//! the host settings — the same layout in a directory and in a ConfigMap.

use std::io::Read;

use serde_json::Value;

use super::settings::{PluginSettings, SettingsError};

/// Largest object the API server stores, and so the largest a plugin ConfigMap can be (its binary data as
/// stored, gzip-compressed or not, plus its text). The API server enforces it; `plugin pack` checks it up front.
pub const MAX_CONFIGMAP_BYTES: usize = 1024 * 1024;
/// Largest component the host loads, decompressed; also where decompression stops (a gzip bomb ends here). A
/// Python plugin is about 18 MiB; directories and references carry components a ConfigMap cannot.
pub const MAX_COMPONENT_BYTES: usize = 64 * 1024 * 1024;
/// File or key of the component.
pub const WASM_KEY: &str = "plugin.wasm";
/// File or key of the gzip-compressed component.
pub const WASM_GZ_KEY: &str = "plugin.wasm.gz";
/// File or key of the plugin configuration.
pub const CONFIG_KEY: &str = "config.yaml";
/// File or key of the host settings.
pub const SETTINGS_KEY: &str = "settings.yaml";

/// A decoded, size-checked package, ready to be loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginPackage {
    /// The component bytes (decompressed).
    pub wasm: Vec<u8>,
    /// Plugin configuration (a JSON object).
    pub config: Value,
    /// Host settings.
    pub settings: PluginSettings,
    /// The settings as written (kept with the plugin's revisions).
    pub settings_text: String,
    /// Where this version came from, as users name it: `ConfigMap wasm-reconciler/certs at resourceVersion 812`,
    /// a reference with its digest, a directory. Set by the source.
    pub origin: Option<String>,
    /// The detached signature over the component (`plugin.wasm.sig`) it was delivered with, if any: kept with its
    /// revision, so that serving the revision later is checked against the signature policy again.
    pub detached_signature: Option<String>,
}

/// Why a package is refused.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// Neither `plugin.wasm` nor `plugin.wasm.gz`.
    #[error("no `{WASM_KEY}` or `{WASM_GZ_KEY}` found")]
    NoComponent,
    /// Both were given.
    #[error("both `{WASM_KEY}` and `{WASM_GZ_KEY}` are present; keep one")]
    TwoComponents,
    /// The gzip stream is broken.
    #[error("`{WASM_GZ_KEY}` is not valid gzip")]
    Gzip(#[source] std::io::Error),
    /// Over the component size limit.
    #[error("the component is {size} bytes decompressed, over the limit of {MAX_COMPONENT_BYTES} bytes")]
    TooLarge {
        /// Decompressed size.
        size: usize,
    },
    /// The configuration does not parse or is not an object.
    #[error("`{CONFIG_KEY}` is invalid: {0}")]
    Config(String),
    /// The settings are invalid.
    #[error("`{SETTINGS_KEY}` is invalid")]
    Settings(#[source] SettingsError),
    /// The digest pin does not match.
    #[error("the component's sha256 is {actual}, but the package pins {pinned}")]
    DigestMismatch {
        /// Pinned digest.
        pinned: String,
        /// Actual digest.
        actual: String,
    },
}

impl PluginPackage {
    /// Decodes a package from its parts (with no [`origin`](Self::origin) or signature). `pinned_sha256` is the optional `wasm-reconciler.io/sha256` annotation.
    pub fn decode(
        wasm: Option<&[u8]>,
        wasm_gz: Option<&[u8]>,
        config: Option<&str>,
        settings: Option<&str>,
        pinned_sha256: Option<&str>,
    ) -> Result<Self, PackageError> {
        let wasm = match (wasm, wasm_gz) {
            (Some(_), Some(_)) => return Err(PackageError::TwoComponents),
            (Some(wasm), None) => wasm.to_vec(),
            (None, Some(compressed)) => gunzip_bounded(compressed)?,
            (None, None) => return Err(PackageError::NoComponent),
        };
        if wasm.len() > MAX_COMPONENT_BYTES {
            return Err(PackageError::TooLarge { size: wasm.len() });
        }
        if let Some(pinned) = pinned_sha256 {
            use sha2::Digest;
            let actual = hex::encode(sha2::Sha256::digest(&wasm));
            let pinned = pinned.trim().trim_start_matches("sha256:").to_ascii_lowercase();
            if actual != pinned {
                return Err(PackageError::DigestMismatch { pinned, actual });
            }
        }
        let config = match config.map(str::trim).filter(|c| !c.is_empty()) {
            None => Value::Object(Default::default()),
            Some(text) => {
                let value: Value = serde_saphyr::from_str(text).map_err(|e| PackageError::Config(e.to_string()))?;
                if !value.is_object() {
                    return Err(PackageError::Config("the configuration must be a mapping".into()));
                }
                value
            }
        };
        let settings_text = settings.unwrap_or_default().to_owned();
        let settings = PluginSettings::parse(&settings_text).map_err(PackageError::Settings)?;
        Ok(Self {
            wasm,
            config,
            settings,
            settings_text,
            origin: None,
            detached_signature: None,
        })
    }
}

/// Decompresses, refusing output over the component limit (a gzip bomb stops at the limit).
fn gunzip_bounded(compressed: &[u8]) -> Result<Vec<u8>, PackageError> {
    let mut decoder = flate2::read::GzDecoder::new(compressed).take(MAX_COMPONENT_BYTES as u64 + 1);
    let mut wasm = Vec::new();
    decoder.read_to_end(&mut wasm).map_err(PackageError::Gzip)?;
    if wasm.len() > MAX_COMPONENT_BYTES {
        return Err(PackageError::TooLarge { size: wasm.len() });
    }
    Ok(wasm)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn decodes_plain_and_compressed_components() {
        let plain = PluginPackage::decode(Some(b"\0asm"), None, Some("a: 1"), None, None).unwrap();
        assert_eq!(plain.wasm, b"\0asm");
        assert_eq!(plain.config["a"], 1);
        let compressed = PluginPackage::decode(None, Some(&gzip(b"\0asm")), None, None, None).unwrap();
        assert_eq!(compressed.wasm, b"\0asm");
        assert!(compressed.config.as_object().unwrap().is_empty());
    }

    #[test]
    fn refuses_what_cannot_be_served() {
        assert!(matches!(
            PluginPackage::decode(None, None, None, None, None),
            Err(PackageError::NoComponent)
        ));
        assert!(matches!(
            PluginPackage::decode(Some(b"x"), Some(b"y"), None, None, None),
            Err(PackageError::TwoComponents)
        ));
        assert!(matches!(
            PluginPackage::decode(None, Some(b"not gzip"), None, None, None),
            Err(PackageError::Gzip(_))
        ));
        let bomb = gzip(&vec![0u8; MAX_COMPONENT_BYTES + 1]);
        assert!(bomb.len() < MAX_CONFIGMAP_BYTES, "a bomb fits a ConfigMap");
        assert!(matches!(
            PluginPackage::decode(None, Some(&bomb), None, None, None),
            Err(PackageError::TooLarge { size }) if size == MAX_COMPONENT_BYTES + 1
        ));
        assert!(matches!(
            PluginPackage::decode(Some(b"x"), None, Some("[1]"), None, None),
            Err(PackageError::Config(_))
        ));
        assert!(matches!(
            PluginPackage::decode(Some(b"x"), None, None, Some("concurrency: 0"), None),
            Err(PackageError::Settings(_))
        ));
    }

    #[test]
    fn components_over_a_configmap_but_within_the_component_limit_load() {
        let large = vec![7u8; 18 * 1024 * 1024];
        assert_eq!(
            PluginPackage::decode(Some(&large), None, None, None, None)
                .unwrap()
                .wasm
                .len(),
            large.len()
        );
        let compressed = gzip(&large);
        assert_eq!(
            PluginPackage::decode(None, Some(&compressed), None, None, None)
                .unwrap()
                .wasm
                .len(),
            large.len()
        );
        let too_large = vec![0u8; MAX_COMPONENT_BYTES + 1];
        assert!(matches!(
            PluginPackage::decode(Some(&too_large), None, None, None, None),
            Err(PackageError::TooLarge { .. })
        ));
    }

    #[test]
    fn digest_pins_are_enforced() {
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(b"\0asm"));
        assert!(PluginPackage::decode(Some(b"\0asm"), None, None, None, Some(&digest)).is_ok());
        assert!(PluginPackage::decode(Some(b"\0asm"), None, None, None, Some(&format!("sha256:{digest}"))).is_ok());
        let error = PluginPackage::decode(Some(b"\0asm"), None, None, None, Some("00")).unwrap_err();
        assert!(error.to_string().starts_with("the component's sha256 is "), "{error}");
    }
}
