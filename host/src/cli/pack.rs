//! `wasm-reconciler plugin pack`: wrap a plugin component (or a reference to it in an OCI registry or at a URL),
//! its configuration and host settings in a ConfigMap.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use clap::Args;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::delivery::PluginReference;
use crate::delivery::configmap::{PLUGIN_LABEL, SHA256_ANNOTATION};
use crate::delivery::package::{CONFIG_KEY, MAX_CONFIGMAP_BYTES, SETTINGS_KEY, WASM_GZ_KEY, WASM_KEY};
use crate::delivery::reference::REF_KEY;
use crate::delivery::signature::DETACHED_SIGNATURE_KEY;

/// The namespace plugins are packed for unless told otherwise: the host's own.
pub const DEFAULT_NAMESPACE: &str = "wasm-reconciler";

/// The first eight bytes of a WebAssembly binary: magic `\0asm`, then a version and a layer.
const WASM_MAGIC: [u8; 4] = *b"\0asm";
/// The layer bytes (offset 6..8) of a component; a core module has `[0, 0]` there.
const COMPONENT_LAYER: [u8; 2] = [1, 0];

/// Why a plugin could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The ConfigMap name is not a DNS-1123 label.
    #[error(
        "invalid plugin name {name:?}: {reason} (a DNS-1123 label: at most 63 characters, lowercase letters, \
         digits and '-', starting and ending with a letter or digit)"
    )]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The namespace is not a DNS-1123 label.
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The namespace given.
        namespace: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The input does not start with the WebAssembly magic bytes.
    #[error("not a WebAssembly binary: it does not start with the `\\0asm` magic bytes")]
    NotWebAssembly,
    /// The input is a core WebAssembly module, not a component.
    #[error(
        "a core WebAssembly module, not a component (layer bytes {layer:?}); build the plugin for wasm32-wasip2 \
         or wrap the module with `wasm-tools component new`"
    )]
    NotComponent {
        /// The layer bytes found at offset 6..8.
        layer: [u8; 2],
    },
    /// The plugin configuration or the host settings are not YAML (or JSON).
    #[error("the {key} content is not valid YAML or JSON")]
    InvalidDocument {
        /// `config.yaml` or `settings.yaml`.
        key: &'static str,
        /// The parse error.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The ConfigMap would be over the API server's size limit.
    #[error("{}", too_large_message(*.total_bytes, *.wasm_bytes, *.data_bytes, *.gzip, *.gzip_total_bytes))]
    TooLarge {
        /// Decoded content of the ConfigMap: the component as stored plus the data values.
        total_bytes: usize,
        /// The component as stored (compressed when `gzip`).
        wasm_bytes: usize,
        /// The data values (configuration and settings).
        data_bytes: usize,
        /// Whether the component was compressed.
        gzip: bool,
        /// Without `gzip`: what the content would weigh compressed.
        gzip_total_bytes: Option<usize>,
    },
    /// Compressing the component failed.
    #[error("compressing the component failed")]
    Compress(#[source] std::io::Error),
    /// Writing the manifest as YAML failed.
    #[error("serializing the ConfigMap manifest failed")]
    Serialize(#[source] serde_saphyr::SerializeError),
    /// An input file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The reference does not parse.
    #[error("invalid --ref")]
    Reference(#[source] crate::delivery::reference::ReferenceError),
    /// An `https://` reference without `--sha256`.
    #[error("an https:// reference needs --sha256 with the component's digest")]
    UnpinnedUrl,
    /// `--sha256` is not a sha256 digest.
    #[error("--sha256 {0:?} is not 64 hex digits (optionally after `sha256:`)")]
    InvalidSha256(String),
    /// Neither a component file nor `--ref`.
    #[error("name the component FILE, or --ref for a component in a registry")]
    NoComponent,
    /// The manifest could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The file (`-` for stdout).
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Local result alias.
pub type Result<T, E = PackError> = std::result::Result<T, E>;

fn too_large_message(total: usize, wasm: usize, data: usize, gzip: bool, gzip_total: Option<usize>) -> String {
    let stored = if gzip { "compressed component" } else { "component" };
    let mut message = format!(
        "the ConfigMap would hold {total} bytes ({stored} {wasm} + data {data}), over the {MAX_CONFIGMAP_BYTES}-byte \
         (1 MiB) limit of a ConfigMap"
    );
    match gzip_total {
        Some(compressed) if compressed <= MAX_CONFIGMAP_BYTES => {
            message.push_str(&format!("; with --gzip it would hold {compressed} bytes and fit"));
        }
        Some(compressed) => {
            message.push_str(&format!("; even with --gzip it would hold {compressed} bytes"));
        }
        None => {}
    }
    if gzip_total.is_none_or(|compressed| compressed > MAX_CONFIGMAP_BYTES) {
        message.push_str(
            "; build the plugin with the wasm-release profile (opt-level \"z\", LTO, stripped) to make it smaller",
        );
    }
    message
}

/// Arguments of `plugin pack`.
#[derive(Debug, Clone, Args)]
pub struct PackArgs {
    /// The component (`.wasm`); absent with `--ref`.
    #[arg(required_unless_present = "reference", conflicts_with = "reference")]
    pub file: Option<PathBuf>,
    /// Reference the component instead of embedding it: `oci://REGISTRY/REPOSITORY:TAG@sha256:DIGEST` (what
    /// `plugin push` prints; a tag alone is followed as it moves), or an `https://` URL with `--sha256`.
    #[arg(long = "ref", value_name = "REFERENCE", conflicts_with = "gzip")]
    pub reference: Option<String>,
    /// With `--ref`: pin the component's sha256 (required for an https:// reference; for an oci:// tag, refuses
    /// whatever else the tag moves to).
    #[arg(long, value_name = "HEX", requires = "reference")]
    pub sha256: Option<String>,
    /// A detached signature of the component (from `plugin sign FILE`), stored as `plugin.wasm.sig`; needed for
    /// an inline component or an https:// reference when the host requires signatures.
    #[arg(long, value_name = "FILE")]
    pub signature: Option<PathBuf>,
    /// Name of the ConfigMap, which is also the plugin's name (a DNS-1123 label).
    #[arg(long, value_name = "N")]
    pub name: String,
    /// Namespace of the ConfigMap: the namespace the host loads plugins from.
    #[arg(long, value_name = "NS", default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Plugin configuration (YAML or JSON), handed to the plugin; stored as `config.yaml`.
    #[arg(long, value_name = "F")]
    pub config: Option<PathBuf>,
    /// Host settings for the plugin (YAML or JSON: limits, concurrency, resync); stored as `settings.yaml`.
    #[arg(long, value_name = "F")]
    pub settings: Option<PathBuf>,
    /// Store the component gzip-compressed (`plugin.wasm.gz`), for components near the 1 MiB limit.
    #[arg(long)]
    pub gzip: bool,
    /// Where to write the manifest; `-` or absent for stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// What goes into the ConfigMap besides the component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackOptions {
    /// ConfigMap name (the plugin's name).
    pub name: String,
    /// ConfigMap namespace.
    pub namespace: String,
    /// Plugin configuration text (YAML or JSON), stored verbatim as `config.yaml`.
    pub config: Option<String>,
    /// Host settings text (YAML or JSON), stored verbatim as `settings.yaml`.
    pub settings: Option<String>,
    /// Compress the component with gzip.
    pub gzip: bool,
    /// A detached signature over the component, stored as `plugin.wasm.sig`.
    pub signature: Option<String>,
}

impl PackOptions {
    /// Options for `name` in the default namespace, no configuration, no settings, uncompressed.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            config: None,
            settings: None,
            gzip: false,
            signature: None,
        }
    }
}

impl PackArgs {
    /// Reads the component and the configuration and settings files.
    pub fn load(&self) -> Result<(Vec<u8>, PackOptions)> {
        let wasm = read(self.file.as_deref().ok_or(PackError::NoComponent)?)?;
        Ok((wasm, self.options()?))
    }

    /// Reads the configuration, settings and signature files.
    pub fn options(&self) -> Result<PackOptions> {
        let config = self.config.as_deref().map(read_text).transpose()?;
        let settings = self.settings.as_deref().map(read_text).transpose()?;
        let signature = self
            .signature
            .as_deref()
            .map(read_text)
            .transpose()?
            .map(|s| s.trim().to_owned());
        Ok(PackOptions {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            config,
            settings,
            gzip: self.gzip,
            signature,
        })
    }

    /// Writes the manifest to `--output`, or to stdout when it is absent or `-`.
    pub fn write_output(&self, manifest: &str) -> Result<()> {
        match self.output.as_deref().filter(|path| *path != Path::new("-")) {
            Some(path) => std::fs::write(path, manifest).map_err(|source| PackError::Write {
                path: path.to_owned(),
                source,
            }),
            None => {
                let mut stdout = std::io::stdout().lock();
                stdout
                    .write_all(manifest.as_bytes())
                    .and_then(|()| stdout.flush())
                    .map_err(|source| PackError::Write {
                        path: PathBuf::from("-"),
                        source,
                    })
            }
        }
    }
}

/// Runs `plugin pack`: reads the inputs, checks the component with `validate`, packs it, writes the manifest.
pub fn run(
    args: &PackArgs,
    validate: impl FnOnce(&[u8], &PackOptions) -> std::result::Result<(), Box<dyn std::error::Error>>,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    if let Some(reference) = &args.reference {
        let reference = PluginReference::parse(reference).map_err(PackError::Reference)?;
        let manifest = pack_reference(&reference, args.sha256.as_deref(), &args.options()?)?;
        args.write_output(&manifest)?;
        return Ok(());
    }
    let (wasm, options) = args.load()?;
    validate(&wasm, &options)?;
    let manifest = pack(&wasm, &options)?;
    args.write_output(&manifest)?;
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigMapManifest<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata<'a>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    binary_data: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    namespace: &'a str,
    labels: BTreeMap<&'static str, &'static str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, String>,
}

/// Packs a component into a ConfigMap manifest (YAML, ready for `kubectl apply`).
///
/// The manifest carries the label `wasm-reconciler.io/plugin: "true"`, the annotation
/// `wasm-reconciler.io/sha256` with the digest of the uncompressed component, the component in
/// `binaryData` (`plugin.wasm`, or `plugin.wasm.gz` with `gzip`), and the configuration and settings in
/// `data`. Refuses names that are not DNS-1123 labels, input that is not a WebAssembly component,
/// documents that are not YAML, and content over the 1 MiB ConfigMap limit.
pub fn pack(wasm: &[u8], options: &PackOptions) -> Result<String> {
    check_dns_label(&options.name).map_err(|reason| PackError::InvalidName {
        name: options.name.clone(),
        reason,
    })?;
    check_dns_label(&options.namespace).map_err(|reason| PackError::InvalidNamespace {
        namespace: options.namespace.clone(),
        reason,
    })?;
    check_component(wasm)?;
    let data = data(options)?;
    let data_bytes: usize = data.values().map(|text| text.len()).sum();

    let (key, stored) = if options.gzip {
        (WASM_GZ_KEY, gzip(wasm)?)
    } else {
        (WASM_KEY, wasm.to_vec())
    };
    let total_bytes = stored.len() + data_bytes;
    if total_bytes > MAX_CONFIGMAP_BYTES {
        let gzip_total_bytes = if options.gzip {
            None
        } else {
            Some(gzip(wasm)?.len() + data_bytes)
        };
        return Err(PackError::TooLarge {
            total_bytes,
            wasm_bytes: stored.len(),
            data_bytes,
            gzip: options.gzip,
            gzip_total_bytes,
        });
    }

    let manifest = ConfigMapManifest {
        api_version: "v1",
        kind: "ConfigMap",
        metadata: Metadata {
            name: &options.name,
            namespace: &options.namespace,
            labels: BTreeMap::from([(PLUGIN_LABEL, "true")]),
            annotations: BTreeMap::from([(SHA256_ANNOTATION, hex::encode(Sha256::digest(wasm)))]),
        },
        data: data.into_iter().map(|(k, v)| (k, v.to_owned())).collect(),
        binary_data: BTreeMap::from([(key, BASE64.encode(&stored))]),
    };
    let yaml = serde_saphyr::to_string(&manifest).map_err(PackError::Serialize)?;
    Ok(format!(
        "# Generated by `wasm-reconciler plugin pack`; do not edit. Component: {} bytes{}.\n{yaml}",
        wasm.len(),
        if options.gzip { ", gzip-compressed" } else { "" }
    ))
}

/// The data values: configuration and settings (checked to be YAML) and the detached signature.
fn data(options: &PackOptions) -> Result<BTreeMap<&'static str, &str>> {
    let mut data = BTreeMap::new();
    for (key, text) in [(CONFIG_KEY, &options.config), (SETTINGS_KEY, &options.settings)] {
        if let Some(text) = text {
            serde_saphyr::from_str::<serde_json::Value>(text).map_err(|source| PackError::InvalidDocument {
                key,
                source: Box::new(source),
            })?;
            data.insert(key, text.as_str());
        }
    }
    if let Some(signature) = &options.signature {
        data.insert(DETACHED_SIGNATURE_KEY, signature.as_str());
    }
    Ok(data)
}

/// Packs a ConfigMap that references its component (`plugin.ref`) instead of carrying it; `sha256` pins the
/// component's digest (required for an `https://` reference).
pub fn pack_reference(reference: &PluginReference, sha256: Option<&str>, options: &PackOptions) -> Result<String> {
    check_dns_label(&options.name).map_err(|reason| PackError::InvalidName {
        name: options.name.clone(),
        reason,
    })?;
    check_dns_label(&options.namespace).map_err(|reason| PackError::InvalidNamespace {
        namespace: options.namespace.clone(),
        reason,
    })?;
    let sha256 = sha256
        .map(|pin| {
            let hex = pin.trim().trim_start_matches("sha256:").to_ascii_lowercase();
            if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(hex)
            } else {
                Err(PackError::InvalidSha256(pin.to_owned()))
            }
        })
        .transpose()?;
    if matches!(reference, PluginReference::Url(_)) && sha256.is_none() {
        return Err(PackError::UnpinnedUrl);
    }
    let reference = reference.to_string();
    let mut data = data(options)?;
    data.insert(REF_KEY, &reference);
    let manifest = ConfigMapManifest {
        api_version: "v1",
        kind: "ConfigMap",
        metadata: Metadata {
            name: &options.name,
            namespace: &options.namespace,
            labels: BTreeMap::from([(PLUGIN_LABEL, "true")]),
            annotations: sha256.map(|hex| (SHA256_ANNOTATION, hex)).into_iter().collect(),
        },
        data: data.into_iter().map(|(k, v)| (k, v.to_owned())).collect(),
        binary_data: BTreeMap::new(),
    };
    let yaml = serde_saphyr::to_string(&manifest).map_err(PackError::Serialize)?;
    Ok(format!(
        "# Generated by `wasm-reconciler plugin pack --ref`; do not edit. Component: {reference}.\n{yaml}"
    ))
}

/// Checks the WebAssembly magic and the component layer bytes.
fn check_component(wasm: &[u8]) -> Result<()> {
    if wasm.len() < 8 || wasm[..4] != WASM_MAGIC {
        return Err(PackError::NotWebAssembly);
    }
    let layer = [wasm[6], wasm[7]];
    if layer != COMPONENT_LAYER {
        return Err(PackError::NotComponent { layer });
    }
    Ok(())
}

/// Checks a DNS-1123 label: 1 to 63 of `[a-z0-9-]`, starting and ending alphanumeric.
fn check_dns_label(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > 63 {
        return Err("it is longer than 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("it contains characters other than lowercase letters, digits and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("it starts or ends with '-'");
    }
    Ok(())
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::best());
    encoder.write_all(bytes).map_err(PackError::Compress)?;
    encoder.finish().map_err(PackError::Compress)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| PackError::Read {
        path: path.to_owned(),
        source,
    })
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| PackError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::GzDecoder;

    use super::*;

    /// The smallest component: the preamble alone (magic, version 0x0d, layer 1).
    const EMPTY_COMPONENT: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

    /// A component-shaped payload of `len` bytes: the preamble, then bytes that do not compress.
    fn component_of(len: usize) -> Vec<u8> {
        let mut bytes = EMPTY_COMPONENT.to_vec();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        while bytes.len() < len {
            // xorshift64: deterministic, incompressible.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push(state as u8);
        }
        bytes
    }

    /// A component-shaped payload of `len` bytes that compresses well.
    fn compressible_component_of(len: usize) -> Vec<u8> {
        let mut bytes = EMPTY_COMPONENT.to_vec();
        bytes.resize(len, b'a');
        bytes
    }

    fn parse(manifest: &str) -> serde_json::Value {
        serde_saphyr::from_str(manifest).expect("the manifest is YAML")
    }

    fn field<'a>(value: &'a serde_json::Value, path: &[&str]) -> &'a serde_json::Value {
        path.iter().fold(value, |value, key| {
            value.get(*key).unwrap_or_else(|| panic!("no {key} in {value:?}"))
        })
    }

    fn text<'a>(value: &'a serde_json::Value, path: &[&str]) -> &'a str {
        field(value, path).as_str().expect("a string")
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    #[test]
    fn round_trip_uncompressed() {
        let wasm = component_of(10_000);
        let manifest = pack(&wasm, &PackOptions::new("webapp")).expect("packs");
        assert!(manifest.starts_with("# Generated by `wasm-reconciler plugin pack`; do not edit."));
        let value = parse(&manifest);
        assert_eq!(text(&value, &["apiVersion"]), "v1");
        assert_eq!(text(&value, &["kind"]), "ConfigMap");
        assert_eq!(text(&value, &["metadata", "name"]), "webapp");
        assert_eq!(text(&value, &["metadata", "namespace"]), "wasm-reconciler");
        assert_eq!(text(&value, &["metadata", "labels", PLUGIN_LABEL]), "true");
        assert_eq!(
            text(&value, &["metadata", "annotations", SHA256_ANNOTATION]),
            sha256_hex(&wasm)
        );
        let decoded = BASE64.decode(text(&value, &["binaryData", WASM_KEY])).expect("base64");
        assert_eq!(decoded, wasm);
        assert!(value.get("data").is_none(), "no data without configuration or settings");
        assert_eq!(field(&value, &["binaryData"]).as_object().map(|m| m.len()), Some(1));
    }

    #[test]
    fn round_trip_gzip() {
        let wasm = compressible_component_of(200_000);
        let options = PackOptions {
            gzip: true,
            ..PackOptions::new("configmapset")
        };
        let manifest = pack(&wasm, &options).expect("packs");
        let value = parse(&manifest);
        assert!(field(&value, &["binaryData"]).get(WASM_KEY).is_none());
        let compressed = BASE64
            .decode(text(&value, &["binaryData", WASM_GZ_KEY]))
            .expect("base64");
        assert!(
            compressed.len() < wasm.len() / 10,
            "compressed to {} bytes",
            compressed.len()
        );
        let mut decompressed = Vec::new();
        GzDecoder::new(compressed.as_slice())
            .read_to_end(&mut decompressed)
            .expect("gunzip");
        assert_eq!(decompressed, wasm);
        assert_eq!(
            text(&value, &["metadata", "annotations", SHA256_ANNOTATION]),
            sha256_hex(&decompressed),
            "the digest is of the uncompressed component"
        );
    }

    #[test]
    fn configuration_and_settings_are_stored_verbatim() {
        let config = "# replicas per set\nprefix: demo\nlabels:\n  team: platform\n";
        let settings = "{\"memoryLimitMiB\": 32, \"concurrency\": 4}";
        let options = PackOptions {
            namespace: "operators".to_owned(),
            config: Some(config.to_owned()),
            settings: Some(settings.to_owned()),
            ..PackOptions::new("cms")
        };
        let value = parse(&pack(&EMPTY_COMPONENT, &options).expect("packs"));
        assert_eq!(text(&value, &["metadata", "namespace"]), "operators");
        assert_eq!(text(&value, &["data", CONFIG_KEY]), config);
        assert_eq!(text(&value, &["data", SETTINGS_KEY]), settings);
    }

    #[test]
    fn a_document_that_is_not_yaml_is_refused() {
        let options = PackOptions {
            config: Some("key: [unclosed".to_owned()),
            ..PackOptions::new("p")
        };
        let error = pack(&EMPTY_COMPONENT, &options).expect_err("refused");
        assert!(
            matches!(error, PackError::InvalidDocument { key: CONFIG_KEY, .. }),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "the config.yaml content is not valid YAML or JSON");
    }

    #[test]
    fn exactly_the_limit_fits() {
        let data = "x: 1\n";
        let wasm = component_of(MAX_CONFIGMAP_BYTES - data.len());
        let options = PackOptions {
            config: Some(data.to_owned()),
            ..PackOptions::new("p")
        };
        assert!(pack(&wasm, &options).is_ok());
    }

    #[test]
    fn over_the_limit_is_refused_with_the_sizes() {
        let data = "x: 1\n";
        let wasm = component_of(MAX_CONFIGMAP_BYTES - data.len() + 1);
        let options = PackOptions {
            config: Some(data.to_owned()),
            ..PackOptions::new("p")
        };
        let error = pack(&wasm, &options).expect_err("refused");
        let PackError::TooLarge {
            total_bytes,
            wasm_bytes,
            data_bytes,
            gzip,
            gzip_total_bytes,
        } = error
        else {
            panic!("{error:?}");
        };
        assert_eq!(
            (total_bytes, wasm_bytes, data_bytes, gzip),
            (1_048_577, 1_048_572, 5, false)
        );
        let gzip_total = gzip_total_bytes.expect("the compressed size is computed");
        assert!(gzip_total > MAX_CONFIGMAP_BYTES, "random bytes do not compress");
        let message = pack(&wasm, &options).expect_err("refused").to_string();
        assert!(message.starts_with(
            "the ConfigMap would hold 1048577 bytes (component 1048572 + data 5), over the 1048576-byte (1 MiB) limit"
        ), "{message}");
        assert!(message.contains("even with --gzip"), "{message}");
        assert!(!message.contains("and fit"), "{message}");
    }

    #[test]
    fn over_the_limit_suggests_gzip_when_that_would_fit() {
        let wasm = compressible_component_of(2 * MAX_CONFIGMAP_BYTES);
        let error = pack(&wasm, &PackOptions::new("p")).expect_err("refused");
        let message = error.to_string();
        assert!(message.contains("with --gzip it would hold"), "{message}");
        assert!(message.ends_with("bytes and fit"), "{message}");
        let PackError::TooLarge {
            gzip_total_bytes: Some(compressed),
            ..
        } = error
        else {
            panic!("{error:?}")
        };
        assert!(compressed <= MAX_CONFIGMAP_BYTES);

        let options = PackOptions {
            gzip: true,
            ..PackOptions::new("p")
        };
        assert!(pack(&wasm, &options).is_ok(), "and with --gzip it does fit");
    }

    #[test]
    fn compressed_but_still_too_large_is_refused() {
        let wasm = component_of(MAX_CONFIGMAP_BYTES + 100);
        let options = PackOptions {
            gzip: true,
            ..PackOptions::new("p")
        };
        let error = pack(&wasm, &options).expect_err("refused");
        assert!(
            matches!(
                error,
                PackError::TooLarge {
                    gzip: true,
                    gzip_total_bytes: None,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("(compressed component "), "{error}");
    }

    #[test]
    fn names_must_be_dns_labels() {
        for (name, reason) in [
            ("", "it is empty"),
            (
                "WebApp",
                "it contains characters other than lowercase letters, digits and '-'",
            ),
            (
                "web_app",
                "it contains characters other than lowercase letters, digits and '-'",
            ),
            (
                "web.app",
                "it contains characters other than lowercase letters, digits and '-'",
            ),
            ("-webapp", "it starts or ends with '-'"),
            ("webapp-", "it starts or ends with '-'"),
        ] {
            let error = pack(&EMPTY_COMPONENT, &PackOptions::new(name)).expect_err(name);
            assert!(
                matches!(&error, PackError::InvalidName { reason: r, .. } if *r == reason),
                "{name:?}: {error:?}"
            );
        }
        let long = "a".repeat(64);
        let error = pack(&EMPTY_COMPONENT, &PackOptions::new(long)).expect_err("too long");
        assert!(error.to_string().contains("longer than 63 characters"), "{error}");
        for name in ["a", "webapp", "web-app-2", "0day", &"a".repeat(63)] {
            assert!(pack(&EMPTY_COMPONENT, &PackOptions::new(name)).is_ok(), "{name:?}");
        }
    }

    #[test]
    fn namespaces_must_be_dns_labels() {
        let options = PackOptions {
            namespace: "Kube_System".to_owned(),
            ..PackOptions::new("p")
        };
        let error = pack(&EMPTY_COMPONENT, &options).expect_err("refused");
        assert!(matches!(error, PackError::InvalidNamespace { .. }), "{error:?}");
    }

    #[test]
    fn input_that_is_not_wasm_is_refused() {
        for input in [
            &b""[..],
            b"\0asm",
            b"#!/bin/sh\necho hi\n",
            b"PK\x03\x04zip file contents",
        ] {
            let error = pack(input, &PackOptions::new("p")).expect_err("refused");
            assert!(matches!(error, PackError::NotWebAssembly), "{input:?}: {error:?}");
        }
    }

    #[test]
    fn a_core_module_is_refused() {
        let core_module = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        let error = pack(&core_module, &PackOptions::new("p")).expect_err("refused");
        assert!(matches!(error, PackError::NotComponent { layer: [0, 0] }), "{error:?}");
        assert!(error.to_string().contains("not a component"), "{error}");
    }

    #[test]
    fn run_reads_the_files_and_writes_the_manifest() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wasm_path = dir.path().join("plugin.wasm");
        let config_path = dir.path().join("config.json");
        let output_path = dir.path().join("plugin.yaml");
        let wasm = component_of(4096);
        std::fs::write(&wasm_path, &wasm).expect("write wasm");
        std::fs::write(&config_path, "{\"prefix\": \"demo\"}").expect("write config");
        let args = PackArgs {
            file: Some(wasm_path),
            reference: None,
            sha256: None,
            signature: None,
            name: "demo".to_owned(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            config: Some(config_path),
            settings: None,
            gzip: true,
            output: Some(output_path.clone()),
        };
        run(&args, |_, _| Ok(())).expect("packs");
        let value = parse(&std::fs::read_to_string(&output_path).expect("manifest written"));
        assert_eq!(text(&value, &["data", CONFIG_KEY]), "{\"prefix\": \"demo\"}");
        assert_eq!(
            text(&value, &["metadata", "annotations", SHA256_ANNOTATION]),
            sha256_hex(&wasm)
        );
    }

    #[test]
    fn a_missing_input_file_is_named() {
        let args = PackArgs {
            file: Some(PathBuf::from("/nonexistent/plugin.wasm")),
            reference: None,
            sha256: None,
            signature: None,
            name: "p".to_owned(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            config: None,
            settings: None,
            gzip: false,
            output: None,
        };
        let error = args.load().expect_err("missing");
        assert!(matches!(error, PackError::Read { .. }), "{error:?}");
        assert_eq!(error.to_string(), "reading /nonexistent/plugin.wasm");
    }

    #[test]
    fn clap_parses_the_documented_flags() {
        use clap::Parser;

        #[derive(Debug, Parser)]
        struct Command {
            #[command(flatten)]
            pack: PackArgs,
        }

        let parsed = Command::try_parse_from([
            "pack",
            "p.wasm",
            "--name",
            "webapp",
            "--config",
            "c.yaml",
            "--settings",
            "s.yaml",
            "--gzip",
            "-o",
            "o.yaml",
        ])
        .expect("parses");
        assert_eq!(parsed.pack.file, Some(PathBuf::from("p.wasm")));
        assert_eq!(parsed.pack.name, "webapp");
        assert_eq!(parsed.pack.namespace, DEFAULT_NAMESPACE);
        assert_eq!(parsed.pack.config, Some(PathBuf::from("c.yaml")));
        assert_eq!(parsed.pack.settings, Some(PathBuf::from("s.yaml")));
        assert!(parsed.pack.gzip);
        assert_eq!(parsed.pack.output, Some(PathBuf::from("o.yaml")));
        assert!(
            Command::try_parse_from(["pack", "p.wasm"]).is_err(),
            "--name is required"
        );
        assert!(
            Command::try_parse_from(["pack", "--name", "p"]).is_err(),
            "a FILE or --ref is required"
        );
        let by_reference = Command::try_parse_from(["pack", "--name", "p", "--ref", "oci://r/p:v1"]).expect("parses");
        assert_eq!(by_reference.pack.reference.as_deref(), Some("oci://r/p:v1"));
        assert!(
            Command::try_parse_from(["pack", "p.wasm", "--name", "p", "--ref", "oci://r/p:v1"]).is_err(),
            "a FILE and --ref exclude each other"
        );
    }

    #[test]
    fn a_reference_is_packed_without_the_component() {
        let digest = "ab".repeat(32);
        let reference =
            PluginReference::parse(&format!("oci://127.0.0.1:5000/plugins/echo:v1@sha256:{digest}")).unwrap();
        let options = PackOptions {
            config: Some("greeting: hi\n".into()),
            settings: Some("refreshInterval: 1m\n".into()),
            ..PackOptions::new("echo")
        };
        let value = parse(&pack_reference(&reference, None, &options).expect("packs"));
        assert_eq!(
            text(&value, &["data", REF_KEY]),
            format!("oci://127.0.0.1:5000/plugins/echo:v1@sha256:{digest}")
        );
        assert_eq!(text(&value, &["data", CONFIG_KEY]), "greeting: hi\n");
        assert_eq!(text(&value, &["metadata", "labels", PLUGIN_LABEL]), "true");
        assert!(value.get("binaryData").is_none());
        assert!(value["metadata"].get("annotations").is_none(), "no pin unless asked");

        let url = PluginReference::parse("https://example.com/echo.wasm").unwrap();
        assert!(matches!(
            pack_reference(&url, None, &options),
            Err(PackError::UnpinnedUrl)
        ));
        let pinned =
            parse(&pack_reference(&url, Some(&format!("sha256:{}", digest.to_uppercase())), &options).unwrap());
        assert_eq!(text(&pinned, &["metadata", "annotations", SHA256_ANNOTATION]), digest);
        assert!(matches!(
            pack_reference(&url, Some("abc"), &options),
            Err(PackError::InvalidSha256(_))
        ));
    }

    #[test]
    fn a_signature_is_stored_beside_the_component() {
        let options = PackOptions {
            signature: Some("MEUCIQ==".into()),
            ..PackOptions::new("p")
        };
        let value = parse(&pack(&EMPTY_COMPONENT, &options).expect("packs"));
        assert_eq!(text(&value, &["data", DETACHED_SIGNATURE_KEY]), "MEUCIQ==");
    }
}
