//! The wasm OCI artifact layout (CNCF TAG Runtime's "Wasm OCI Artifact"): the media types, the config and manifest
//! `plugin push` writes, and the checks a pulled manifest passes before its one wasm layer is fetched.

use std::collections::BTreeMap;

use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::package::MAX_COMPONENT_BYTES;
use super::reference::check_digest;

/// The manifest media type of a wasm artifact (an OCI image manifest).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker's schema 2 manifest, which some older tools wrote wasm artifacts with.
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The config media type of the CNCF wasm artifact layout.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of the CNCF wasm artifact layout.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type of the older wasm-to-oci layout, still accepted on pull.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Manifest media types asked for when pulling.
pub const ACCEPTED_MANIFEST_MEDIA_TYPES: &[&str] = &[MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE];
/// Largest manifest read (a wasm artifact's is well under 1 KiB).
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// Why a manifest is not a wasm component artifact.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Not JSON of a manifest.
    #[error("the manifest does not parse: {0}")]
    Parse(String),
    /// An image index or something else.
    #[error("the manifest has media type {0:?}, not an image manifest (an image index is not a wasm artifact)")]
    MediaType(String),
    /// Not exactly one wasm layer.
    #[error(
        "the artifact has layers of media types {0:?}; a wasm artifact has exactly one layer of type \
         `{WASM_LAYER_MEDIA_TYPE}` (or the older `{LEGACY_WASM_LAYER_MEDIA_TYPE}`)"
    )]
    Layers(Vec<String>),
    /// The layer is larger than the host loads.
    #[error("the component layer is {size} bytes, over the limit of {MAX_COMPONENT_BYTES} bytes")]
    TooLarge {
        /// The size the manifest declares.
        size: i64,
    },
    /// The layer digest is not sha256.
    #[error("the component layer's digest: {0}")]
    Digest(String),
}

/// The component layer a manifest describes.
#[derive(Debug, Clone)]
pub struct ComponentLayer {
    /// The layer's descriptor.
    pub descriptor: OciDescriptor,
    /// `sha256:…` of the component.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Checks a pulled manifest and finds its component layer.
pub fn component_layer(manifest: &[u8]) -> Result<ComponentLayer, ArtifactError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Shape {
        media_type: Option<String>,
    }
    let shape: Shape = serde_json::from_slice(manifest).map_err(|e| ArtifactError::Parse(e.to_string()))?;
    if let Some(media_type) = shape.media_type
        && !ACCEPTED_MANIFEST_MEDIA_TYPES.contains(&media_type.as_str())
    {
        return Err(ArtifactError::MediaType(media_type));
    }
    let manifest: OciImageManifest =
        serde_json::from_slice(manifest).map_err(|e| ArtifactError::Parse(e.to_string()))?;
    let media_types: Vec<String> = manifest.layers.iter().map(|l| l.media_type.clone()).collect();
    let [layer] = manifest.layers.as_slice() else {
        return Err(ArtifactError::Layers(media_types));
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE && layer.media_type != LEGACY_WASM_LAYER_MEDIA_TYPE {
        return Err(ArtifactError::Layers(media_types));
    }
    check_digest(&layer.digest).map_err(ArtifactError::Digest)?;
    let size = u64::try_from(layer.size).map_err(|_| ArtifactError::TooLarge { size: layer.size })?;
    if size > MAX_COMPONENT_BYTES as u64 {
        return Err(ArtifactError::TooLarge { size: layer.size });
    }
    Ok(ComponentLayer {
        digest: layer.digest.clone(),
        descriptor: layer.clone(),
        size,
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The config of a wasm artifact (`application/vnd.wasm.config.v0+json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When the artifact was made, RFC 3339.
    pub created: String,
    /// Who made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The layers' digests, in manifest order.
    pub layer_digests: Vec<String>,
    /// What the component imports and exports.
    pub component: ComponentShape,
}

/// A component's top-level imports and exports, and the world it targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ComponentShape {
    /// Exported names.
    pub exports: Vec<String>,
    /// Imported names.
    pub imports: Vec<String>,
    /// The world, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl ComponentShape {
    /// Reads the top-level import and export names of a component.
    pub fn of(wasm: &[u8]) -> Result<Self, wasmparser::BinaryReaderError> {
        let mut shape = Self::default();
        let mut depth = 0usize;
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            match payload? {
                wasmparser::Payload::Version { .. } => depth += 1,
                wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
                wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                    for import in reader {
                        shape.imports.push(import?.name.name.to_owned());
                    }
                }
                wasmparser::Payload::ComponentExportSection(reader) if depth == 1 => {
                    for export in reader {
                        shape.exports.push(export?.name.name.to_owned());
                    }
                }
                _ => {}
            }
        }
        Ok(shape)
    }
}

/// A wasm artifact ready to push: the config and manifest bytes and their digests.
#[derive(Debug, Clone)]
pub struct WasmArtifact {
    /// The config blob.
    pub config: Vec<u8>,
    /// `sha256:…` of the config.
    pub config_digest: String,
    /// `sha256:…` of the component layer.
    pub layer_digest: String,
    /// The manifest, exactly as pushed.
    pub manifest: Vec<u8>,
    /// `sha256:…` of the manifest: what a digest reference names.
    pub manifest_digest: String,
}

impl WasmArtifact {
    /// The artifact for `wasm`: one `application/wasm` layer and a `application/vnd.wasm.config.v0+json` config.
    /// `created` (RFC 3339) is the config's creation time; the same inputs give the same digests.
    pub fn new(
        wasm: &[u8],
        shape: ComponentShape,
        created: &str,
        annotations: BTreeMap<String, String>,
    ) -> Result<Self, serde_json::Error> {
        let layer_digest = sha256_digest(wasm);
        let config = serde_json::to_vec(&WasmConfig {
            created: created.to_owned(),
            author: None,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: vec![layer_digest.clone()],
            component: shape,
        })?;
        let config_digest = sha256_digest(&config);
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.into()),
            config: OciDescriptor {
                media_type: WASM_CONFIG_MEDIA_TYPE.into(),
                digest: config_digest.clone(),
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers: vec![OciDescriptor {
                media_type: WASM_LAYER_MEDIA_TYPE.into(),
                digest: layer_digest.clone(),
                size: wasm.len() as i64,
                ..OciDescriptor::default()
            }],
            subject: None,
            artifact_type: None,
            annotations: (!annotations.is_empty()).then_some(annotations),
        };
        let manifest = serde_json::to_vec(&manifest)?;
        Ok(Self {
            manifest_digest: sha256_digest(&manifest),
            config,
            config_digest,
            layer_digest,
            manifest,
        })
    }
}

/// RFC 3339 (UTC, seconds) of a Unix time.
pub fn rfc3339(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let seconds = unix_seconds % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(layers: &[(&str, i64)]) -> Vec<u8> {
        let layers: Vec<serde_json::Value> = layers
            .iter()
            .map(|(media_type, size)| {
                serde_json::json!({"mediaType": media_type, "size": size, "digest": sha256_digest(b"x")})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "size": 2, "digest": sha256_digest(b"{}")},
            "layers": layers,
        }))
        .unwrap()
    }

    #[test]
    fn both_wasm_layer_media_types_are_accepted() {
        for media_type in [WASM_LAYER_MEDIA_TYPE, LEGACY_WASM_LAYER_MEDIA_TYPE] {
            let layer = component_layer(&manifest(&[(media_type, 1)])).unwrap();
            assert_eq!(layer.digest, sha256_digest(b"x"));
            assert_eq!(layer.size, 1);
        }
    }

    #[test]
    fn other_artifacts_are_refused() {
        let error = component_layer(&manifest(&[("application/vnd.oci.image.layer.v1.tar+gzip", 1)])).unwrap_err();
        assert!(error.to_string().contains("exactly one layer"), "{error}");
        let error = component_layer(&manifest(&[(WASM_LAYER_MEDIA_TYPE, 1), (WASM_LAYER_MEDIA_TYPE, 1)])).unwrap_err();
        assert!(matches!(error, ArtifactError::Layers(_)), "{error}");
        let error = component_layer(&manifest(&[(WASM_LAYER_MEDIA_TYPE, MAX_COMPONENT_BYTES as i64 + 1)])).unwrap_err();
        assert!(matches!(error, ArtifactError::TooLarge { .. }), "{error}");
        let index = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [],
        }))
        .unwrap();
        assert!(matches!(component_layer(&index), Err(ArtifactError::MediaType(_))));
        assert!(matches!(component_layer(b"not json"), Err(ArtifactError::Parse(_))));
    }

    #[test]
    fn a_pushed_artifact_reads_back_and_is_reproducible() {
        let wasm = b"\0asm\x0d\0\x01\0";
        let shape = ComponentShape::of(wasm).unwrap();
        assert_eq!(shape, ComponentShape::default());
        let artifact = WasmArtifact::new(wasm, shape.clone(), "2025-01-01T00:00:00Z", BTreeMap::new()).unwrap();
        let again = WasmArtifact::new(wasm, shape, "2025-01-01T00:00:00Z", BTreeMap::new()).unwrap();
        assert_eq!(artifact.manifest_digest, again.manifest_digest);
        assert_eq!(artifact.manifest_digest, sha256_digest(&artifact.manifest));
        let layer = component_layer(&artifact.manifest).unwrap();
        assert_eq!(layer.digest, sha256_digest(wasm));
        assert_eq!(layer.descriptor.media_type, WASM_LAYER_MEDIA_TYPE);
        let config: WasmConfig = serde_json::from_slice(&artifact.config).unwrap();
        assert_eq!((config.architecture.as_str(), config.os.as_str()), ("wasm", "wasip2"));
        assert_eq!(config.layer_digests, vec![sha256_digest(wasm)]);
    }

    #[test]
    fn the_shape_of_a_real_component() {
        let wasm = std::fs::read(wasm_reconciler_artifacts::ECHO).unwrap();
        let shape = ComponentShape::of(&wasm).unwrap();
        assert!(
            shape
                .exports
                .iter()
                .any(|e| e.starts_with("wasm-reconciler:plugin/controller@")),
            "{shape:?}"
        );
        assert!(
            shape
                .imports
                .iter()
                .any(|i| i.starts_with("wasm-reconciler:plugin/host@")),
            "{shape:?}"
        );
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_735_689_599), "2024-12-31T23:59:59Z");
    }
}
