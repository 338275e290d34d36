//! The host's checked form of a plugin's answer, and the checks that make it.
//!
//! Decoding is where a plugin's answer is checked: anything malformed becomes an `InvalidOutcome` message
//! that names the offending part, never a panic.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::limits::Limits;
use super::{Condition, Event, RECONCILED_CONDITION};

/// Longest event note kept; Kubernetes refuses longer notes.
const MAX_EVENT_NOTE: usize = 1024;
/// Longest condition message Kubernetes accepts.
const MAX_CONDITION_MESSAGE: usize = 32 * 1024;

/// A plugin's decoded and checked answer for one primary.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Full desired set of children, each an object with apiVersion, kind and metadata.name; `None` leaves
    /// children alone.
    pub children: Option<Vec<Value>>,
    /// Object merged into `.status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// Conditions to merge.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Events to record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Requeue delay in milliseconds.
    #[serde(
        skip_serializing_if = "Option::is_none",
        rename = "requeueAfterMs",
        with = "optional_millis"
    )]
    pub requeue_after: Option<Duration>,
    /// Cleanup done; the finalizer may go.
    pub finalized: bool,
}

/// Serialises an optional duration as milliseconds.
mod optional_millis {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)),
            None => serializer.serialize_none(),
        }
    }
}

/// Checks and converts a plugin's answer.
pub(crate) fn decode(answer: wasm_reconciler_contract::Outcome, limits: &Limits) -> Result<Outcome, String> {
    let size = wire_size(&answer);
    if size > limits.max_outcome_bytes {
        return Err(format!(
            "outcome is {size} bytes, over the limit of {} bytes",
            limits.max_outcome_bytes
        ));
    }
    let children = match answer.children {
        None => None,
        Some(children) => Some(
            children
                .iter()
                .enumerate()
                .map(|(index, text)| decode_child(index, text))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let status = match answer.status {
        None => None,
        Some(text) => {
            let status: Value = serde_json::from_str(&text).map_err(|e| format!("status is not valid JSON: {e}"))?;
            if !status.is_object() {
                return Err(format!("status must be a JSON object, got {}", json_type(&status)));
            }
            Some(status)
        }
    };
    let conditions = answer
        .conditions
        .into_iter()
        .map(check_condition)
        .collect::<Result<Vec<_>, _>>()?;
    let events = answer
        .events
        .into_iter()
        .map(check_event)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        children,
        status,
        conditions,
        events,
        requeue_after: answer.requeue_after_ms.map(Duration::from_millis),
        finalized: answer.finalized,
    })
}

fn wire_size(answer: &wasm_reconciler_contract::Outcome) -> usize {
    let children: usize = answer.children.iter().flatten().map(String::len).sum();
    let status = answer.status.as_ref().map_or(0, String::len);
    let conditions: usize = answer
        .conditions
        .iter()
        .map(|c| c.condition_type.len() + c.reason.len() + c.message.len())
        .sum();
    let events: usize = answer.events.iter().map(|e| e.reason.len() + e.note.len()).sum();
    children + status + conditions + events
}

fn decode_child(index: usize, text: &str) -> Result<Value, String> {
    let child: Value = serde_json::from_str(text).map_err(|e| format!("child {index} is not valid JSON: {e}"))?;
    let Some(object) = child.as_object() else {
        return Err(format!(
            "child {index} must be a JSON object, got {}",
            json_type(&child)
        ));
    };
    for field in ["apiVersion", "kind"] {
        match object.get(field) {
            Some(Value::String(value)) if !value.is_empty() => {}
            _ => return Err(format!("child {index} has no `{field}`")),
        }
    }
    match child.pointer("/metadata/name") {
        Some(Value::String(name)) if !name.is_empty() => Ok(child),
        _ => Err(format!(
            "child {index} ({}) has no `metadata.name`",
            object["kind"].as_str().unwrap_or_default()
        )),
    }
}

fn check_condition(condition: Condition) -> Result<Condition, String> {
    let type_ = &condition.condition_type;
    if !is_camel_case_identifier(type_) {
        return Err(format!("condition type {type_:?} must be a CamelCase identifier"));
    }
    if type_ == RECONCILED_CONDITION {
        return Err(format!(
            "condition type {RECONCILED_CONDITION:?} is reserved for the host"
        ));
    }
    if !is_condition_reason(&condition.reason) {
        return Err(format!(
            "condition {type_} has reason {:?}; a reason must start with a letter and contain only letters, digits, `_`, `,` and `:`",
            condition.reason
        ));
    }
    if condition.message.len() > MAX_CONDITION_MESSAGE {
        return Err(format!(
            "condition {type_} message is over {MAX_CONDITION_MESSAGE} bytes"
        ));
    }
    Ok(condition)
}

fn check_event(mut event: Event) -> Result<Event, String> {
    if !is_camel_case_identifier(&event.reason) {
        return Err(format!(
            "event reason {:?} must be a CamelCase identifier",
            event.reason
        ));
    }
    if event.note.len() > MAX_EVENT_NOTE {
        let mut cut = MAX_EVENT_NOTE - 3;
        while !event.note.is_char_boundary(cut) {
            cut -= 1;
        }
        event.note.truncate(cut);
        event.note.push_str("...");
    }
    Ok(event)
}

/// `Ready`, `ScaledUp`: starts with a letter, letters and digits only, at most 128 characters.
fn is_camel_case_identifier(value: &str) -> bool {
    value.len() <= 128
        && value.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && value.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The rule Kubernetes applies to `metav1.Condition.reason`: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
fn is_condition_reason(value: &str) -> bool {
    let bytes = value.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    value.len() <= 1024
        && first.is_ascii_alphabetic()
        && rest
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':'))
        && rest.last().is_none_or(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use wasm_reconciler_contract::Outcome as Answer;

    use super::*;
    use crate::plugin::{ConditionStatus, EventType};

    fn answer() -> Answer {
        Answer {
            children: None,
            status: None,
            conditions: vec![],
            events: vec![],
            requeue_after_ms: None,
            finalized: false,
        }
    }

    fn condition(type_: &str, reason: &str) -> Condition {
        Condition::status_true(type_, reason, "")
    }

    #[test]
    fn decodes_a_full_outcome() {
        let outcome = decode(
            Answer {
                children: Some(vec![
                    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.into(),
                ]),
                status: Some(r#"{"replicas":1}"#.into()),
                conditions: vec![condition("Ready", "AllGood")],
                events: vec![Event::normal("Created", "x")],
                requeue_after_ms: Some(250),
                finalized: true,
            },
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(outcome.children.unwrap()[0]["metadata"]["name"], "a");
        assert_eq!(outcome.status.unwrap()["replicas"], 1);
        assert_eq!(outcome.conditions[0].status, ConditionStatus::True);
        assert_eq!(outcome.events[0].event_type, EventType::Normal);
        assert_eq!(outcome.requeue_after, Some(Duration::from_millis(250)));
        assert!(outcome.finalized);
    }

    #[test]
    fn none_children_differs_from_empty_children() {
        assert_eq!(decode(answer(), &Limits::default()).unwrap().children, None);
        let empty = Answer {
            children: Some(vec![]),
            ..answer()
        };
        assert_eq!(decode(empty, &Limits::default()).unwrap().children, Some(vec![]));
    }

    #[test]
    fn rejects_malformed_children() {
        for (child, expected) in [
            ("{not json", "child 0 is not valid JSON"),
            ("[1,2]", "child 0 must be a JSON object, got an array"),
            (
                r#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#,
                "child 0 has no `apiVersion`",
            ),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
                "child 0 (ConfigMap) has no `metadata.name`",
            ),
        ] {
            let error = decode(
                Answer {
                    children: Some(vec![child.into()]),
                    ..answer()
                },
                &Limits::default(),
            )
            .unwrap_err();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn rejects_non_object_status() {
        let error = decode(
            Answer {
                status: Some("[]".into()),
                ..answer()
            },
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(error, "status must be a JSON object, got an array");
    }

    #[test]
    fn rejects_outcomes_over_the_size_limit() {
        let limits = Limits {
            max_outcome_bytes: 10,
            ..Limits::default()
        };
        let error = decode(
            Answer {
                status: Some(r#"{"a":"0123456789"}"#.into()),
                ..answer()
            },
            &limits,
        )
        .unwrap_err();
        assert_eq!(error, "outcome is 18 bytes, over the limit of 10 bytes");
    }

    #[test]
    fn checks_condition_types_and_reasons() {
        let decode_one = |c| {
            decode(
                Answer {
                    conditions: vec![c],
                    ..answer()
                },
                &Limits::default(),
            )
        };
        assert!(decode_one(condition("Ready", "Scaling_Up:2")).is_ok());
        assert!(
            decode_one(condition("Reconciled", "X"))
                .unwrap_err()
                .contains("reserved for the host")
        );
        assert!(
            decode_one(condition("not ready", "X"))
                .unwrap_err()
                .contains("CamelCase")
        );
        assert!(decode_one(condition("Ready", "")).unwrap_err().contains("reason"));
        assert!(decode_one(condition("Ready", "Bad:")).unwrap_err().contains("reason"));
        assert!(decode_one(condition("Ready", "9Lives")).unwrap_err().contains("reason"));
    }

    #[test]
    fn long_event_notes_are_cut() {
        let event = Event::warning("Oops", "é".repeat(1000));
        let outcome = decode(
            Answer {
                events: vec![event],
                ..answer()
            },
            &Limits::default(),
        )
        .unwrap();
        assert!(outcome.events[0].note.len() <= MAX_EVENT_NOTE);
        assert!(outcome.events[0].note.ends_with("..."));
    }
}
