//! The replica logic: which ConfigMaps to keep, create and delete this round, and what to report.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::value::RawValue;
use wasm_reconciler_sdk::{Condition, Error, Event, ObservedChild, Outcome};

use crate::config_map::ConfigMapObject;
use crate::resource::{ConfigMapSetSpec, ConfigMapSetStatus, SET_LABEL};

/// Delay before the next round while creations or deletions remain beyond this round's burst.
pub const REQUEUE_WHILE_CONVERGING: Duration = Duration::from_millis(100);

/// One reconcile round of a set that is not being deleted.
///
/// Every desired replica (index `0..replicas`) is in the outcome as the full object built from the
/// template, so drifted replicas are corrected; at most `burst` missing replicas are added (lowest
/// indexes first), and at most `burst` excess children are left out and so deleted (names that are not
/// replicas first, then the highest indexes). Excess children kept for a later round are carried over
/// unchanged, read whole with `read`.
///
/// `observed` says of each child whether it contains `template`, the [`template_child`]. The replicas go to the
/// host as that one base and a name each.
pub fn converge(
    set_name: &str,
    spec: &ConfigMapSetSpec,
    template: &RawValue,
    observed: &[ObservedChild],
    read: impl Fn(&ObservedChild) -> Result<ConfigMapObject, Error>,
) -> Result<Outcome, Error> {
    let replicas = u32::try_from(spec.replicas).unwrap_or(0);
    let burst = burst(spec);
    // Replicas are found by index, not by a scan.
    let mut by_index = BTreeMap::new();
    for child in observed {
        if let Some(index) = child_index(set_name, &child.name) {
            by_index.insert(index, child);
        }
    }
    let mut outcome = Outcome::new().delete_all_children().base(template);
    let mut missing = 0_usize;
    let mut created = 0_usize;
    let mut drifted = 0_usize;
    for index in 0..replicas {
        match by_index.get(&index) {
            Some(child) => {
                drifted += usize::from(!child.contains);
                outcome = outcome.child_from_base_named(0, &child_name(set_name, index));
            }
            None => {
                missing += 1;
                if created < burst {
                    created += 1;
                    outcome = outcome.child_from_base_named(0, &child_name(set_name, index));
                }
            }
        }
    }
    let excess = scale_down_order(set_name, replicas, observed);
    let deleted = excess.len().min(burst);
    for child in &excess[deleted..] {
        outcome = outcome.child(&carried_over(&read(child)?));
    }

    let status = status_of(observed.len(), observed.iter().filter(|child| child.contains).count());
    let ready = status.ready_replicas == spec.replicas && excess.is_empty();
    outcome = outcome
        .status(&status)
        .condition(Condition::from_bool(
            "Ready",
            ready,
            if ready { "ReplicasReady" } else { "ReplicasNotReady" },
            format!(
                "{} of {} observed ConfigMaps match the template; {} desired, {} excess",
                status.ready_replicas,
                status.replicas,
                spec.replicas,
                excess.len()
            ),
        ))
        .condition(progressing(missing, excess.len(), drifted));
    if created > 0 {
        outcome = outcome.event(Event::normal(
            "ScalingUp",
            format!(
                "creating {created} ConfigMap(s), {} still missing after this round",
                missing - created
            ),
        ));
    }
    if deleted > 0 {
        outcome = outcome.event(Event::normal(
            "ScalingDown",
            format!(
                "deleting {deleted} ConfigMap(s), {} excess left after this round",
                excess.len() - deleted
            ),
        ));
    }
    if missing > created || excess.len() > deleted {
        outcome = outcome.requeue_after(REQUEUE_WHILE_CONVERGING);
    }
    Ok(outcome)
}

/// One reconcile round of a set being deleted: deletes up to `burst` children (highest indexes first),
/// keeps the rest (read whole with `read`), and reports `finalized` only once no child is observed.
pub fn drain(
    set_name: &str,
    spec: &ConfigMapSetSpec,
    observed: &[ObservedChild],
    read: impl Fn(&ObservedChild) -> Result<ConfigMapObject, Error>,
) -> Result<Outcome, Error> {
    let status = status_of(observed.len(), observed.iter().filter(|child| child.contains).count());
    let outcome = Outcome::new().status(&status).condition(Condition::status_false(
        "Ready",
        "Deleting",
        "the ConfigMapSet is being deleted",
    ));
    if observed.is_empty() {
        return Ok(outcome
            .delete_all_children()
            .condition(Condition::status_false("Progressing", "Drained", "no ConfigMap left"))
            .finalized());
    }
    let order = scale_down_order(set_name, 0, observed);
    let deleted = order.len().min(burst(spec));
    let remaining = order.len() - deleted;
    let mut outcome = outcome
        .delete_all_children()
        .condition(Condition::status_true(
            "Progressing",
            "Draining",
            format!("deleting {deleted} ConfigMap(s), {remaining} left after this round"),
        ))
        .event(Event::normal(
            "Draining",
            format!("deleting {deleted} ConfigMap(s), {remaining} left after this round"),
        ))
        .requeue_after(REQUEUE_WHILE_CONVERGING);
    for child in &order[deleted..] {
        outcome = outcome.child(&carried_over(&read(child)?));
    }
    Ok(outcome)
}

/// `<set>-<index>`.
pub fn child_name(set_name: &str, index: u32) -> String {
    format!("{set_name}-{index}")
}

/// The replica index of a child name, if it is exactly `<set>-<index>`.
pub fn child_index(set_name: &str, child_name: &str) -> Option<u32> {
    let digits = child_name.strip_prefix(set_name)?.strip_prefix('-')?;
    let index: u32 = digits.parse().ok()?;
    (index.to_string() == digits).then_some(index)
}

/// What every replica is made of and must contain, without a name: template labels plus the set label,
/// template annotations and data. An observed child contains it when it carries every such label, annotation
/// and data entry; extra entries do not count as drift, as under server-side apply they belong to other field
/// managers.
pub fn template_child(set_name: &str, spec: &ConfigMapSetSpec) -> ConfigMapObject {
    let mut child = ConfigMapObject::named(String::new());
    child.metadata.labels = desired_labels(set_name, spec);
    child.metadata.annotations = spec.template.metadata.annotations.clone();
    child.data = spec.template.data.clone();
    child
}

/// Children that are not desired replicas, in the order they are deleted: names that are not replicas
/// of this set first (by name), then the highest indexes.
pub fn scale_down_order<'a>(set_name: &str, replicas: u32, observed: &'a [ObservedChild]) -> Vec<&'a ObservedChild> {
    let mut excess: Vec<(Option<u32>, &str, &ObservedChild)> = observed
        .iter()
        .filter_map(|child| {
            let name = child.name.as_str();
            let index = child_index(set_name, name);
            (index.is_none_or(|index| index >= replicas)).then_some((index, name, child))
        })
        .collect();
    // Names are unique, so no two entries compare equal and an unstable sort gives the one order.
    excess.sort_unstable_by(|(index_a, name_a, _), (index_b, name_b, _)| match (index_a, index_b) {
        (None, None) => name_a.cmp(name_b),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(a),
    });
    excess.into_iter().map(|(_, _, child)| child).collect()
}

/// Status of `observed` children of which `matching` match the template.
fn status_of(observed: usize, matching: usize) -> ConfigMapSetStatus {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    ConfigMapSetStatus {
        replicas: count(observed),
        ready_replicas: count(matching),
        ..ConfigMapSetStatus::default()
    }
}

/// `Progressing`: True while replicas are missing, in excess or drifted (in that order of precedence),
/// False with reason `Stable` when nothing is left to do.
fn progressing(missing: usize, excess: usize, drifted: usize) -> Condition {
    let detail = format!("{missing} missing, {excess} excess, {drifted} drifted");
    let reason = if missing > 0 {
        "ScalingUp"
    } else if excess > 0 {
        "ScalingDown"
    } else if drifted > 0 {
        "Updating"
    } else {
        return Condition::status_false("Progressing", "Stable", detail);
    };
    Condition::status_true("Progressing", reason, detail)
}

/// An excess child kept for a later round, as observed (only the fields this plugin manages).
fn carried_over(child: &ConfigMapObject) -> ConfigMapObject {
    let mut kept = ConfigMapObject::named(child.metadata.name.clone());
    kept.metadata.labels = child.metadata.labels.clone();
    kept.metadata.annotations = child.metadata.annotations.clone();
    kept.data = child.data.clone();
    kept.binary_data = child.binary_data.clone();
    kept
}

fn desired_labels(set_name: &str, spec: &ConfigMapSetSpec) -> BTreeMap<String, String> {
    let mut labels = spec.template.metadata.labels.clone();
    labels.insert(SET_LABEL.to_owned(), set_name.to_owned());
    labels
}

fn burst(spec: &ConfigMapSetSpec) -> usize {
    usize::try_from(spec.burst).unwrap_or(0).max(1)
}
