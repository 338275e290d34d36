//! `webapp`: a wasm-reconciler plugin running a web application, the canonical operator.
//!
//! A `WebApp` (`examples.wasm-reconciler.io/v1alpha1`) names an image, a replica count, a port and an
//! optional configuration map. The plugin keeps a Deployment and a ClusterIP Service named after it,
//! plus a ConfigMap `<name>-config` holding the configuration, which the container receives as
//! environment variables; a configuration change rolls the pods through a hash annotation on the pod
//! template. Status and the `Ready` condition come from the observed Deployment.

pub mod children;
pub mod config_hash;
pub mod readiness;
pub mod resource;

use serde::Deserialize;
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, Outcome, Reconciler, WorldView, ensure};

use crate::readiness::ObservedDeployment;
#[cfg(feature = "crd")]
pub use resource::{WebApp, crd_yaml};
pub use resource::{WebAppSpec, WebAppStatus};

/// The plugin: reconciles `WebApp`s, owns Deployments, Services and ConfigMaps.
#[derive(Debug)]
pub struct WebAppReconciler;

/// The part of a `WebApp` the plugin reads.
#[derive(Deserialize)]
struct WebAppObject {
    spec: WebAppSpec,
}

impl Reconciler for WebAppReconciler {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new(resource::GROUP, resource::VERSION, resource::KIND))
            .owns(children::deployment_kind())
            .owns(children::service_kind())
            .owns(children::config_map_kind())
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let WebAppObject { spec } = view.primary()?;
        ensure!(!spec.image.is_empty(), "spec.image must not be empty");
        ensure!(
            spec.replicas >= 0,
            "spec.replicas must not be negative, got {}",
            spec.replicas
        );
        ensure!(
            (1..=65535).contains(&spec.port),
            "spec.port must be between 1 and 65535, got {}",
            spec.port
        );
        // The keys become the ConfigMap's: one the API server refuses would fail every write of it.
        if let Some(key) = spec
            .config
            .iter()
            .flatten()
            .map(|(key, _)| key)
            .find(|key| !children::is_config_map_key(key))
        {
            wasm_reconciler_sdk::bail!(
                "spec.config: `{key}` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and '.', \
                 and not `.` or `..`"
            );
        }
        let name = view.name();
        let observed = ObservedDeployment::named(&view, name)?;

        let mut outcome = Outcome::new()
            .child(&children::deployment(name, &spec))
            .child(&children::service(name, &spec));
        if let Some(config_map) = children::config_map(name, &spec) {
            outcome = outcome.child(&config_map);
        }
        let namespace = view.namespace().unwrap_or("default");
        Ok(outcome
            .status(&readiness::status(&spec, name, namespace, observed.as_ref()))
            .condition(readiness::ready_condition(&spec, observed.as_ref())))
    }
}

wasm_reconciler_sdk::export_reconciler!(WebAppReconciler);

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
