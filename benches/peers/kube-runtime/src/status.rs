//! The status to write: observed status with this round's counts, conditions merged by type
//! (`lastTransitionTime` moves only when `status` changes) and `observedGeneration`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::replicas::{ConditionState, Round};
use crate::resource::ConfigMapSetStatus;

/// The condition saying how the reconcile went.
pub const RECONCILED: &str = "Reconciled";

/// How the reconcile went, for the `Reconciled` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// Whether it succeeded.
    pub ok: bool,
    /// CamelCase reason: `Succeeded` or `ApplyFailed`.
    pub reason: &'static str,
    /// Human-readable detail.
    pub message: String,
}

impl Reconciled {
    /// A successful reconcile.
    pub fn succeeded() -> Self {
        Self {
            ok: true,
            reason: "Succeeded",
            message: "the desired state was applied".to_owned(),
        }
    }

    /// A reconcile whose writes failed.
    pub fn apply_failed(message: String) -> Self {
        Self {
            ok: false,
            reason: "ApplyFailed",
            message,
        }
    }
}

/// The status after `round`, starting from `observed`.
pub fn desired_status(
    observed: Option<&ConfigMapSetStatus>,
    round: &Round,
    reconciled: &Reconciled,
    generation: Option<i64>,
    now: &Time,
) -> ConfigMapSetStatus {
    let mut status = observed.cloned().unwrap_or_default();
    status.replicas = round.replicas;
    status.ready_replicas = round.ready_replicas;
    status.observed_generation = generation;
    for condition in &round.conditions {
        merge_condition(&mut status.conditions, condition, generation, now);
    }
    let reconciled = ConditionState {
        type_: RECONCILED,
        status: reconciled.ok,
        reason: reconciled.reason,
        message: reconciled.message.clone(),
    };
    merge_condition(&mut status.conditions, &reconciled, generation, now);
    status
}

fn merge_condition(conditions: &mut Vec<Condition>, state: &ConditionState, generation: Option<i64>, now: &Time) {
    let status = if state.status { "True" } else { "False" };
    let mut fresh = Condition {
        type_: state.type_.to_owned(),
        status: status.to_owned(),
        reason: state.reason.to_owned(),
        message: state.message.clone(),
        last_transition_time: now.clone(),
        observed_generation: generation,
    };
    match conditions.iter_mut().find(|existing| existing.type_ == state.type_) {
        Some(existing) => {
            if existing.status == status {
                fresh.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = fresh;
        }
        None => conditions.push(fresh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn round(ready: bool) -> Round {
        Round {
            replicas: 3,
            ready_replicas: 3,
            conditions: vec![ConditionState {
                type_: "Ready",
                status: ready,
                reason: if ready { "ReplicasReady" } else { "ReplicasNotReady" },
                message: "m".to_owned(),
            }],
            ..Round::default()
        }
    }

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let earlier = Time(Timestamp::from_second(1_000).unwrap());
        let later = Time(Timestamp::from_second(2_000).unwrap());
        let first = desired_status(None, &round(false), &Reconciled::succeeded(), Some(1), &earlier);
        let same = desired_status(Some(&first), &round(false), &Reconciled::succeeded(), Some(1), &later);
        assert_eq!(
            same, first,
            "an unchanged round gives an unchanged status, so nothing is written"
        );
        let flipped = desired_status(Some(&first), &round(true), &Reconciled::succeeded(), Some(1), &later);
        assert_eq!(flipped.conditions[0].last_transition_time, later);
        assert_eq!(flipped.conditions[1].type_, RECONCILED);
        assert_eq!(flipped.conditions[1].last_transition_time, earlier);
    }
}
