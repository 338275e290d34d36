//! The small JSONPath subset CRD printer columns use: `.a.b`, `[n]`, `[*]`, `[?(@.k=="v")]`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter {
        path: Vec<String>,
        value: String,
        negated: bool,
    },
}

/// A parse failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unsupported JSONPath {0:?}")]
pub struct JsonPathError(pub String);

/// A compiled path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parse `.spec.x`, `{.spec.x}`, `.status.conditions[?(@.type=="Ready")].status`.
    pub fn parse(text: &str) -> Result<Self, JsonPathError> {
        let err = || JsonPathError(text.to_string());
        let mut rest = text.trim();
        if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            rest = inner.trim();
        }
        rest = rest.strip_prefix('$').unwrap_or(rest);
        let mut steps = Vec::new();
        let chars: Vec<char> = rest.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let start = i;
                    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().collect();
                    if name.is_empty() {
                        if i >= chars.len() {
                            break;
                        }
                        continue;
                    }
                    steps.push(Step::Field(name));
                }
                '[' => {
                    let close = find_bracket_end(&chars, i).ok_or_else(err)?;
                    let inner: String = chars[i + 1..close].iter().collect();
                    let inner = inner.trim();
                    if inner == "*" {
                        steps.push(Step::All);
                    } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                        let (lhs, rhs, negated) = if let Some((l, r)) = filter.split_once("!=") {
                            (l, r, true)
                        } else if let Some((l, r)) = filter.split_once("==") {
                            (l, r, false)
                        } else {
                            return Err(err());
                        };
                        let path = lhs
                            .trim()
                            .strip_prefix('@')
                            .ok_or_else(err)?
                            .split('.')
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .collect();
                        let value = rhs.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
                        steps.push(Step::Filter { path, value, negated });
                    } else if let Ok(index) = inner.parse::<i64>() {
                        steps.push(Step::Index(index));
                    } else {
                        let name = inner.trim_matches(|c| c == '"' || c == '\'');
                        steps.push(Step::Field(name.to_string()));
                    }
                    i = close + 1;
                }
                _ => {
                    let start = i;
                    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                        i += 1;
                    }
                    steps.push(Step::Field(chars[start..i].iter().collect()));
                }
            }
        }
        Ok(JsonPath { steps })
    }

    /// Every value the path selects.
    pub fn evaluate<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                match step {
                    Step::Field(name) => {
                        if let Some(v) = value.get(name) {
                            next.push(v);
                        }
                    }
                    Step::Index(index) => {
                        if let Some(items) = value.as_array() {
                            let i = if *index < 0 { items.len() as i64 + index } else { *index };
                            if let Some(v) = usize::try_from(i).ok().and_then(|i| items.get(i)) {
                                next.push(v);
                            }
                        }
                    }
                    Step::All => match value {
                        Value::Array(items) => next.extend(items.iter()),
                        Value::Object(map) => next.extend(map.values()),
                        _ => {}
                    },
                    Step::Filter {
                        path,
                        value: wanted,
                        negated,
                    } => {
                        if let Some(items) = value.as_array() {
                            for item in items {
                                let mut field = Some(item);
                                for key in path {
                                    field = field.and_then(|f| f.get(key));
                                }
                                let text = match field {
                                    Some(Value::String(s)) => Some(s.clone()),
                                    Some(other) => Some(other.to_string()),
                                    None => None,
                                };
                                let matched = text.as_deref() == Some(wanted.as_str());
                                if matched != *negated && text.is_some() {
                                    next.push(item);
                                }
                            }
                        }
                    }
                }
            }
            current = next;
        }
        current
    }
}

fn find_bracket_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if *c == q => quote = None,
            (Some(_), _) => {}
            (None, '"') | (None, '\'') => quote = Some(*c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_used_by_printer_columns() {
        let object = json!({"spec": {"size": 3, "items": [{"n": "a"}, {"n": "b"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        let eval = |p: &str| -> Vec<Value> {
            JsonPath::parse(p)
                .unwrap()
                .evaluate(&object)
                .into_iter()
                .cloned()
                .collect()
        };
        assert_eq!(eval(".spec.size"), [json!(3)]);
        assert_eq!(eval("{.spec.items[1].n}"), [json!("b")]);
        assert_eq!(eval(".spec.items[*].n"), [json!("a"), json!("b")]);
        assert_eq!(eval(".status.conditions[?(@.type==\"Ready\")].status"), [json!("True")]);
        assert!(eval(".spec.missing").is_empty());
    }
}
