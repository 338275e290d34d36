//! Conditions a plugin asserts about its primary object (`record condition`).

use serde::{Deserialize, Serialize};

/// Status of a condition, as in Kubernetes `metav1.Condition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`.
    Unknown,
}

impl ConditionStatus {
    /// The Kubernetes spelling: `True`, `False` or `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// A condition for `.status.conditions` of the primary object.
///
/// The host merges conditions by type, sets `observedGeneration` and moves `lastTransitionTime` only when
/// the status changes. Type and reason are CamelCase (`Ready`, `ScalingUp`).
///
/// ```
/// use wasm_reconciler_contract::{Condition, ConditionStatus};
///
/// let ready = Condition::status_true("Ready", "Available", "3/3 replicas available");
/// assert_eq!(ready.status, ConditionStatus::True);
///
/// let progressing = Condition::from_bool("Progressing", false, "Stable", "nothing to do");
/// assert_eq!(progressing, Condition::status_false("Progressing", "Stable", "nothing to do"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// CamelCase condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// Whether the condition holds.
    pub status: ConditionStatus,
    /// CamelCase machine-readable reason, e.g. `ScalingUp`.
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

impl Condition {
    /// A condition with every field given.
    pub fn new(
        condition_type: impl Into<String>,
        status: ConditionStatus,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            condition_type: condition_type.into(),
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// A condition with status `True`.
    pub fn status_true(
        condition_type: impl Into<String>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(condition_type, ConditionStatus::True, reason, message)
    }

    /// A condition with status `False`.
    pub fn status_false(
        condition_type: impl Into<String>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(condition_type, ConditionStatus::False, reason, message)
    }

    /// A condition with status `Unknown`.
    pub fn status_unknown(
        condition_type: impl Into<String>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(condition_type, ConditionStatus::Unknown, reason, message)
    }

    /// A condition whose status is `True` when `holds`, else `False`.
    pub fn from_bool(
        condition_type: impl Into<String>,
        holds: bool,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(condition_type, holds.into(), reason, message)
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_set_the_status() {
        assert_eq!(Condition::status_true("Ready", "R", "m").status, ConditionStatus::True);
        assert_eq!(
            Condition::status_false("Ready", "R", "m").status,
            ConditionStatus::False
        );
        assert_eq!(
            Condition::status_unknown("Ready", "R", "m").status,
            ConditionStatus::Unknown
        );
    }

    #[test]
    fn from_bool_maps_to_true_or_false() {
        assert!(Condition::from_bool("Ready", true, "R", "m").is_true());
        assert_eq!(
            Condition::from_bool("Ready", false, "R", "m").status,
            ConditionStatus::False
        );
    }

    #[test]
    fn status_has_kubernetes_spelling() {
        assert_eq!(ConditionStatus::True.as_str(), "True");
        assert_eq!(ConditionStatus::False.as_str(), "False");
        assert_eq!(ConditionStatus::Unknown.as_str(), "Unknown");
    }
}
