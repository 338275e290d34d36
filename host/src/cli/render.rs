//! `wasm-reconciler render`: one reconcile of a plugin on a world-view fixture ([`crate::fixture`]), offline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use super::LimitArgs;
use crate::fixture::{FixtureError, WorldFixture};
use crate::plugin::object_key;
use crate::plugin::{EngineError, Limits, LoadError, ObjectReader, Outcome, PluginEngine, ReconcileError, WorldView};

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

/// Why `render` produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The fixture, the configuration or the component could not be read, or the fixture is no usable world.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
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
    let wasm = crate::fixture::read(plugin)?;
    let fixture = WorldFixture::load(world, config)?;
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
    .map_err(|message| FixtureError::Invalid {
        path: world.into(),
        message,
    })?;
    let view = WorldView {
        deleting: fixture.deleting,
        attempt: fixture.attempt,
        ..WorldView::from_json(&fixture.primary, &fixture.children, &fixture.config())
    };
    let _span = tracing::info_span!("render", plugin = %name, object = %key).entered();
    Ok(loaded.reconcile(view, Arc::new(reader))?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugin::{ClusterReader, Gvk};

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
