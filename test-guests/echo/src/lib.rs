//! A test plugin built with the SDK that exercises the whole contract and reports what it saw.
//!
//! Its configuration steers it: `fail` (return that error), `children` (the desired set, verbatim; absent, the
//! children are left alone),
//! `reads` (objects to `get`: `{apiVersion, kind, namespace, name}`), `list` (`{apiVersion, kind, selector}`),
//! `requeueAfterMs`, and `finalize` (report cleanup done when deleting). The status echoes the view.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use wasm_reconciler_sdk::{
    Condition, ControllerSpec, Error, Event, Gvk, Outcome, Reconciler, WorldView, export_reconciler, host,
};

/// Configuration of the echo plugin.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Config {
    fail: Option<String>,
    children: Option<Vec<Value>>,
    #[serde(default)]
    reads: Vec<ObjectRef>,
    list: Option<ListRef>,
    requeue_after_ms: Option<u64>,
    #[serde(default)]
    finalize: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListRef {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    selector: Option<String>,
}

/// The echo reconciler.
#[derive(Debug)]
pub struct Echo;

impl Reconciler for Echo {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("test.wasm-reconciler.io", "v1", "Echo"))
            .owns(Gvk::new("", "v1", "ConfigMap"))
            .owns(Gvk::new("", "v1", "Secret"))
            .reads(Gvk::new("", "v1", "Service"))
            .finalizer("test.wasm-reconciler.io/echo")
            .resync(Duration::from_secs(3600))
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let config: Config = view.config()?;
        if let Some(message) = config.fail {
            wasm_reconciler_sdk::warn!("failing on purpose: {message}");
            return Err(Error::msg(message));
        }
        wasm_reconciler_sdk::info!("echoing attempt {}", view.attempt());

        let mut reads = serde_json::Map::new();
        for read in &config.reads {
            let kind = Gvk::from_api_version(&read.api_version, read.kind.clone());
            let answer = match host::get_json(&kind, read.namespace.as_deref(), &read.name) {
                Ok(found) => json!({"found": found.is_some()}),
                Err(error) => json!({"error": error.message()}),
            };
            reads.insert(format!("{}/{}", read.kind, read.name), answer);
        }
        let listed = match &config.list {
            None => Value::Null,
            Some(list) => {
                let kind = Gvk::from_api_version(&list.api_version, list.kind.clone());
                match host::list_json(&kind, list.namespace.as_deref(), list.selector.as_deref()) {
                    Ok(objects) => objects.iter().map(|o| o["metadata"]["name"].clone()).collect(),
                    Err(error) => json!({"error": error.message()}),
                }
            }
        };
        let children: Vec<&str> = view
            .children_json()
            .iter()
            .filter_map(|child| child["metadata"]["name"].as_str())
            .collect();
        let status = json!({
            "echo": {
                "name": view.name(),
                "generation": view.generation(),
                "attempt": view.attempt(),
                "deleting": view.deleting(),
                "children": children,
                "config": view.config_json(),
            },
            "reads": reads,
            "listed": listed,
        });

        let reported = Outcome::new()
            .status(&status)
            .condition(Condition::status_true(
                "Ready",
                "Echoed",
                "the echo plugin saw the object",
            ))
            .event(Event::normal(
                "Echoed",
                format!("reconciled attempt {}", view.attempt()),
            ));
        let mut outcome = match &config.children {
            // The complete set, also when empty (which deletes every child).
            Some(children) => reported.children(children),
            None => reported.leave_children_alone(),
        };
        if let Some(ms) = config.requeue_after_ms {
            outcome = outcome.requeue_after(Duration::from_millis(ms));
        }
        if view.deleting() && config.finalize {
            outcome = outcome.finalized();
        }
        Ok(outcome)
    }
}

export_reconciler!(Echo);
