//! A test plugin with one controller bug of its configuration's choosing, for the tests of `plugin check`: each
//! flaw is a bug the check must find, and `none` is a correct controller it must pass.
//!
//! It keeps `spec.replicas` ConfigMaps `<name>-<index>` holding `spec.message`, and reports `status.replicas` and a
//! `Ready` condition. `config.flaw` picks the bug:
//!
//! - `leave-alone-at-zero`: at zero replicas it leaves its children alone (what a `child()` loop that ran zero
//!   times used to mean), so the ConfigMaps of before stay;
//! - `nondeterministic`: the status carries the nanoseconds of the wall clock when it was called (a hash map's order
//!   would not do: the host gives every call the same `HashMap` seed);
//! - `requeue-churn`: asks for a requeue after a second on every reconcile, with nothing left to do;
//! - `sticky-status`: above three replicas it sets `status.warning`, and never clears it;
//! - `panic-at-five`: panics at five replicas;
//! - `status-outside-schema`: writes `status.extra`, which the CRD's schema does not have.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use wasm_reconciler_sdk::{Condition, ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView};

/// The part of the primary the plugin reads.
#[derive(Deserialize)]
struct Flawed {
    spec: FlawedSpec,
}

#[derive(Deserialize)]
struct FlawedSpec {
    replicas: u32,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
struct Config {
    #[serde(default)]
    flaw: String,
}

/// The flawed reconciler.
#[derive(Debug)]
pub struct FlawedReconciler;

impl Reconciler for FlawedReconciler {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("tests.wasm-reconciler.io", "v1", "Flawed")).owns(Gvk::new("", "v1", "ConfigMap"))
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let Flawed { spec } = view.primary()?;
        let Config { flaw } = view.config()?;
        let name = view.name().to_owned();
        let children = (0..spec.replicas).map(|index| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("{name}-{index}")},
                "data": {"message": spec.message}})
        });
        let mut status = BTreeMap::from([("replicas".to_owned(), json!(spec.replicas))]);
        let mut leave_alone = false;
        let mut requeue = None;
        match flaw.as_str() {
            "leave-alone-at-zero" if spec.replicas == 0 => leave_alone = true,
            "nondeterministic" => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                status.insert(
                    "calledAtNanos".into(),
                    json!(now.map_or(0, |since| since.subsec_nanos())),
                );
            }
            "requeue-churn" => requeue = Some(Duration::from_secs(1)),
            "sticky-status" if spec.replicas > 3 => {
                status.insert("warning".into(), json!("many replicas"));
            }
            "panic-at-five" if spec.replicas == 5 => panic!("five replicas are more than this plugin can count"),
            "status-outside-schema" => {
                status.insert("extra".into(), json!(1));
            }
            _ => {}
        }
        let mut outcome = if leave_alone {
            Outcome::new().leave_children_alone()
        } else {
            Outcome::new().children(children)
        };
        if let Some(delay) = requeue {
            outcome = outcome.requeue_after(delay);
        }
        Ok(outcome.status(&status).condition(Condition::status_true(
            "Ready",
            "Kept",
            format!("{} ConfigMap(s)", spec.replicas),
        )))
    }
}

wasm_reconciler_sdk::export_reconciler!(FlawedReconciler);
