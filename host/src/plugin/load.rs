//! Turning wasm bytes into a callable plugin: validate, compile (through the artifact cache), check the
//! contract version, pre-instantiate, and ask the plugin what it reconciles.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::bindings::{v0_1, v0_2, v0_3};
use super::call::{classify, drain_output, new_store};
use super::contract::{Capabilities, Contract, EXPORTED_INTERFACE, exported_version, served_versions};
use super::engine::PluginEngine;
use super::grants::Grants;
use super::host_api::NoReads;
use super::instance::PluginPre;
use super::limits::Limits;
use super::{ControllerSpec, Gvk, WIT_PACKAGE, types};

/// Why bytes could not become a plugin.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not a WebAssembly binary at all.
    #[error("not a WebAssembly binary ({0})")]
    NotWasm(String),
    /// A core module rather than a component.
    #[error(
        "this is a core WebAssembly module, not a component; build the plugin with `--target wasm32-wasip2` (see docs/plugin-guide.md)"
    )]
    CoreModule,
    /// wasmtime could not compile it.
    #[error("the component does not compile")]
    Compile(#[source] wasmtime::Error),
    /// It is a component, but not a wasm-reconciler plugin.
    #[error(
        "not a wasm-reconciler plugin: the component exports no `{EXPORTED_INTERFACE}` interface (it exports: {exports})"
    )]
    NotAPlugin {
        /// What it does export.
        exports: String,
    },
    /// A plugin built against a contract version this host does not serve.
    #[error(
        "the plugin is built against {WIT_PACKAGE}@{found}, but this host supports {supported}; rebuild it with a matching wasm-reconciler-sdk"
    )]
    UnsupportedVersion {
        /// The version the plugin targets.
        found: String,
        /// What this host supports.
        supported: String,
    },
    /// A contract 0.1 plugin imports what only contract 0.2 grants (outbound HTTP, variables).
    #[error(
        "the plugin is built against {WIT_PACKAGE}@{version} but imports `{import}`, which only {WIT_PACKAGE}@0.2 grants; export it for contract 0.2 (Rust SDK: `export_reconciler!(T, contract = \"0.2\")`)"
    )]
    NotGranted {
        /// The version the plugin targets.
        version: String,
        /// The import it may not have.
        import: String,
    },
    /// It imports something the host does not provide.
    #[error("the plugin needs imports this host does not provide")]
    Link(#[source] wasmtime::Error),
    /// `describe()` failed.
    #[error("describe() failed: {0}")]
    Describe(#[source] super::call::ReconcileError),
    /// `describe()` answered something unusable.
    #[error("describe() returned an invalid spec: {0}")]
    InvalidSpec(String),
}

/// Result alias for this module.
pub type Result<T, E = LoadError> = std::result::Result<T, E>;

/// A validated, pre-instantiated plugin, ready to be called. Cheap to clone.
#[derive(Clone)]
pub struct Plugin {
    pub(crate) engine: PluginEngine,
    pub(crate) pre: PluginPre,
    pub(crate) spec: Arc<ControllerSpec>,
    pub(crate) limits: Limits,
    pub(crate) grants: Grants,
    name: Arc<str>,
    sha256: Arc<str>,
    wit_version: Arc<str>,
    capabilities: Capabilities,
    size: usize,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .field("spec", &self.spec)
            .field("limits", &self.limits)
            .field("capabilities", &self.capabilities)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// The plugin's name (from its ConfigMap or directory).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Hex sha256 of the component bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// What the plugin reconciles.
    pub fn spec(&self) -> &ControllerSpec {
        &self.spec
    }

    /// The limits its calls run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The contract version the plugin was built against.
    pub fn wit_version(&self) -> &str {
        &self.wit_version
    }

    /// The contract version range it is served under.
    pub fn contract(&self) -> Contract {
        self.pre.contract()
    }

    /// What it asks of the host beyond reads and logs (outbound HTTP, variables), from its imports.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// Size of the component in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The same plugin with `grants` in force for its reconciles: where it may send HTTP requests, where its
    /// variables come from. Only a contract 0.2 plugin can use them; `describe()` never gets them.
    pub fn with_grants(mut self, grants: Grants) -> Self {
        if !self.contract().grants_outbound() && !grants.outbound.denies_everything() {
            tracing::debug!(plugin = %self.name, "outbound grants ignored: the plugin is built against contract 0.1");
        }
        self.grants = grants;
        self
    }

    /// The grants in force.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }
}

impl PluginEngine {
    /// Validates and compiles `wasm`, checks its contract version, pre-instantiates it and calls `describe()`.
    ///
    /// Compilation is CPU-heavy: call this off the async runtime (`spawn_blocking`).
    pub fn load(&self, name: &str, wasm: &[u8], limits: Limits) -> Result<Plugin> {
        check_header(wasm)?;
        let sha256 = hex::encode(Sha256::digest(wasm));
        let component = self.compile(&sha256, wasm)?;
        let (wit_version, contract) = self.check_contract_version(&component)?;
        let component_type = component.component_type();
        let imports: Vec<&str> = component_type
            .imports(&self.inner.engine)
            .map(|(name, _)| name)
            .collect();
        let capabilities = Capabilities::of_imports(imports.iter().copied());
        if !contract.grants_outbound()
            && let Some(import) = Capabilities::beyond_v0_1(imports.iter().copied())
        {
            return Err(LoadError::NotGranted {
                version: wit_version,
                import: import.to_owned(),
            });
        }
        let pre = match contract {
            Contract::V0_1 => {
                let instance_pre = self.inner.linker.instantiate_pre(&component).map_err(LoadError::Link)?;
                PluginPre::V0_1(v0_1::ReconcilerPre::new(instance_pre).map_err(LoadError::Link)?)
            }
            Contract::V0_2 => {
                let instance_pre = self.inner.linker_v0_2.instantiate_pre(&component);
                PluginPre::V0_2(
                    v0_2::ReconcilerPre::new(instance_pre.map_err(LoadError::Link)?).map_err(LoadError::Link)?,
                )
            }
            Contract::V0_3 => {
                let instance_pre = self.inner.linker_v0_3.instantiate_pre(&component);
                PluginPre::V0_3(
                    v0_3::ReconcilerPre::new(instance_pre.map_err(LoadError::Link)?).map_err(LoadError::Link)?,
                )
            }
        };
        let spec = self.describe(name, &pre, &limits)?;
        tracing::debug!(
            plugin = name,
            sha256 = %sha256,
            wit_version = %wit_version,
            outbound_http = capabilities.outbound_http,
            variables = capabilities.variables,
            clock = capabilities.clock,
            randomness = capabilities.randomness,
            "plugin loaded"
        );
        Ok(Plugin {
            engine: self.clone(),
            pre,
            spec: Arc::new(spec),
            limits,
            grants: Grants::default(),
            name: name.into(),
            sha256: sha256.into(),
            wit_version: wit_version.into(),
            capabilities,
            size: wasm.len(),
        })
    }

    fn compile(&self, sha256: &str, wasm: &[u8]) -> Result<Component> {
        if let Some(cache) = &self.inner.artifacts {
            match cache.load_or_compile(&self.inner.engine, sha256, wasm) {
                Ok((component, hit)) => {
                    tracing::debug!(sha256, cache_hit = hit, "compiled component ready");
                    return Ok(component);
                }
                Err(error) => {
                    tracing::debug!(sha256, error = %crate::error_chain(&error), "artifact cache unusable; compiling in memory");
                }
            }
        }
        Component::new(&self.inner.engine, wasm).map_err(LoadError::Compile)
    }

    fn check_contract_version(&self, component: &Component) -> Result<(String, Contract)> {
        let component_type = component.component_type();
        let exports: Vec<&str> = component_type
            .exports(&self.inner.engine)
            .map(|(name, _)| name)
            .collect();
        let Some(version) = exports
            .iter()
            .find_map(|name| exported_version(name).map(str::to_owned))
        else {
            let exports = if exports.is_empty() {
                "nothing".to_string()
            } else {
                exports.join(", ")
            };
            return Err(LoadError::NotAPlugin { exports });
        };
        match Contract::of_version(&version) {
            Some(contract) => Ok((version, contract)),
            None => Err(LoadError::UnsupportedVersion {
                found: version,
                supported: served_versions(),
            }),
        }
    }

    fn describe(&self, name: &str, pre: &PluginPre, limits: &Limits) -> Result<ControllerSpec> {
        let _span = tracing::info_span!("describe", plugin = name).entered();
        let mut store = new_store(self, limits, Arc::new(NoReads), None, &Grants::default());
        let answer = pre
            .instantiate(&mut store)
            .and_then(|instance| instance.call_describe(&mut store))
            .map_err(|error| {
                let stderr = drain_output(store.data());
                LoadError::Describe(classify(error, store.data(), &stderr, limits))
            })?;
        drain_output(store.data());
        check_spec(types::controller_spec(answer))
    }
}

fn check_header(wasm: &[u8]) -> Result<()> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        let shown: Vec<String> = wasm.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Err(LoadError::NotWasm(if wasm.is_empty() {
            "the file is empty".into()
        } else {
            format!("it starts with bytes {}, not the `\\0asm` magic", shown.join(" "))
        }));
    }
    // Bytes 4..8: a core module has version 1 and layer 0; a component has layer 1.
    match wasm[4..8] {
        [1, 0, 0, 0] => Err(LoadError::CoreModule),
        [_, _, 1, 0] => Ok(()),
        _ => Err(LoadError::NotWasm("unknown WebAssembly binary version".into())),
    }
}

fn check_spec(spec: ControllerSpec) -> Result<ControllerSpec> {
    let check_gvk = |what: &str, gvk: &Gvk| -> Result<()> {
        if gvk.version.is_empty() || gvk.kind.is_empty() {
            return Err(LoadError::InvalidSpec(format!(
                "{what} kind {gvk:?} needs a version and a kind"
            )));
        }
        Ok(())
    };
    let primary = &spec.primary;
    check_gvk("primary", primary)?;
    for gvk in &spec.owns {
        check_gvk("owned", gvk)?;
        if gvk == primary {
            return Err(LoadError::InvalidSpec(format!(
                "the primary kind {primary} cannot also be owned"
            )));
        }
    }
    for gvk in &spec.reads {
        check_gvk("read", gvk)?;
    }
    if let Some(finalizer) = &spec.finalizer
        && !is_qualified_finalizer(finalizer)
    {
        return Err(LoadError::InvalidSpec(format!(
            "finalizer {finalizer:?} must be a domain-qualified name such as `example.com/cleanup`"
        )));
    }
    if spec.resync_seconds == Some(0) {
        return Err(LoadError::InvalidSpec("resync-seconds must be at least 1".into()));
    }
    Ok(spec)
}

/// `domain.tld/name`: what the API server accepts as a finalizer outside the `kubernetes` built-ins.
fn is_qualified_finalizer(value: &str) -> bool {
    let Some((domain, name)) = value.split_once('/') else {
        return false;
    };
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    domain.len() <= 253
        && domain.contains('.')
        && domain.split('.').all(label_ok)
        && !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checks_name_the_problem() {
        assert!(matches!(check_header(b""), Err(LoadError::NotWasm(m)) if m == "the file is empty"));
        assert!(matches!(check_header(b"hello world"), Err(LoadError::NotWasm(m)) if m.contains("68 65 6c 6c")));
        assert!(matches!(check_header(b"\0asm\x01\0\0\0"), Err(LoadError::CoreModule)));
        assert!(check_header(b"\0asm\x0d\0\x01\0").is_ok());
    }

    #[test]
    fn finalizers_must_be_domain_qualified() {
        assert!(is_qualified_finalizer("examples.wasm-reconciler.io/drain"));
        assert!(!is_qualified_finalizer("drain"));
        assert!(!is_qualified_finalizer("localhost/drain"));
        assert!(!is_qualified_finalizer("Example.com/drain"));
        assert!(!is_qualified_finalizer("example.com/"));
    }
}
