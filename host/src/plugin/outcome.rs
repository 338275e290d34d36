//! The host's checked form of a plugin's answer, and the checks that make it.
//!
//! Decoding is where a plugin's answer is checked: anything malformed becomes an `InvalidOutcome` message
//! that names the offending part, never a panic.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::bindings::v0_3::exports::wasm_reconciler::plugin0_3_0::controller::{
    Child as PatchedChild, Outcome as PatchedOutcome,
};
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

/// Checks and converts a plugin's answer (contract 0.1 and 0.2).
pub(crate) fn decode(answer: wasm_reconciler_contract::Outcome, limits: &Limits) -> Result<Outcome, String> {
    let size = wire_size(&answer);
    if size > limits.max_outcome_bytes {
        return Err(format!(
            "outcome is {size} bytes, over the limit of {} bytes",
            limits.max_outcome_bytes
        ));
    }
    let children = decode_children(answer.children.as_deref(), |index, text| decode_child(index, text))?;
    let wasm_reconciler_contract::Outcome {
        status,
        conditions,
        events,
        requeue_after_ms,
        finalized,
        ..
    } = answer;
    decode_rest(children, status, conditions, events, requeue_after_ms, finalized)
}

/// Checks and converts a contract 0.3 answer: each `patched` child is a copy of its base with its merge patch
/// applied, then checked as a whole child is. Bounded like a 0.1 answer: by its size as sent, and by the size of its
/// children once each patched one counts its base's text in full.
pub(crate) fn decode_patched(answer: PatchedOutcome, limits: &Limits) -> Result<Outcome, String> {
    let base_bytes: Vec<usize> = answer.bases.iter().map(String::len).collect();
    let mut sent = base_bytes.iter().sum::<usize>() + answer.status.as_ref().map_or(0, String::len);
    sent += answer
        .conditions
        .iter()
        .map(|c| c.type_.len() + c.reason.len() + c.message.len())
        .sum::<usize>();
    sent += answer
        .events
        .iter()
        .map(|e| e.reason.len() + e.note.len())
        .sum::<usize>();
    let mut expanded = 0_usize;
    for child in answer.children.iter().flatten() {
        match child {
            PatchedChild::Object(text) => {
                sent += text.len();
                expanded += text.len();
            }
            PatchedChild::Patched(patched) => {
                sent += patched.merge_patch.len();
                let base = usize::try_from(patched.base).ok().and_then(|base| base_bytes.get(base));
                expanded += patched.merge_patch.len() + base.copied().unwrap_or_default();
            }
        }
    }
    for (what, size) in [("outcome", sent), ("outcome with its bases copied", expanded)] {
        if size > limits.max_outcome_bytes {
            return Err(format!(
                "{what} is {size} bytes, over the limit of {} bytes",
                limits.max_outcome_bytes
            ));
        }
    }
    let mut bases = Vec::with_capacity(answer.bases.len());
    for (index, text) in answer.bases.iter().enumerate() {
        match serde_json::from_str::<Value>(text) {
            Ok(base @ Value::Object(_)) => bases.push(base),
            Ok(other) => return Err(format!("base {index} must be a JSON object, got {}", json_type(&other))),
            Err(error) => return Err(format!("base {index} is not valid JSON: {error}")),
        }
    }
    let children = decode_children(answer.children.as_deref(), |index, child| match child {
        PatchedChild::Object(text) => decode_child(index, text),
        PatchedChild::Patched(patched) => {
            let base = usize::try_from(patched.base)
                .ok()
                .and_then(|base| bases.get(base))
                .ok_or_else(|| {
                    format!(
                        "child {index} is patched from base {}, but the outcome has {} bases",
                        patched.base,
                        bases.len()
                    )
                })?;
            let patch: Value = serde_json::from_str(&patched.merge_patch)
                .map_err(|e| format!("child {index}'s merge patch is not valid JSON: {e}"))?;
            let mut child = base.clone();
            wasm_reconciler_contract::json::merge_patch(&mut child, &patch);
            check_child(index, child)
        }
    })?;
    decode_rest(
        children,
        answer.status,
        answer.conditions.into_iter().map(super::types::condition).collect(),
        answer.events.into_iter().map(super::types::event).collect(),
        answer.requeue_after_ms,
        answer.finalized,
    )
}

/// Each child decoded by `decode`, the first error instead; `None` stays `None` (children left alone).
fn decode_children<T>(
    children: Option<&[T]>,
    decode: impl Fn(usize, &T) -> Result<Value, String>,
) -> Result<Option<Vec<Value>>, String> {
    children
        .map(|children| {
            children
                .iter()
                .enumerate()
                .map(|(index, child)| decode(index, child))
                .collect()
        })
        .transpose()
}

/// The parts every contract version shares, checked; `children` are checked already.
fn decode_rest(
    children: Option<Vec<Value>>,
    status: Option<String>,
    conditions: Vec<Condition>,
    events: Vec<Event>,
    requeue_after_ms: Option<u64>,
    finalized: bool,
) -> Result<Outcome, String> {
    let status = match status {
        None => None,
        Some(text) => {
            let status: Value = serde_json::from_str(&text).map_err(|e| format!("status is not valid JSON: {e}"))?;
            if !status.is_object() {
                return Err(format!("status must be a JSON object, got {}", json_type(&status)));
            }
            Some(status)
        }
    };
    let conditions = conditions
        .into_iter()
        .map(check_condition)
        .collect::<Result<Vec<_>, _>>()?;
    let events = events.into_iter().map(check_event).collect::<Result<Vec<_>, _>>()?;
    Ok(Outcome {
        children,
        status,
        conditions,
        events,
        requeue_after: requeue_after_ms.map(Duration::from_millis),
        finalized,
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
    check_child(index, child)
}

/// A child with a non-empty `apiVersion`, `kind` and `metadata.name`.
fn check_child(index: usize, child: Value) -> Result<Value, String> {
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

    fn patched_answer(children: Vec<PatchedChild>, bases: Vec<&str>) -> PatchedOutcome {
        PatchedOutcome {
            children: Some(children),
            bases: bases.into_iter().map(str::to_owned).collect(),
            status: None,
            conditions: Vec::new(),
            events: Vec::new(),
            requeue_after_ms: None,
            finalized: false,
        }
    }

    fn patched(base: u32, merge_patch: &str) -> PatchedChild {
        use super::super::bindings::v0_3::exports::wasm_reconciler::plugin0_3_0::controller::Patched;
        PatchedChild::Patched(Patched {
            base,
            merge_patch: merge_patch.to_owned(),
        })
    }

    #[test]
    fn patched_children_are_copies_of_their_base() {
        let base = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"a":"b"}},"data":{"k":"v"}}"#;
        let outcome = decode_patched(
            patched_answer(
                vec![
                    patched(0, r#"{"metadata":{"name":"c-0"}}"#),
                    patched(0, r#"{"metadata":{"name":"c-1","labels":{"a":null}},"data":{"x":"y"}}"#),
                    PatchedChild::Object(r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#.into()),
                ],
                vec![base],
            ),
            &Limits::default(),
        )
        .unwrap();
        let children = outcome.children.unwrap();
        assert_eq!(
            children[0],
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"labels": {"a": "b"}, "name": "c-0"}, "data": {"k": "v"}})
        );
        assert_eq!(
            children[1]["metadata"],
            serde_json::json!({"labels": {}, "name": "c-1"})
        );
        assert_eq!(children[1]["data"], serde_json::json!({"k": "v", "x": "y"}));
        assert_eq!(children[2]["kind"], "Secret");
    }

    #[test]
    fn broken_patched_outcomes_are_refused_by_name() {
        let base = r#"{"apiVersion":"v1","kind":"ConfigMap"}"#;
        let refuse = |children, bases| decode_patched(patched_answer(children, bases), &Limits::default()).unwrap_err();
        assert_eq!(
            refuse(vec![patched(1, r#"{"metadata":{"name":"c"}}"#)], vec![base]),
            "child 0 is patched from base 1, but the outcome has 1 bases"
        );
        assert_eq!(
            refuse(vec![patched(0, "{}")], vec![base]),
            "child 0 (ConfigMap) has no `metadata.name`"
        );
        assert!(refuse(vec![patched(0, "{")], vec![base]).starts_with("child 0's merge patch is not valid JSON"));
        assert_eq!(
            refuse(vec![], vec!["[1]"]),
            "base 0 must be a JSON object, got an array"
        );
        assert!(refuse(vec![], vec!["{"]).starts_with("base 0 is not valid JSON"));
        // Each child counts its base in full: a small answer cannot expand past the limit.
        let limits = Limits {
            max_outcome_bytes: 1000,
            ..Limits::default()
        };
        let big = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","data":{{"k":"{}"}}}}"#,
            "x".repeat(300)
        );
        let children = (0..4)
            .map(|index| patched(0, &format!(r#"{{"metadata":{{"name":"c-{index}"}}}}"#)))
            .collect();
        let error = decode_patched(patched_answer(children, vec![&big]), &limits).unwrap_err();
        assert!(error.starts_with("outcome with its bases copied is "), "{error}");
    }

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
