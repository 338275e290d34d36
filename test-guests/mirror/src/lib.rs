//! A test plugin that reads an object it does not own: each `Mirror` copies the data of a source ConfigMap (read
//! with `host::get`; ConfigMap is declared in `owns` only, for the copies, not in `reads`) into `spec.copies` owned
//! ConfigMaps named `<mirror>-copy-<index>`. With no source it reports `Ready=False` (`SourceMissing`) and leaves
//! the copies alone.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use wasm_reconciler_sdk::{
    Condition, ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView, export_reconciler, host,
};

/// The kind a Mirror copies from and to.
fn config_map() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    source: String,
    #[serde(default)]
    copies: u32,
}

/// The mirror reconciler.
#[derive(Debug)]
pub struct Mirror;

impl Reconciler for Mirror {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("test.wasm-reconciler.io", "v1", "Mirror")).owns(config_map())
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let spec: Spec = serde_json::from_value(view.primary_json()["spec"].clone())?;
        let namespace = view.namespace().map(str::to_owned);
        let Some(source) = host::get_json(&config_map(), namespace.as_deref(), &spec.source)? else {
            return Ok(Outcome::new().leave_children_alone().condition(Condition::status_false(
                "Ready",
                "SourceMissing",
                format!("ConfigMap {} does not exist", spec.source),
            )));
        };
        let data = source["data"].as_object().cloned().unwrap_or_else(Map::new);
        let version = data
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let copies = (0..spec.copies).map(|index| {
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{}-copy-{index}", view.name())},
                "data": data,
            })
        });
        Ok(Outcome::new()
            .children(copies)
            .status(&json!({"copies": spec.copies, "version": version}))
            .condition(Condition::status_true(
                "Ready",
                "Mirrored",
                format!("{} copies of {}", spec.copies, spec.source),
            )))
    }
}

export_reconciler!(Mirror);
