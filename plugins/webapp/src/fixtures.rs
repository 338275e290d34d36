//! Chainable builders of `WebApp` world views for the plugin's unit tests.

use serde_json::{Value, json};
use wasm_reconciler_sdk::{Outcome, Reconciler, WorldView};

use crate::WebAppReconciler;

/// A `WebApp` named `shop` in namespace `prod` and what was observed for it.
#[derive(Debug, Clone)]
pub(crate) struct AppFixture {
    spec: Value,
    children: Vec<Value>,
}

impl AppFixture {
    /// `image: nginx:1.27`, other fields left to their defaults, nothing observed.
    pub(crate) fn test() -> Self {
        Self {
            spec: json!({"image": "nginx:1.27"}),
            children: Vec::new(),
        }
    }

    pub(crate) fn spec_field(mut self, field: &str, value: Value) -> Self {
        self.spec[field] = value;
        self
    }

    pub(crate) fn replicas(self, replicas: i64) -> Self {
        self.spec_field("replicas", json!(replicas))
    }

    pub(crate) fn config(self, entries: &[(&str, &str)]) -> Self {
        let config: serde_json::Map<String, Value> = entries.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
        self.spec_field("config", Value::Object(config))
    }

    /// An observed Deployment `shop` at `generation`, with a status (`None`: no status yet).
    pub(crate) fn with_deployment(mut self, generation: i64, status: Option<DeploymentStatus>) -> Self {
        let mut deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "shop", "namespace": "prod", "generation": generation},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
        });
        if let Some(status) = status {
            deployment["status"] = json!({
                "observedGeneration": status.observed_generation,
                "readyReplicas": status.ready,
                "availableReplicas": status.available,
            });
        }
        self.children.push(deployment);
        self
    }

    pub(crate) fn primary(&self) -> Value {
        json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1",
            "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "prod", "generation": 1},
            "spec": self.spec,
        })
    }

    pub(crate) fn view(&self) -> WorldView {
        WorldView::new(self.primary()).with_children(self.children.clone())
    }

    /// Runs the plugin on this view; panics on a plugin error.
    pub(crate) fn reconcile(&self) -> Outcome {
        let outcome = WebAppReconciler::reconcile(self.view()).expect("reconcile succeeds");
        assert!(outcome.build_error().is_none(), "{:?}", outcome.build_error());
        outcome
    }
}

/// Status of an observed Deployment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeploymentStatus {
    pub(crate) observed_generation: i64,
    pub(crate) ready: i64,
    pub(crate) available: i64,
}

/// The desired child of a kind, panicking when absent.
pub(crate) fn desired<'a>(outcome: &'a Outcome, kind: &str) -> &'a Value {
    outcome
        .desired_children()
        .expect("the outcome declares its children")
        .iter()
        .find(|child| child["kind"] == kind)
        .unwrap_or_else(|| panic!("no desired {kind}"))
}
