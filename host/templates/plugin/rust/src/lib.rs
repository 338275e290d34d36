//! The {{kind}} controller: keeps a ConfigMap holding each {{kind}}'s `spec.data`, and reports in `.status` and
//! the `Ready` condition whether that ConfigMap is in place.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wasm_reconciler_sdk::{Condition, ControllerSpec, Error, Event, Gvk, Outcome, Reconciler, WorldView};

#[cfg(test)]
mod tests;

/// The label on every ConfigMap this plugin writes, valued with the plugin's name.
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// This plugin's name.
const PLUGIN_NAME: &str = "{{name}}";

/// The kind this plugin reconciles.
fn primary_kind() -> Gvk {
    Gvk::new("{{group}}", "{{version}}", "{{kind}}")
}

/// The kind of the children it owns.
fn config_map_kind() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The part of a {{kind}} this plugin reads.
#[derive(Debug, Default, Deserialize)]
struct Primary {
    #[serde(default)]
    spec: Spec,
}

/// `spec` of a {{kind}} (its schema is in `crd.yaml`).
#[derive(Debug, Default, Deserialize)]
struct Spec {
    /// Keys and values of the ConfigMap.
    #[serde(default)]
    data: BTreeMap<String, String>,
}

/// What the plugin writes into `.status`; the host adds `observedGeneration` and `conditions`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    config_map: String,
    keys: usize,
}

/// A ConfigMap with only the fields this plugin manages. The host applies it with server-side apply, so these
/// are the fields the plugin owns; a small type of its own also keeps the component small.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigMap {
    api_version: String,
    kind: String,
    metadata: Metadata,
    #[serde(default)]
    data: BTreeMap<String, String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Metadata {
    name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
}

/// Whether `key` may name an entry of a ConfigMap.
fn is_config_map_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Reconciles {{kind}} objects.
pub struct {{kind}}Reconciler;

impl Reconciler for {{kind}}Reconciler {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(primary_kind()).owns(config_map_kind())
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let Primary { spec } = view.primary()?;
        if let Some(key) = spec.data.keys().find(|key| !is_config_map_key(key)) {
            wasm_reconciler_sdk::bail!(
                "spec.data key `{key}` is not a valid ConfigMap key (letters, digits, '-', '_' and '.')"
            );
        }
        let name = view.name().to_owned();
        let observed = view
            .children_as::<ConfigMap>(&config_map_kind())?
            .into_iter()
            .find(|config_map| config_map.metadata.name == name);

        let desired = ConfigMap {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            metadata: Metadata {
                name: name.clone(),
                labels: BTreeMap::from([(MANAGED_BY_LABEL.to_owned(), PLUGIN_NAME.to_owned())]),
            },
            data: spec.data,
        };
        let keys = desired.data.len();
        let outcome = Outcome::new().child(&desired).status(&Status {
            config_map: name.clone(),
            keys,
        });
        Ok(match observed {
            None => outcome
                .condition(Condition::status_false(
                    "Ready",
                    "ConfigMapCreating",
                    format!("ConfigMap {name} is being created"),
                ))
                .event(Event::normal("Creating", format!("creating ConfigMap {name}"))),
            Some(observed) if observed.data != desired.data => outcome.condition(Condition::status_false(
                "Ready",
                "ConfigMapUpdating",
                format!("ConfigMap {name} is being updated"),
            )),
            Some(_) => outcome.condition(Condition::status_true(
                "Ready",
                "ConfigMapReady",
                format!("ConfigMap {name} holds {keys} key(s)"),
            )),
        })
    }
}

wasm_reconciler_sdk::export_reconciler!({{kind}}Reconciler);
