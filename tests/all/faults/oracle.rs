//! The verdict on a plan's run, against the reference run of its story: the world settled as in the reference
//! before the last step and at the end (the hosts quiet each time: eventually stable reconciliation), every object
//! was created and deleted as often as in the reference (plus what the plan's test actor did itself), and the
//! fronts' oracles found nothing.

use std::collections::BTreeSet;

use serde_json::Value;

use super::plan::{Fault, Plan};
use super::run::Observation;
use super::stage::Counts;
use super::story::Snapshot;

/// Everything wrong with `observation` as a run of `plan`; empty when the plan passed.
pub fn judge(plan: &Plan, observation: &Observation, reference: &Observation) -> Vec<String> {
    let mut problems = observation.problems.clone();
    problems.extend(observation.violations.iter().cloned());
    let primary = plan.story.primary().plural;
    // A plan whose test actor edits the primary more often than the user of the story ends at a higher generation.
    let edited = match &plan.fault {
        Fault::HiddenStates => true,
        Fault::LateRelist { resource } => resource != "configmaps",
        _ => false,
    };
    let comparable = |snapshot: &Snapshot| {
        if edited {
            without_generations(snapshot, &primary)
        } else {
            snapshot.clone()
        }
    };
    for (what, expected, actual) in [
        ("before the last step", &reference.settled, &observation.settled),
        ("at the end", &reference.end, &observation.end),
    ] {
        if let Some(difference) = difference(&comparable(expected), &comparable(actual)) {
            problems.push(format!("{what}, the world differs from the reference: {difference}"));
        }
    }
    let mut expected = reference.counts.clone();
    for (object, (created, deleted)) in actor_changes(plan) {
        let entry = expected.entry(object).or_default();
        entry.0 += created;
        entry.1 += deleted;
    }
    if observation.counts != expected {
        let objects: BTreeSet<&String> = expected.keys().chain(observation.counts.keys()).collect();
        let differing: Vec<String> = objects
            .into_iter()
            .filter(|object| expected.get(*object) != observation.counts.get(*object))
            .map(|object| {
                format!(
                    "{object}: (created, deleted) {:?}, the reference {:?}",
                    observation.counts.get(object).copied().unwrap_or_default(),
                    expected.get(object).copied().unwrap_or_default()
                )
            })
            .collect();
        problems.push(format!(
            "objects were created or deleted another number of times: {differing:?}"
        ));
    }
    problems
}

/// What a plan's test actor creates and deletes itself, per object.
fn actor_changes(plan: &Plan) -> Counts {
    let story = plan.story;
    let both = |name: String| Counts::from([(format!("configmaps {name}"), (1, 1))]);
    match &plan.fault {
        Fault::LaggingChildWatch { child } => both(child.clone()),
        Fault::DroppedWatches => story.kept_child().map(|child| both(child.into())).unwrap_or_default(),
        _ => Counts::new(),
    }
}

/// `snapshot` without the primary's generation and the observedGenerations that follow it.
fn without_generations(snapshot: &Snapshot, primary: &str) -> Snapshot {
    snapshot
        .iter()
        .map(|(key, value)| {
            let mut value = value.clone();
            if key.starts_with(&format!("{primary} ")) {
                if let Some(metadata) = value["metadata"].as_object_mut() {
                    metadata.remove("generation");
                }
                if let Some(status) = value["status"].as_object_mut() {
                    status.remove("observedGeneration");
                }
                for condition in value["status"]["conditions"].as_array_mut().into_iter().flatten() {
                    if let Some(condition) = condition.as_object_mut() {
                        condition.remove("observedGeneration");
                    }
                }
            }
            (key.clone(), value)
        })
        .collect()
}

/// How `actual` differs from `expected`, briefly; `None` when they are equal.
pub fn difference(expected: &Snapshot, actual: &Snapshot) -> Option<String> {
    let mut found = Vec::new();
    for key in expected.keys().filter(|key| !actual.contains_key(*key)) {
        found.push(format!("{key} is missing"));
    }
    for key in actual.keys().filter(|key| !expected.contains_key(*key)) {
        found.push(format!("{key} should not exist"));
    }
    for (key, value) in expected {
        if let Some(other) = actual.get(key)
            && other != value
        {
            found.push(format!("{key}: {}", first_difference("", value, other)));
        }
    }
    (!found.is_empty()).then(|| found.join("; "))
}

/// The first path at which two JSON values differ, with both values.
fn first_difference(path: &str, expected: &Value, actual: &Value) -> String {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let (x, y) = (a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null));
                if x != y {
                    return first_difference(&format!("{path}.{key}"), x, y);
                }
            }
            String::new()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_difference(&format!("{path}[{index}]"), x, y);
                }
            }
            String::new()
        }
        _ => format!("{path} is {actual}, the reference has {expected}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn differences_name_the_first_differing_field() {
        let expected = Snapshot::from([
            ("configmaps web-0".to_owned(), json!({"data": {"greeting": "bye"}})),
            ("configmaps web-1".to_owned(), json!({})),
        ]);
        let actual = Snapshot::from([("configmaps web-0".to_owned(), json!({"data": {"greeting": "hello"}}))]);
        let found = difference(&expected, &actual).unwrap();
        assert!(found.contains("configmaps web-1 is missing"), "{found}");
        assert!(
            found.contains(".data.greeting is \"hello\", the reference has \"bye\""),
            "{found}"
        );
        assert_eq!(difference(&expected, &expected), None);
    }
}
