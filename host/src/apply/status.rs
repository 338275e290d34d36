//! The status the host writes: plugin status merged over the observed one, conditions merged by type,
//! `observedGeneration`, and the host's own `Reconciled` condition.

use serde_json::{Map, Value, json};

use crate::plugin::{Condition, ConditionStatus, RECONCILED_CONDITION};

/// How the reconcile went, for the `Reconciled` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconciledState {
    /// Whether it succeeded.
    pub ok: bool,
    /// CamelCase reason: `Succeeded`, `PluginError`, `Timeout`, ...
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

impl ReconciledState {
    /// A successful reconcile.
    pub fn succeeded() -> Self {
        Self {
            ok: true,
            reason: "Succeeded".into(),
            message: "the plugin's desired state was applied".into(),
        }
    }

    /// A failed reconcile.
    pub fn failed(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            ok: false,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Computes the status to write.
///
/// - `plugin_status` top-level keys replace the observed ones (`conditions` and `observedGeneration` are the
///   host's and are ignored there);
/// - each plugin condition is merged by `type`; `lastTransitionTime` moves only when `status` changes;
/// - `Reconciled` reflects `state`;
/// - `observedGeneration` is the primary's generation, on the status and on every condition written now.
pub fn desired_status(
    observed: Option<&Value>,
    plugin_status: Option<&Value>,
    plugin_conditions: &[Condition],
    state: &ReconciledState,
    generation: Option<i64>,
    now: &str,
) -> Value {
    let mut status: Map<String, Value> = observed.and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(Value::Object(from_plugin)) = plugin_status {
        for (key, value) in from_plugin {
            if key != "conditions" && key != "observedGeneration" {
                status.insert(key.clone(), value.clone());
            }
        }
    }
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|c| c.get("type").and_then(Value::as_str).is_some())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for condition in plugin_conditions {
        merge_condition(
            &mut conditions,
            &condition.condition_type,
            condition.status,
            &condition.reason,
            &condition.message,
            generation,
            now,
        );
    }
    let reconciled = if state.ok {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    merge_condition(
        &mut conditions,
        RECONCILED_CONDITION,
        reconciled,
        &state.reason,
        &state.message,
        generation,
        now,
    );
    status.insert("conditions".into(), Value::Array(conditions));
    if let Some(generation) = generation {
        status.insert("observedGeneration".into(), json!(generation));
    }
    Value::Object(status)
}

fn merge_condition(
    conditions: &mut Vec<Value>,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &str,
) {
    let mut fresh = json!({
        "type": type_,
        "status": status.as_str(),
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    });
    if let Some(generation) = generation {
        fresh["observedGeneration"] = json!(generation);
    }
    match conditions.iter_mut().find(|c| c["type"] == type_) {
        Some(existing) => {
            if existing["status"] == status.as_str()
                && let Some(time) = existing.get("lastTransitionTime").filter(|t| t.is_string())
            {
                fresh["lastTransitionTime"] = time.clone();
            }
            *existing = fresh;
        }
        None => conditions.push(fresh),
    }
}

/// The `Reconciled` condition of a status, if any: `(ok, reason)`.
pub fn reconciled_condition(status: Option<&Value>) -> Option<(bool, String)> {
    status?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == RECONCILED_CONDITION)
        .map(|c| {
            (
                c["status"] == "True",
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, status: ConditionStatus, reason: &str) -> Condition {
        Condition::new(type_, status, reason, format!("{type_} is {status:?}"))
    }

    #[test]
    fn first_status_carries_conditions_and_generation() {
        let status = desired_status(
            None,
            Some(&json!({"replicas": 2})),
            &[condition("Ready", ConditionStatus::False, "ScalingUp")],
            &ReconciledState::succeeded(),
            Some(3),
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(status["replicas"], 2);
        assert_eq!(status["observedGeneration"], 3);
        let conditions = status["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0]["type"], "Ready");
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[0]["observedGeneration"], 3);
        assert_eq!(conditions[1]["type"], "Reconciled");
        assert_eq!(conditions[1]["status"], "True");
        assert_eq!(conditions[1]["reason"], "Succeeded");
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let first = desired_status(
            None,
            None,
            &[condition("Ready", ConditionStatus::False, "ScalingUp")],
            &ReconciledState::succeeded(),
            Some(1),
            "T1",
        );
        let same = desired_status(
            Some(&first),
            None,
            &[condition("Ready", ConditionStatus::False, "StillScaling")],
            &ReconciledState::succeeded(),
            Some(2),
            "T2",
        );
        assert_eq!(same["conditions"][0]["lastTransitionTime"], "T1");
        assert_eq!(same["conditions"][0]["reason"], "StillScaling");
        assert_eq!(same["conditions"][0]["observedGeneration"], 2);
        let flipped = desired_status(
            Some(&same),
            None,
            &[condition("Ready", ConditionStatus::True, "AllReady")],
            &ReconciledState::succeeded(),
            Some(2),
            "T3",
        );
        assert_eq!(flipped["conditions"][0]["lastTransitionTime"], "T3");
        assert_eq!(
            flipped["conditions"][1]["lastTransitionTime"], "T1",
            "Reconciled stayed True"
        );
    }

    #[test]
    fn unchanged_inputs_give_an_identical_status() {
        let conditions = [condition("Ready", ConditionStatus::True, "AllReady")];
        let first = desired_status(
            None,
            Some(&json!({"a": 1})),
            &conditions,
            &ReconciledState::succeeded(),
            Some(1),
            "T1",
        );
        let again = desired_status(
            Some(&first),
            Some(&json!({"a": 1})),
            &conditions,
            &ReconciledState::succeeded(),
            Some(1),
            "T2",
        );
        assert_eq!(first, again);
    }

    #[test]
    fn failures_keep_plugin_conditions_and_flip_reconciled() {
        let good = desired_status(
            None,
            Some(&json!({"replicas": 1})),
            &[condition("Ready", ConditionStatus::True, "AllReady")],
            &ReconciledState::succeeded(),
            Some(1),
            "T1",
        );
        let failed = desired_status(
            Some(&good),
            None,
            &[],
            &ReconciledState::failed("Timeout", "too slow"),
            Some(2),
            "T2",
        );
        assert_eq!(failed["replicas"], 1);
        assert_eq!(failed["conditions"][0]["status"], "True");
        assert_eq!(failed["conditions"][1]["status"], "False");
        assert_eq!(failed["conditions"][1]["reason"], "Timeout");
        assert_eq!(failed["conditions"][1]["lastTransitionTime"], "T2");
        assert_eq!(reconciled_condition(Some(&failed)), Some((false, "Timeout".into())));
    }

    #[test]
    fn plugins_cannot_overwrite_host_owned_keys() {
        let status = desired_status(
            None,
            Some(&json!({"conditions": [], "observedGeneration": 99, "x": 1})),
            &[],
            &ReconciledState::succeeded(),
            Some(4),
            "T",
        );
        assert_eq!(status["observedGeneration"], 4);
        assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
        assert_eq!(status["x"], 1);
    }
}
