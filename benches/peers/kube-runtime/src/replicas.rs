//! The replica logic, free of I/O: which ConfigMaps to write and delete this round, and what to report.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::resource::{ConfigMapSetSpec, SET_LABEL};

/// Delay before the next round while creations or deletions remain beyond this round's burst.
pub const REQUEUE_WHILE_CONVERGING: Duration = Duration::from_millis(100);

/// A condition this controller reports: type, whether it holds, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionState {
    /// `Ready` or `Progressing`.
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: bool,
    /// CamelCase reason.
    pub reason: &'static str,
    /// Human-readable detail.
    pub message: String,
}

/// A Normal event to publish on the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// `ScalingUp`, `ScalingDown` or `Draining`.
    pub reason: &'static str,
    /// What happens this round.
    pub note: String,
}

/// What one reconcile round does.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    /// Children to write with server-side apply: missing replicas within the burst and drifted ones.
    pub apply: Vec<ConfigMap>,
    /// Children to delete, as `(name, uid)`.
    pub delete: Vec<(String, Option<String>)>,
    /// Children observed.
    pub replicas: i32,
    /// Observed children matching the template.
    pub ready_replicas: i32,
    /// `Ready` and `Progressing`.
    pub conditions: Vec<ConditionState>,
    /// Events to publish.
    pub events: Vec<Announcement>,
    /// Whether work remains for another round.
    pub requeue: bool,
    /// Draining only: no child is left, the finalizer may go.
    pub finalized: bool,
}

/// One round of a set that is not being deleted.
///
/// Missing replicas are created lowest index first, at most `burst`; replicas that no longer match the template
/// are rewritten; at most `burst` excess children are deleted (names that are not replicas first, then the
/// highest indexes). Replicas that match are left alone.
pub fn converge(set_name: &str, spec: &ConfigMapSetSpec, observed: &[&ConfigMap]) -> Round {
    let replicas = u32::try_from(spec.replicas).unwrap_or(0);
    let burst = burst(spec);
    let mut round = observed_counts(set_name, spec, observed);
    let (mut missing, mut created, mut drifted) = (0_usize, 0_usize, 0_usize);
    for index in 0..replicas {
        let name = child_name(set_name, index);
        match observed
            .iter()
            .find(|child| child.metadata.name.as_deref() == Some(&name))
        {
            Some(child) if matches_template(set_name, spec, child) => {}
            Some(_) => {
                drifted += 1;
                round.apply.push(desired_child(set_name, spec, index));
            }
            None => {
                missing += 1;
                if created < burst {
                    created += 1;
                    round.apply.push(desired_child(set_name, spec, index));
                }
            }
        }
    }
    let excess = scale_down_order(set_name, replicas, observed);
    let deleted = excess.len().min(burst);
    round.delete = excess[..deleted]
        .iter()
        .map(|child| {
            (
                child.metadata.name.clone().unwrap_or_default(),
                child.metadata.uid.clone(),
            )
        })
        .collect();

    let ready = round.ready_replicas == spec.replicas && excess.is_empty();
    round.conditions.push(ConditionState {
        type_: "Ready",
        status: ready,
        reason: if ready { "ReplicasReady" } else { "ReplicasNotReady" },
        message: format!(
            "{} of {} observed ConfigMaps match the template; {} desired, {} excess",
            round.ready_replicas,
            round.replicas,
            spec.replicas,
            excess.len()
        ),
    });
    round.conditions.push(progressing(missing, excess.len(), drifted));
    if created > 0 {
        round.events.push(Announcement {
            reason: "ScalingUp",
            note: format!(
                "creating {created} ConfigMap(s), {} still missing after this round",
                missing - created
            ),
        });
    }
    if deleted > 0 {
        round.events.push(Announcement {
            reason: "ScalingDown",
            note: format!(
                "deleting {deleted} ConfigMap(s), {} excess left after this round",
                excess.len() - deleted
            ),
        });
    }
    round.requeue = missing > created || excess.len() > deleted;
    round
}

/// One round of a set being deleted: up to `burst` children go (highest indexes first); `finalized` once none
/// is observed.
pub fn drain(set_name: &str, spec: &ConfigMapSetSpec, observed: &[&ConfigMap]) -> Round {
    let mut round = observed_counts(set_name, spec, observed);
    round.conditions.push(ConditionState {
        type_: "Ready",
        status: false,
        reason: "Deleting",
        message: "the ConfigMapSet is being deleted".to_owned(),
    });
    if observed.is_empty() {
        round.conditions.push(ConditionState {
            type_: "Progressing",
            status: false,
            reason: "Drained",
            message: "no ConfigMap left".to_owned(),
        });
        round.finalized = true;
        return round;
    }
    let order = scale_down_order(set_name, 0, observed);
    let deleted = order.len().min(burst(spec));
    let message = format!(
        "deleting {deleted} ConfigMap(s), {} left after this round",
        order.len() - deleted
    );
    round.delete = order[..deleted]
        .iter()
        .map(|child| {
            (
                child.metadata.name.clone().unwrap_or_default(),
                child.metadata.uid.clone(),
            )
        })
        .collect();
    round.conditions.push(ConditionState {
        type_: "Progressing",
        status: true,
        reason: "Draining",
        message: message.clone(),
    });
    round.events.push(Announcement {
        reason: "Draining",
        note: message,
    });
    round.requeue = true;
    round
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

/// The desired replica `index`: template labels plus the set label, template annotations and data. Namespace
/// and owner reference are added by the caller.
pub fn desired_child(set_name: &str, spec: &ConfigMapSetSpec, index: u32) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(child_name(set_name, index)),
            labels: Some(desired_labels(set_name, spec)),
            annotations: non_empty(&spec.template.metadata.annotations),
            ..ObjectMeta::default()
        },
        data: non_empty(&spec.template.data),
        ..ConfigMap::default()
    }
}

/// Whether an observed child carries every desired label, annotation and data entry (extra entries belong to
/// other field managers and are not drift).
pub fn matches_template(set_name: &str, spec: &ConfigMapSetSpec, child: &ConfigMap) -> bool {
    contains_all(child.metadata.labels.as_ref(), &desired_labels(set_name, spec))
        && contains_all(child.metadata.annotations.as_ref(), &spec.template.metadata.annotations)
        && contains_all(child.data.as_ref(), &spec.template.data)
}

/// Children that are not desired replicas, in deletion order: non-replica names first (by name), then the
/// highest indexes.
pub fn scale_down_order<'a>(set_name: &str, replicas: u32, observed: &[&'a ConfigMap]) -> Vec<&'a ConfigMap> {
    let mut excess: Vec<(Option<u32>, &str, &ConfigMap)> = observed
        .iter()
        .filter_map(|child| {
            let name = child.metadata.name.as_deref().unwrap_or_default();
            let index = child_index(set_name, name);
            index
                .is_none_or(|index| index >= replicas)
                .then_some((index, name, *child))
        })
        .collect();
    excess.sort_by(|(index_a, name_a, _), (index_b, name_b, _)| match (index_a, index_b) {
        (None, None) => name_a.cmp(name_b),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(a),
    });
    excess.into_iter().map(|(_, _, child)| child).collect()
}

fn observed_counts(set_name: &str, spec: &ConfigMapSetSpec, observed: &[&ConfigMap]) -> Round {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    Round {
        replicas: count(observed.len()),
        ready_replicas: count(
            observed
                .iter()
                .filter(|child| matches_template(set_name, spec, child))
                .count(),
        ),
        ..Round::default()
    }
}

/// `Progressing`: True while replicas are missing, in excess or drifted (in that order of precedence), False
/// with reason `Stable` when nothing is left to do.
fn progressing(missing: usize, excess: usize, drifted: usize) -> ConditionState {
    let message = format!("{missing} missing, {excess} excess, {drifted} drifted");
    let reason = if missing > 0 {
        "ScalingUp"
    } else if excess > 0 {
        "ScalingDown"
    } else if drifted > 0 {
        "Updating"
    } else {
        "Stable"
    };
    ConditionState {
        type_: "Progressing",
        status: reason != "Stable",
        reason,
        message,
    }
}

fn desired_labels(set_name: &str, spec: &ConfigMapSetSpec) -> BTreeMap<String, String> {
    let mut labels = spec.template.metadata.labels.clone();
    labels.insert(SET_LABEL.to_owned(), set_name.to_owned());
    labels
}

fn contains_all(actual: Option<&BTreeMap<String, String>>, expected: &BTreeMap<String, String>) -> bool {
    expected
        .iter()
        .all(|(key, value)| actual.and_then(|actual| actual.get(key)) == Some(value))
}

fn non_empty(map: &BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then(|| map.clone())
}

fn burst(spec: &ConfigMapSetSpec) -> usize {
    usize::try_from(spec.burst).unwrap_or(0).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{ConfigMapTemplate, TemplateMetadata};

    fn spec(replicas: i32, burst: i32) -> ConfigMapSetSpec {
        ConfigMapSetSpec {
            replicas,
            burst,
            template: ConfigMapTemplate {
                metadata: TemplateMetadata {
                    labels: BTreeMap::from([("app".to_owned(), "demo".to_owned())]),
                    annotations: BTreeMap::new(),
                },
                data: BTreeMap::from([("greeting".to_owned(), "hello".to_owned())]),
            },
        }
    }

    fn observed(spec: &ConfigMapSetSpec, indexes: &[u32]) -> Vec<ConfigMap> {
        indexes
            .iter()
            .map(|&index| desired_child("demo", spec, index))
            .collect()
    }

    #[test]
    fn slow_start_creates_at_most_burst_and_requeues() {
        let spec = spec(5, 2);
        let children = observed(&spec, &[0, 1]);
        let refs: Vec<&ConfigMap> = children.iter().collect();
        let round = converge("demo", &spec, &refs);
        let names: Vec<_> = round.apply.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["demo-2", "demo-3"]);
        assert!(round.requeue);
        assert_eq!(round.conditions[1].reason, "ScalingUp");
        assert_eq!(
            round.events[0].note,
            "creating 2 ConfigMap(s), 1 still missing after this round"
        );
    }

    #[test]
    fn steady_state_writes_nothing_and_is_ready() {
        let spec = spec(3, 10);
        let children = observed(&spec, &[0, 1, 2]);
        let refs: Vec<&ConfigMap> = children.iter().collect();
        let round = converge("demo", &spec, &refs);
        assert!(round.apply.is_empty() && round.delete.is_empty() && !round.requeue);
        assert!(round.conditions[0].status);
        assert_eq!(round.conditions[1].reason, "Stable");
    }

    #[test]
    fn scale_down_deletes_highest_indexes_first() {
        let spec = spec(1, 2);
        let children = observed(&spec, &[0, 1, 2, 3]);
        let refs: Vec<&ConfigMap> = children.iter().collect();
        let round = converge("demo", &spec, &refs);
        let names: Vec<_> = round.delete.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["demo-3", "demo-2"]);
        assert!(round.requeue);
    }

    #[test]
    fn drain_finalizes_only_when_no_child_is_left() {
        let spec = spec(3, 2);
        let children = observed(&spec, &[0, 1, 2]);
        let refs: Vec<&ConfigMap> = children.iter().collect();
        let round = drain("demo", &spec, &refs);
        assert_eq!(round.delete.len(), 2);
        assert!(!round.finalized && round.requeue);
        let round = drain("demo", &spec, &[]);
        assert!(round.finalized && round.delete.is_empty());
    }
}
