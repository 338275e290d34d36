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

use super::LimitArgs;
use crate::plugin::object_key;
use crate::plugin::{
    EngineError, Gvk, Limits, LoadError, ObjectReader, Outcome, PluginEngine, ReconcileError, WorldView,
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
        source: Box<serde_saphyr::Error>,
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
    print!("{}", serde_saphyr::to_string(&outcome)?);
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
    let fixture: WorldFixture = serde_saphyr::from_slice(&read(world)?).map_err(|source| RenderError::Parse {
        path: world.into(),
        what: "world fixture",
        source: Box::new(source),
    })?;
    let config = match config {
        Some(path) => Some(
            serde_saphyr::from_slice::<Value>(&read(path)?).map_err(|source| RenderError::Parse {
                path: path.into(),
                what: "plugin configuration",
                source: Box::new(source),
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
    let reader = ObjectReader::new(
        std::iter::once(&fixture.primary)
            .chain(&fixture.children)
            .chain(&fixture.objects)
            .cloned(),
    )
    .map_err(fixture_error)?;
    let view = WorldView {
        deleting: fixture.deleting,
        attempt: fixture.attempt,
        ..WorldView::from_json(&fixture.primary, &fixture.children, &config)
    };
    let _span = tracing::info_span!("render", plugin = %name, object = %key).entered();
    Ok(loaded.reconcile(view, Arc::new(reader))?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugin::ClusterReader;

    fn reader(fixture: &WorldFixture) -> Result<ObjectReader, String> {
        ObjectReader::new(
            std::iter::once(&fixture.primary)
                .chain(&fixture.children)
                .chain(&fixture.objects)
                .cloned(),
        )
    }

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
        let reader = reader(&fixture()).unwrap();
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
        let reader = reader(&fixture()).unwrap();
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
        assert!(reader(&broken).unwrap_err().contains("\"x\""));
    }
}
