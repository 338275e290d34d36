//! Status and the `Ready` condition, derived from the observed Deployment.

use serde::Deserialize;
use wasm_reconciler_sdk::{Condition, Error, WorldView};

use crate::children::deployment_kind;
use crate::resource::{WebAppSpec, WebAppStatus};

/// The parts of an observed Deployment that readiness depends on.
///
/// Deliberately not `k8s_openapi::api::apps::v1::Deployment`: deserialising the whole Deployment (pod
/// template included) would pull its deserialisers into the component for four numbers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ObservedDeployment {
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `status.readyReplicas`.
    pub ready_replicas: i32,
    /// `status.availableReplicas`.
    pub available_replicas: i32,
}

#[derive(Deserialize)]
struct DeploymentView {
    #[serde(default)]
    metadata: MetadataView,
    #[serde(default)]
    status: Option<StatusView>,
}

#[derive(Deserialize, Default)]
struct MetadataView {
    #[serde(default)]
    name: String,
    generation: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    observed_generation: Option<i64>,
    ready_replicas: Option<i32>,
    available_replicas: Option<i32>,
}

impl ObservedDeployment {
    /// Reads the fields readiness needs from the observed Deployment called `name`, if there is one.
    pub fn named(view: &WorldView, name: &str) -> Result<Option<Self>, Error> {
        let deployments: Vec<DeploymentView> = view
            .children_as(&deployment_kind())
            .map_err(|error| error.context("reading the observed Deployment"))?;
        Ok(deployments
            .into_iter()
            .find(|deployment| deployment.metadata.name == name)
            .map(|deployment| {
                let status = deployment.status.unwrap_or_default();
                Self {
                    generation: deployment.metadata.generation,
                    observed_generation: status.observed_generation,
                    ready_replicas: status.ready_replicas.unwrap_or(0),
                    available_replicas: status.available_replicas.unwrap_or(0),
                }
            }))
    }
}

/// `http://<name>.<namespace>.svc:<port>`.
pub fn service_url(name: &str, namespace: &str, port: i32) -> String {
    format!("http://{name}.{namespace}.svc:{port}")
}

/// Status from the observed Deployment (zero replicas when there is none yet).
pub fn status(spec: &WebAppSpec, name: &str, namespace: &str, observed: Option<&ObservedDeployment>) -> WebAppStatus {
    WebAppStatus {
        ready_replicas: observed.map_or(0, |deployment| deployment.ready_replicas),
        available_replicas: observed.map_or(0, |deployment| deployment.available_replicas),
        url: Some(service_url(name, namespace, spec.port)),
        ..WebAppStatus::default()
    }
}

/// `Ready`: True (`Available`) once the Deployment has rolled out its current generation with at least
/// `spec.replicas` available pods; False with `DeploymentMissing` or `Progressing` otherwise.
pub fn ready_condition(spec: &WebAppSpec, observed: Option<&ObservedDeployment>) -> Condition {
    let Some(deployment) = observed else {
        return Condition::status_false("Ready", "DeploymentMissing", "the Deployment does not exist yet");
    };
    let rolled_out = match (deployment.observed_generation, deployment.generation) {
        (Some(observed), Some(current)) => observed >= current,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let available = format!("{}/{} replicas available", deployment.available_replicas, spec.replicas);
    if rolled_out && deployment.available_replicas >= spec.replicas {
        Condition::status_true("Ready", "Available", available)
    } else if rolled_out {
        Condition::status_false("Ready", "Progressing", available)
    } else {
        Condition::status_false(
            "Ready",
            "Progressing",
            format!("the Deployment has not observed its latest generation yet; {available}"),
        )
    }
}
