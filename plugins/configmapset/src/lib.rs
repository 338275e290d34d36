//! `configmapset`: a wasm-reconciler plugin keeping N ConfigMaps from a template (the ReplicaSet pattern).
//!
//! A `ConfigMapSet` (`examples.wasm-reconciler.io/v1alpha1`) names a replica count, a ConfigMap
//! template and a burst size. The plugin keeps ConfigMaps `<set>-0` … `<set>-<replicas-1>` equal to the
//! template, creating and deleting at most `burst` per reconcile and asking to be requeued for the rest
//! (slow start). Status reports observed and ready replicas with `Ready` and `Progressing` conditions; a
//! finalizer drains the children in bursts before the set goes away.

pub mod config_map;
pub mod keys;
pub mod replicas;
pub mod resource;

use serde::Deserialize;

use crate::config_map::ConfigMapObject;
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, ObservedChild, Outcome, Reconciler, WorldView, ensure};

#[cfg(feature = "crd")]
pub use resource::{ConfigMapSet, crd_yaml};
pub use resource::{ConfigMapSetSpec, ConfigMapSetStatus, ConfigMapTemplate, TemplateMetadata};

/// The plugin: reconciles `ConfigMapSet`s, owns `ConfigMap`s.
#[derive(Debug)]
pub struct ConfigMapSetReconciler;

/// The part of a `ConfigMapSet` the plugin reads.
#[derive(Deserialize)]
struct ConfigMapSetObject {
    spec: ConfigMapSetSpec,
}

impl Reconciler for ConfigMapSetReconciler {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new(resource::GROUP, resource::VERSION, resource::KIND))
            .owns(config_map_kind())
            .finalizer(resource::FINALIZER)
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let ConfigMapSetObject { spec } = view.primary()?;
        ensure!(
            spec.replicas >= 0,
            "spec.replicas must not be negative, got {}",
            spec.replicas
        );
        ensure!(spec.burst >= 1, "spec.burst must be at least 1, got {}", spec.burst);
        // Which children already carry the template is asked of the view: under contract 0.3 the host compares its
        // own copies and hands over only names; a child is read whole only when it is carried over.
        // The template child is written once: it is both what every replica must contain and the base they are made
        // from.
        let template = serde_json::value::to_raw_value(&replicas::template_child(view.name(), &spec))?;
        let observed = view.children_containing(&config_map_kind(), &template)?;
        let read = |child: &ObservedChild| view.child_as::<ConfigMapObject>(child);
        if view.deleting() {
            // The drain writes no template, so a template the API server would refuse does not hold it up.
            return replicas::drain(view.name(), &spec, &observed, read);
        }
        keys::check_template(&spec.template).map_err(Error::msg)?;
        replicas::converge(view.name(), &spec, &template, &observed, read)
    }
}

/// Core `v1` ConfigMap, the kind of every child.
fn config_map_kind() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

#[cfg(not(feature = "contract-0-1"))]
wasm_reconciler_sdk::export_reconciler!(ConfigMapSetReconciler, contract = "0.3");
#[cfg(feature = "contract-0-1")]
wasm_reconciler_sdk::export_reconciler!(ConfigMapSetReconciler);

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
