//! Chainable builders of `ConfigMapSet` world views for the plugin's unit tests.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasm_reconciler_sdk::{Outcome, Reconciler, WorldView};

use crate::ConfigMapSetReconciler;
use crate::resource::SET_LABEL;

/// A `ConfigMapSet` named `demo` in namespace `apps` and the children observed for it.
#[derive(Debug, Clone)]
pub(crate) struct SetFixture {
    replicas: i64,
    burst: Option<i64>,
    labels: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
    children: Vec<Value>,
    deleting: bool,
}

pub(crate) const SET_NAME: &str = "demo";

impl SetFixture {
    /// 3 replicas of `{greeting: hello}` labelled `app=demo`, burst left to its default, no children.
    pub(crate) fn test() -> Self {
        Self {
            replicas: 3,
            burst: None,
            labels: BTreeMap::from([("app".to_owned(), "demo".to_owned())]),
            data: BTreeMap::from([("greeting".to_owned(), "hello".to_owned())]),
            children: Vec::new(),
            deleting: false,
        }
    }

    pub(crate) fn replicas(mut self, replicas: i64) -> Self {
        self.replicas = replicas;
        self
    }

    pub(crate) fn burst(mut self, burst: i64) -> Self {
        self.burst = Some(burst);
        self
    }

    pub(crate) fn data(mut self, key: &str, value: &str) -> Self {
        self.data.insert(key.to_owned(), value.to_owned());
        self
    }

    pub(crate) fn deleting(mut self) -> Self {
        self.deleting = true;
        self
    }

    /// Observed replicas matching the template as it is now.
    pub(crate) fn with_replicas(mut self, indexes: impl IntoIterator<Item = u32>) -> Self {
        for index in indexes {
            let child = self.child(&format!("{SET_NAME}-{index}"), &self.data.clone());
            self.children.push(child);
        }
        self
    }

    /// An observed replica whose data no longer matches the template.
    pub(crate) fn with_drifted_replica(mut self, index: u32) -> Self {
        let stale = BTreeMap::from([("greeting".to_owned(), "stale".to_owned())]);
        let child = self.child(&format!("{SET_NAME}-{index}"), &stale);
        self.children.push(child);
        self
    }

    /// An observed child with any name.
    pub(crate) fn with_child_named(mut self, name: &str) -> Self {
        let child = self.child(name, &self.data.clone());
        self.children.push(child);
        self
    }

    /// An observed child given as JSON.
    pub(crate) fn with_child(mut self, child: Value) -> Self {
        self.children.push(child);
        self
    }

    pub(crate) fn primary(&self) -> Value {
        let mut spec = json!({
            "replicas": self.replicas,
            "template": {"metadata": {"labels": self.labels}, "data": self.data},
        });
        if let Some(burst) = self.burst {
            spec["burst"] = json!(burst);
        }
        json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1",
            "kind": "ConfigMapSet",
            "metadata": {"name": SET_NAME, "namespace": "apps", "generation": 1},
            "spec": spec,
        })
    }

    pub(crate) fn view(&self) -> WorldView {
        WorldView::new(self.primary())
            .with_children(self.children.clone())
            .with_deleting(self.deleting)
    }

    /// Runs the plugin on this view; panics on a plugin error.
    pub(crate) fn reconcile(&self) -> Outcome {
        let outcome = ConfigMapSetReconciler::reconcile(self.view()).expect("reconcile succeeds");
        assert!(outcome.build_error().is_none(), "{:?}", outcome.build_error());
        outcome
    }

    fn child(&self, name: &str, data: &BTreeMap<String, String>) -> Value {
        let mut labels = self.labels.clone();
        labels.insert(SET_LABEL.to_owned(), SET_NAME.to_owned());
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"), "labels": labels},
            "data": data,
        })
    }
}

/// Names of the desired children, in outcome order; panics when the outcome leaves children alone.
pub(crate) fn child_names(outcome: &Outcome) -> Vec<String> {
    outcome
        .desired_children()
        .expect("the outcome declares its children")
        .iter()
        .map(|child| child["metadata"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}
