//! Where two normalised answers differ (as JSON pointers), and the documented differences they are held to.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use serde_json::Value;

/// One place where the answers differ.
#[derive(Debug, Clone)]
pub struct Difference {
    /// JSON pointer into the answer.
    pub pointer: String,
    /// The real server's value there (None: absent).
    pub real: Option<Value>,
    /// The embedded server's value there (None: absent).
    pub embedded: Option<Value>,
}

/// Every place where `real` and `embedded` differ; objects compare by key (order ignored), arrays by index.
pub fn differences(real: &Value, embedded: &Value) -> Vec<Difference> {
    let mut found = Vec::new();
    walk(String::new(), Some(real), Some(embedded), &mut found);
    found
}

fn walk(pointer: String, real: Option<&Value>, embedded: Option<&Value>, found: &mut Vec<Difference>) {
    match (real, embedded) {
        (Some(Value::Object(left)), Some(Value::Object(right))) => {
            let mut keys: Vec<&String> = left.keys().collect();
            keys.extend(right.keys().filter(|key| !left.contains_key(*key)));
            for key in keys {
                walk(
                    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                    left.get(key),
                    right.get(key),
                    found,
                );
            }
        }
        (Some(Value::Array(left)), Some(Value::Array(right))) => {
            for index in 0..left.len().max(right.len()) {
                walk(format!("{pointer}/{index}"), left.get(index), right.get(index), found);
            }
        }
        (left, right) if left == right => {}
        (left, right) => found.push(Difference {
            pointer,
            real: left.cloned(),
            embedded: right.cloned(),
        }),
    }
}

/// A known difference of one step (the map's key): the parts of its answer that differ (all of it when none are
/// named), and why.
#[derive(Debug, Clone)]
pub struct Known {
    /// JSON pointers (prefixes) that may differ.
    pub pointers: Vec<String>,
    /// The reason given.
    pub reason: String,
}

impl Known {
    /// Whether this entry covers a difference at `pointer`.
    pub fn covers(&self, pointer: &str) -> bool {
        self.pointers.is_empty()
            || self
                .pointers
                .iter()
                .any(|prefix| pointer == prefix || pointer.starts_with(&format!("{prefix}/")))
    }
}

/// The heading of the section of `docs/apiserver.md` the known differences are listed in.
pub const KNOWN_DIFFERENCES_HEADING: &str = "## Known differences, step by step";

/// The entries of the known-differences section: lines ``- `scenario/step` (`/pointer`, …): reason``.
pub fn known_differences(markdown: &str) -> anyhow::Result<BTreeMap<String, Known>> {
    let section = markdown
        .split_once(KNOWN_DIFFERENCES_HEADING)
        .map(|(_, rest)| rest)
        .with_context(|| format!("no section {KNOWN_DIFFERENCES_HEADING:?}"))?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut known = BTreeMap::new();
    for line in section.lines() {
        let Some(entry) = line.strip_prefix("- `") else {
            continue;
        };
        let (step, rest) = entry
            .split_once('`')
            .with_context(|| format!("unterminated step id in {line:?}"))?;
        let (pointers, reason) = match rest.strip_prefix(" (") {
            Some(listed) => {
                let (listed, reason) = listed
                    .split_once("):")
                    .with_context(|| format!("pointer list without `):` in {line:?}"))?;
                let pointers = listed
                    .split(',')
                    .map(|pointer| pointer.trim().trim_matches('`').to_owned())
                    .collect::<Vec<_>>();
                if pointers.iter().any(|pointer| !pointer.starts_with('/')) {
                    bail!("pointers start with `/` in {line:?}");
                }
                (pointers, reason)
            }
            None => (
                Vec::new(),
                rest.strip_prefix(':')
                    .with_context(|| format!("expected `:` after the step id in {line:?}"))?,
            ),
        };
        let reason = reason.trim().to_owned();
        anyhow::ensure!(!reason.is_empty(), "no reason given in {line:?}");
        let entry = Known { pointers, reason };
        if known.insert(step.to_owned(), entry).is_some() {
            bail!("{step} is listed twice");
        }
    }
    Ok(known)
}

/// A value shown in a report, shortened.
pub fn show(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = value.to_string();
    if text.chars().count() > 400 {
        format!("{}…", text.chars().take(400).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_of_differences() {
        let found = differences(
            &json!({"a": 1, "b": [1, 2], "c": {"d": "x"}}),
            &json!({"a": 1, "b": [1], "c": {"d": "y"}, "e": true}),
        );
        let pointers: Vec<&str> = found.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(pointers, ["/b/1", "/c/d", "/e"]);
    }

    #[test]
    fn section_entries() {
        let markdown = "# x\n## Known differences, step by step\n\ntext\n\n- `a/b`: why\n- `a/c` (`/body/x`, `/code`): because\n## Next\n- `z/z`: no\n";
        let known = known_differences(markdown).unwrap();
        assert_eq!(known.len(), 2);
        assert!(known["a/b"].covers("/anything"));
        assert!(known["a/c"].covers("/body/x/y") && !known["a/c"].covers("/body/xy"));
        assert_eq!(known["a/c"].reason, "because");
    }
}
