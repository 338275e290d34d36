//! `wasm-reconciler render`: one reconcile of a plugin on a world-view fixture, offline.
//!
//! A fixture is a YAML (or JSON) document:
//!
//! ```yaml
//! primary: {apiVersion: ..., kind: ..., metadata: {...}, spec: {...}}
//! children: []     # objects controlled by the primary, as the host would observe them
//! objects: []      # further objects `get`/`list` can see (primary and children are visible too)
//! config: {}       # plugin configuration (overridden by --config)
//! deleting: false  # the primary is being deleted and carries the plugin's finalizer
//! attempt: 0       # consecutive failures so far
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde::Deserialize;
use serde_json::Value;
use wasm_reconciler_apiserver::selector::LabelSelector;

use super::LimitArgs;
use crate::plugin::{
    CallLabels, ClusterReader, EngineError, Gvk, Limits, LoadError, Outcome, PluginEngine, ReconcileError, WorldView,
};

/// Arguments of `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The plugin component (`.wasm`).
    #[arg(long)]
    pub plugin: PathBuf,
    /// The world-view fixture (YAML or JSON).
    #[arg(long)]
    pub world: PathBuf,
    /// Plugin configuration (YAML or JSON object); replaces the fixture's `config`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// A world-view fixture.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldFixture {
    /// The primary object.
    pub primary: Value,
    /// Observed children.
    #[serde(default)]
    pub children: Vec<Value>,
    /// Further objects visible to `get` and `list`.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// Plugin configuration.
    #[serde(default)]
    pub config: Option<Value>,
    /// Whether the primary is being deleted.
    #[serde(default)]
    pub deleting: bool,
    /// Consecutive failures so far.
    #[serde(default)]
    pub attempt: u32,
}

/// Why `render` produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A file could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A fixture or config file does not parse.
    #[error("{path} is not a valid {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it should have been.
        what: &'static str,
        /// The cause.
        #[source]
        source: serde_yaml::Error,
    },
    /// The fixture is well-formed YAML but not a usable world.
    #[error("{path}: {message}")]
    Fixture {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The plugin could not be loaded.
    #[error("loading plugin {path}")]
    Load {
        /// The component file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: LoadError,
    },
    /// The reconcile failed.
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
}

pub(super) fn run(args: &RenderArgs) -> Result<(), Box<dyn std::error::Error>> {
    let outcome = render_file(&args.plugin, &args.world, args.config.as_deref(), args.limits.limits())?;
    print!("{}", serde_yaml::to_string(&outcome)?);
    Ok(())
}

/// Loads `plugin`, reads the fixture at `world` (and `config` if given) and runs one reconcile.
pub fn render_file(plugin: &Path, world: &Path, config: Option<&Path>, limits: Limits) -> Result<Outcome, RenderError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| RenderError::Read {
            path: path.into(),
            source,
        })
    };
    let wasm = read(plugin)?;
    let fixture: WorldFixture = serde_yaml::from_slice(&read(world)?).map_err(|source| RenderError::Parse {
        path: world.into(),
        what: "world fixture",
        source,
    })?;
    let config = match config {
        Some(path) => Some(
            serde_yaml::from_slice::<Value>(&read(path)?).map_err(|source| RenderError::Parse {
                path: path.into(),
                what: "plugin configuration",
                source,
            })?,
        ),
        None => fixture.config.clone(),
    };
    let fixture_error = |message: String| RenderError::Fixture {
        path: world.into(),
        message,
    };
    if Gvk::of_object(&fixture.primary).is_none() {
        return Err(fixture_error("`primary` needs `apiVersion` and `kind`".into()));
    }
    let config = config.unwrap_or_else(|| Value::Object(Default::default()));
    if !config.is_object() {
        return Err(fixture_error("the plugin configuration must be an object".into()));
    }

    let engine = PluginEngine::new(None)?;
    let name = plugin
        .file_stem()
        .map_or_else(|| "plugin".into(), |s| s.to_string_lossy().into_owned());
    let loaded = engine.load(&name, &wasm, limits).map_err(|source| RenderError::Load {
        path: plugin.into(),
        source,
    })?;
    let key = object_key(&fixture.primary);
    let reader = FixtureReader::new(&fixture).map_err(fixture_error)?;
    let view = WorldView {
        primary: fixture.primary,
        children: fixture.children,
        config,
        deleting: fixture.deleting,
        attempt: fixture.attempt,
    };
    Ok(loaded.reconcile(&view, Arc::new(reader), CallLabels { plugin: name, key })?)
}

/// `namespace/name`, or `name` for cluster-scoped objects.
fn object_key(object: &Value) -> String {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match object.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

/// Serves `get` and `list` from a fixture's objects.
#[derive(Debug)]
struct FixtureReader {
    objects: Vec<(Gvk, Value)>,
}

impl FixtureReader {
    fn new(fixture: &WorldFixture) -> Result<Self, String> {
        let mut objects = Vec::new();
        for object in std::iter::once(&fixture.primary)
            .chain(&fixture.children)
            .chain(&fixture.objects)
        {
            let gvk = Gvk::of_object(object)
                .ok_or_else(|| format!("object {:?} needs `apiVersion` and `kind`", object_key(object)))?;
            let duplicate = objects
                .iter()
                .any(|(other_gvk, other): &(Gvk, Value)| *other_gvk == gvk && object_key(other) == object_key(object));
            if !duplicate {
                objects.push((gvk, object.clone()));
            }
        }
        Ok(Self { objects })
    }

    fn in_namespace(object: &Value, namespace: Option<&str>) -> bool {
        match namespace {
            None => true,
            Some(namespace) => object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .is_none_or(|ns| ns == namespace),
        }
    }
}

impl ClusterReader for FixtureReader {
    fn get(&self, kind: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .objects
            .iter()
            .find(|(gvk, object)| {
                gvk == kind
                    && object.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                    && Self::in_namespace(object, namespace)
            })
            .map(|(_, object)| object.to_string()))
    }

    fn list(&self, kind: &Gvk, namespace: Option<&str>, label_selector: Option<&str>) -> Result<Vec<String>, String> {
        let selector = LabelSelector::parse(label_selector.unwrap_or_default()).map_err(|e| e.to_string())?;
        Ok(self
            .objects
            .iter()
            .filter(|(gvk, object)| gvk == kind && Self::in_namespace(object, namespace) && selector.matches(object))
            .map(|(_, object)| object.to_string())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fixture() -> WorldFixture {
        serde_json::from_value(json!({
            "primary": {"apiVersion": "ex.io/v1", "kind": "Foo", "metadata": {"name": "a", "namespace": "ns"}},
            "objects": [
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", "namespace": "ns", "labels": {"app": "x"}}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s2", "namespace": "other", "labels": {"app": "x"}}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s3", "namespace": "ns", "labels": {"app": "y"}}}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn get_matches_kind_namespace_and_name() {
        let reader = FixtureReader::new(&fixture()).unwrap();
        let secret = Gvk::new("", "v1", "Secret");
        assert!(reader.get(&secret, Some("ns"), "s1").unwrap().is_some());
        assert!(reader.get(&secret, Some("ns"), "s2").unwrap().is_none());
        assert!(
            reader
                .get(&Gvk::new("ex.io", "v1", "Foo"), Some("ns"), "a")
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn list_filters_by_namespace_and_selector() {
        let reader = FixtureReader::new(&fixture()).unwrap();
        let secret = Gvk::new("", "v1", "Secret");
        assert_eq!(reader.list(&secret, None, None).unwrap().len(), 3);
        assert_eq!(reader.list(&secret, Some("ns"), None).unwrap().len(), 2);
        assert_eq!(reader.list(&secret, Some("ns"), Some("app=x")).unwrap().len(), 1);
        assert_eq!(
            reader.list(&secret, None, Some("app in (x,y),app!=y")).unwrap().len(),
            2
        );
        assert!(reader.list(&secret, None, Some("app in (")).is_err());
    }

    #[test]
    fn objects_without_a_kind_are_refused() {
        let mut broken = fixture();
        broken.objects.push(json!({"metadata": {"name": "x"}}));
        assert!(FixtureReader::new(&broken).unwrap_err().contains("\"x\""));
    }
}
