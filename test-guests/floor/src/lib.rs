//! A plugin for the plugin-runtime benchmark that does one part of `configmapset`'s work, so the cost of each
//! part of a call can be told apart: the `work` key of its configuration picks how far it goes.
//!
//! - `none` (the default): reads nothing and leaves the children alone — the cost of the call itself and of
//!   handing the view over.
//! - `read`: also reads the primary's spec and every child into the same shapes `configmapset` reads.
//! - `write`: also writes each child back as a desired child (name, labels, annotations, data), as
//!   `configmapset` writes its replicas.
//! - `fetch`: reads the spec, then each label, annotation and data entry `configmapset` compares, of each
//!   replica `<set>-<index>`, through one host call each instead of from the view: `host.get` of a ConfigMap
//!   named `<child>/<labels|annotations|data>/<key>`, which the benchmark's host answers with the entry's
//!   raw text. It counts the entries equal to the template (the set label to the set's name) and answers
//!   with that count as its requeue delay in milliseconds. Only the benchmark's host serves such reads.
//! - `fetchBatched`: as `fetch`, with one host call per replica: `host.list` of ConfigMaps with the "selector"
//!   `<child>|labels|<key>,…|annotations|<key>,…|data|<key>,…`, answered with the entries' raw texts in that
//!   order.
//!
//! It declares what `configmapset` declares, so the host checks its outcome the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wasm_reconciler_sdk::{ControllerSpec, Error, Gvk, ObjectMeta, Outcome, Reconciler, WorldView};

/// The floor reconciler.
#[derive(Debug)]
pub struct Floor;

/// How far a call goes.
#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Work {
    /// Reads nothing.
    #[default]
    None,
    /// Reads the primary's spec and the children.
    Read,
    /// Reads, then writes each child back as desired.
    Write,
    /// Reads the spec, and each compared entry of each replica through a host call.
    Fetch,
    /// Reads the spec, and the compared entries of each replica through one host call per replica.
    FetchBatched,
}

#[derive(Debug, Default, Deserialize)]
struct Config {
    #[serde(default)]
    work: Work,
}

/// The part of a `ConfigMapSet` that `configmapset` reads.
#[derive(Deserialize)]
struct SetObject {
    spec: SetSpec,
}

#[derive(Deserialize)]
struct SetSpec {
    #[serde(default)]
    replicas: i32,
    #[serde(default)]
    template: Template,
}

#[derive(Deserialize, Default)]
struct Template {
    #[serde(default)]
    metadata: TemplateMetadata,
    #[serde(default)]
    data: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct TemplateMetadata {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The label `configmapset` puts on every replica, naming its set.
const SET_LABEL: &str = "examples.wasm-reconciler.io/configmapset";

/// A ConfigMap as `configmapset` reads and writes it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigMapObject {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    binary_data: BTreeMap<String, String>,
}

fn config_map_kind() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

impl Reconciler for Floor {
    fn describe() -> ControllerSpec {
        ControllerSpec::new(Gvk::new("examples.wasm-reconciler.io", "v1alpha1", "ConfigMapSet"))
            .owns(config_map_kind())
            .finalizer("examples.wasm-reconciler.io/configmapset")
    }

    fn reconcile(view: WorldView) -> Result<Outcome, Error> {
        let Config { work } = view.config()?;
        if work == Work::None {
            return Ok(Outcome::new().leave_children_alone());
        }
        let SetObject { spec } = view.primary()?;
        if matches!(work, Work::Fetch | Work::FetchBatched) {
            let matching = fetch_and_compare(view.name(), &spec, work == Work::FetchBatched)?;
            return Ok(Outcome::new()
                .leave_children_alone()
                .requeue_after(std::time::Duration::from_millis(matching)));
        }
        let observed: Vec<ConfigMapObject> = view.children_as(&config_map_kind())?;
        // Keeps the reads from being optimised away without comparing anything.
        let read = usize::try_from(spec.replicas).unwrap_or(0) + spec.template.data.len() + observed.len();
        if work == Work::Read {
            return Ok(Outcome::new()
                .leave_children_alone()
                .requeue_after(std::time::Duration::from_millis(
                    u64::try_from(read).unwrap_or(u64::MAX),
                )));
        }
        let mut outcome = Outcome::new().delete_all_children();
        for child in &observed {
            outcome = outcome.child(child);
        }
        Ok(outcome)
    }
}

/// Reads every entry `configmapset` compares of every replica through a host call each, or one call per
/// replica when `batched`; the number equal to the template.
fn fetch_and_compare(set_name: &str, spec: &SetSpec, batched: bool) -> Result<u64, Error> {
    use wasm_reconciler_sdk::bindings::wasm_reconciler::plugin::{host, types};
    let kind = types::Gvk {
        group: String::new(),
        version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
    };
    let template = &spec.template;
    let set_label = (SET_LABEL.to_owned(), set_name.to_owned());
    // The entries compared, the same for every replica.
    let sections: [(&str, Vec<(&String, &String)>); 3] = [
        (
            "labels",
            template
                .metadata
                .labels
                .iter()
                .chain([(&set_label.0, &set_label.1)])
                .collect(),
        ),
        ("annotations", template.metadata.annotations.iter().collect()),
        ("data", template.data.iter().collect()),
    ];
    // `|<section>|<key>,…` for each section: the tail of every batch read.
    let batch_tail: String = sections
        .iter()
        .map(|(section, entries)| {
            let keys: Vec<&str> = entries.iter().map(|(key, _)| key.as_str()).collect();
            format!("|{section}|{}", keys.join(","))
        })
        .collect();
    let desired = || {
        sections
            .iter()
            .flat_map(|(section, entries)| entries.iter().map(move |entry| (*section, entry)))
    };
    let mut matching = 0;
    for index in 0..u32::try_from(spec.replicas).unwrap_or(0) {
        let child = format!("{set_name}-{index}");
        if batched {
            let observed = host::list(&kind, None, Some(&format!("{child}{batch_tail}"))).map_err(Error::msg)?;
            matching += observed
                .iter()
                .zip(desired())
                .map(|(observed, (_, (_, value)))| u64::from(observed == *value))
                .sum::<u64>();
        } else {
            for (section, (key, value)) in desired() {
                let observed = host::get(&kind, None, &format!("{child}/{section}/{key}")).map_err(Error::msg)?;
                matching += u64::from(observed.as_deref() == Some(value.as_str()));
            }
        }
    }
    Ok(matching)
}

wasm_reconciler_sdk::export_reconciler!(Floor);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(work: &str) -> WorldView {
        let child = |index: u32| {
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("s-{index}"), "uid": "u", "labels": {"app": "s"}},
                "data": {"k": "v\n"},
            })
        };
        WorldView::new(json!({
            "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "ConfigMapSet",
            "metadata": {"name": "s", "namespace": "apps"},
            "spec": {"replicas": 2, "template": {"data": {"k": "v\n"}}},
        }))
        .with_children([child(0), child(1)])
        .with_config(json!({ "work": work }))
    }

    #[test]
    fn none_reads_nothing_and_leaves_the_children_alone() {
        let outcome = Floor::reconcile(view("none")).expect("reconciles");
        assert!(outcome.leaves_children_alone());
        assert_eq!(outcome.requeue_interval(), None);
    }

    #[test]
    fn read_reads_the_spec_and_every_child() {
        let outcome = Floor::reconcile(view("read")).expect("reconciles");
        assert!(outcome.leaves_children_alone());
        // replicas (2) + template entries (1) + children (2).
        assert_eq!(outcome.requeue_interval(), Some(std::time::Duration::from_millis(5)));
    }

    #[test]
    fn write_returns_each_child_with_only_the_managed_fields() {
        let outcome = Floor::reconcile(view("write")).expect("reconciles");
        let children = outcome.desired_children().expect("declares the children");
        assert_eq!(children.len(), 2);
        assert_eq!(
            children[1],
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "s-1", "labels": {"app": "s"}},
                "data": {"k": "v\n"},
            })
        );
        assert!(children.iter().all(|child| child["metadata"].get("uid").is_none()));
    }

    #[test]
    fn an_unknown_work_is_an_error() {
        let error = Floor::reconcile(view("everything")).expect_err("refuses");
        assert!(error.to_string().contains("everything"), "{error}");
    }
}
