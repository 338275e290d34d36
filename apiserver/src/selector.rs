//! Label selectors (full syntax) and field selectors (the fields each kind supports).

use serde_json::Value;

use crate::object;
use crate::registry::ResourceInfo;

/// A selector could not be parsed or uses an unsupported field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectorError {
    /// Malformed label selector.
    #[error("{0}")]
    Label(String),
    /// Malformed field selector.
    #[error("invalid selector: '{0}'; can't understand '{1}'")]
    Field(String, String),
    /// Field not supported by a kind that has its own field selectors.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
    /// Field not supported by a Job.
    #[error("field label {0:?} not supported for Job")]
    UnsupportedJobField(String),
    /// Field not supported by a kind that only has the metadata field selectors.
    #[error("\"{0}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")]
    UnknownCustomField(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Operator {
    Exists,
    DoesNotExist,
    Equals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Comma,
    Open,
    Close,
    Equals,
    DoubleEquals,
    NotEquals,
    Not,
    Greater,
    Less,
}

fn tokenize(input: &str) -> Result<Vec<Token>, SelectorError> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            ',' => {
                tokens.push(Token::Comma);
                i += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            '>' => {
                tokens.push(Token::Greater);
                i += 1;
            }
            '<' => {
                tokens.push(Token::Less);
                i += 1;
            }
            '=' => {
                if chars.get(i + 1) == Some(&'=') {
                    tokens.push(Token::DoubleEquals);
                    i += 2;
                } else {
                    tokens.push(Token::Equals);
                    i += 1;
                }
            }
            '!' => {
                if chars.get(i + 1) == Some(&'=') {
                    tokens.push(Token::NotEquals);
                    i += 2;
                } else {
                    tokens.push(Token::Not);
                    i += 1;
                }
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n,()=!<>".contains(chars[i]) {
                    i += 1;
                }
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(tokens)
}

fn valid_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-.".contains(c))
    });
    name_ok && prefix_ok
}

fn valid_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

impl LabelSelector {
    /// Parse the `labelSelector` query syntax.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let tokens = tokenize(input)?;
        let mut requirements = Vec::new();
        let mut pos = 0;
        // Errors inside one requirement carry a prefix; those between requirements do not.
        let err = |msg: &str| SelectorError::Label(format!("unable to parse requirement: {msg}"));
        let top = |msg: &str| SelectorError::Label(msg.to_string());
        while pos < tokens.len() {
            if !matches!(tokens[pos], Token::Ident(_) | Token::Not) {
                return Err(top(&format!(
                    "found '{}', expected: !, identifier, or 'end of string'",
                    describe(tokens.get(pos))
                )));
            }
            let negated = tokens[pos] == Token::Not;
            if negated {
                pos += 1;
            }
            let key = match tokens.get(pos) {
                Some(Token::Ident(key)) => key.clone(),
                _ => {
                    return Err(err(&format!(
                        "found '{}', expected: identifier",
                        describe(tokens.get(pos))
                    )));
                }
            };
            if !valid_label_key(&key) {
                return Err(err(&format!(
                    "key: Invalid value: {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                )));
            }
            pos += 1;
            if negated {
                requirements.push(Requirement {
                    key,
                    operator: Operator::DoesNotExist,
                    values: Vec::new(),
                });
            } else {
                let requirement = match tokens.get(pos) {
                    None | Some(Token::Comma) => Requirement {
                        key,
                        operator: Operator::Exists,
                        values: Vec::new(),
                    },
                    Some(Token::Equals)
                    | Some(Token::DoubleEquals)
                    | Some(Token::NotEquals)
                    | Some(Token::Greater)
                    | Some(Token::Less) => {
                        let operator = match tokens[pos] {
                            Token::NotEquals => Operator::NotEquals,
                            Token::Greater => Operator::GreaterThan,
                            Token::Less => Operator::LessThan,
                            _ => Operator::Equals,
                        };
                        pos += 1;
                        let value = match tokens.get(pos) {
                            Some(Token::Ident(v)) => {
                                pos += 1;
                                v.clone()
                            }
                            _ => String::new(),
                        };
                        if matches!(operator, Operator::GreaterThan | Operator::LessThan)
                            && value.parse::<i64>().is_err()
                        {
                            return Err(err("for 'Gt', 'Lt' operators, the value must be an integer"));
                        }
                        if !valid_label_value(&value) {
                            return Err(err(&format!(
                                "values[0][{key}]: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                            )));
                        }
                        Requirement {
                            key,
                            operator,
                            values: vec![value],
                        }
                    }
                    Some(Token::Ident(word)) if word == "in" || word == "notin" => {
                        let operator = if word == "in" { Operator::In } else { Operator::NotIn };
                        pos += 1;
                        if tokens.get(pos) != Some(&Token::Open) {
                            return Err(err(&format!("found '{}' expected: '('", describe(tokens.get(pos)))));
                        }
                        pos += 1;
                        let mut values = Vec::new();
                        match tokens.get(pos) {
                            Some(Token::Ident(_)) | Some(Token::Comma) | Some(Token::Close) => {}
                            other => {
                                return Err(err(&format!(
                                    "found '{}', expected: ',', ')' or identifier",
                                    describe(other)
                                )));
                            }
                        }
                        loop {
                            match tokens.get(pos) {
                                Some(Token::Ident(v)) => {
                                    values.push(v.clone());
                                    pos += 1;
                                    match tokens.get(pos) {
                                        Some(Token::Comma) | Some(Token::Close) => {}
                                        other => {
                                            return Err(err(&format!(
                                                "found '{}', expected: ',' or ')'",
                                                describe(other)
                                            )));
                                        }
                                    }
                                }
                                Some(Token::Comma) => {
                                    if values.is_empty() {
                                        values.push(String::new());
                                    }
                                    pos += 1;
                                    if matches!(tokens.get(pos), Some(Token::Close) | Some(Token::Comma)) {
                                        values.push(String::new());
                                    }
                                }
                                Some(Token::Close) => {
                                    pos += 1;
                                    if values.is_empty() {
                                        values.push(String::new());
                                    }
                                    break;
                                }
                                other => {
                                    return Err(err(&format!(
                                        "found '{}', expected: ',', or identifier",
                                        describe(other)
                                    )));
                                }
                            }
                        }
                        values.sort();
                        values.dedup();
                        if values.is_empty() {
                            return Err(err("for 'in', 'notin' operators, values set can't be empty"));
                        }
                        Requirement { key, operator, values }
                    }
                    other => {
                        return Err(err(&format!(
                            "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                            describe(other)
                        )));
                    }
                };
                requirements.push(requirement);
            }
            match tokens.get(pos) {
                None => break,
                Some(Token::Comma) => {
                    pos += 1;
                    if !matches!(tokens.get(pos), Some(Token::Ident(_)) | Some(Token::Not)) {
                        return Err(top(&format!(
                            "found '{}', expected: identifier after ','",
                            describe(tokens.get(pos))
                        )));
                    }
                }
                other => {
                    return Err(top(&format!(
                        "found '{}', expected: ',' or 'end of string'",
                        describe(other)
                    )));
                }
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Match against a label map.
    pub fn matches_labels(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        self.matches_with(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Match against labels looked up by key (`value_of(key)` is the label's value, `None` when absent).
    pub fn matches_with<'a>(&self, value_of: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let value = value_of(&r.key);
            match r.operator {
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
                Operator::Equals | Operator::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                Operator::GreaterThan | Operator::LessThan => {
                    let (Some(v), Some(bound)) = (
                        value.and_then(|v| v.parse::<i64>().ok()),
                        r.values.first().and_then(|b| b.parse::<i64>().ok()),
                    ) else {
                        return false;
                    };
                    if r.operator == Operator::GreaterThan {
                        v > bound
                    } else {
                        v < bound
                    }
                }
            }
        })
    }

    /// Match an object's labels.
    pub fn matches(&self, object: &Value) -> bool {
        self.is_empty() || self.matches_labels(object::labels(object))
    }
}

fn describe(token: Option<&Token>) -> String {
    match token {
        None => String::new(),
        Some(Token::Ident(s)) => s.clone(),
        Some(Token::Comma) => ",".into(),
        Some(Token::Open) => "(".into(),
        Some(Token::Close) => ")".into(),
        Some(Token::Equals) => "=".into(),
        Some(Token::DoubleEquals) => "==".into(),
        Some(Token::NotEquals) => "!=".into(),
        Some(Token::Not) => "!".into(),
        Some(Token::Greater) => ">".into(),
        Some(Token::Less) => "<".into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

/// A parsed field selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

fn split_unescaped(input: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in input.chars() {
        if escaped {
            current.push('\\');
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    if escaped {
        current.push('\\');
    }
    parts.push(current);
    parts
}

fn unescape(value: &str) -> String {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl FieldSelector {
    /// Parse `a=b,c!=d`, checking fields against what the resource supports.
    pub fn parse(input: &str, info: &ResourceInfo) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in split_unescaped(input, ',') {
            let (field, value, negated) = if let Some(index) = find_unescaped(&part, "!=") {
                (&part[..index], &part[index + 2..], true)
            } else if let Some(index) = find_unescaped(&part, "==") {
                (&part[..index], &part[index + 2..], false)
            } else if let Some(index) = find_unescaped(&part, "=") {
                (&part[..index], &part[index + 1..], false)
            } else {
                return Err(SelectorError::Field(input.to_string(), part.clone()));
            };
            let field = normalize_field(info, field.trim());
            if let Some(error) = field_error(info, &field) {
                return Err(error);
            }
            terms.push(FieldTerm {
                field,
                value: unescape(value.trim()),
                negated,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The exact `metadata.name` this selector requires, if any (kubectl wait and get use it).
    pub fn required_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == "metadata.name" && !t.negated)
            .map(|t| t.value.as_str())
    }

    /// Match a stored object.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|term| {
            let value = field_value(object, &term.field);
            (value == term.value) != term.negated
        })
    }
}

fn find_unescaped(text: &str, pattern: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if text[i..].starts_with(pattern) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn normalize_field(info: &ResourceInfo, field: &str) -> String {
    if info.group == "events.k8s.io" {
        if let Some(rest) = field.strip_prefix("regarding.") {
            return format!("involvedObject.{rest}");
        }
        if field == "reportingController" {
            return "reportingComponent".to_string();
        }
    }
    field.to_string()
}

/// The fields a kind's field selectors may name, and how an unsupported one is refused: kinds without their own
/// conversion function take only `metadata.name` and `metadata.namespace`.
fn field_error(info: &ResourceInfo, field: &str) -> Option<SelectorError> {
    let own: Option<&[&str]> = if info.is_builtin() {
        match (info.group.as_str(), info.kind.as_str()) {
            ("", "Pod") => Some(&[
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            ]),
            ("" | "events.k8s.io", "Event") => Some(&[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
                "metadata.namespace",
                "metadata.name",
            ]),
            ("", "Secret") => Some(&["type", "metadata.namespace", "metadata.name"]),
            ("", "Service") => Some(&["metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"]),
            ("", "Namespace") => Some(&["status.phase", "metadata.name"]),
            ("", "Node") => Some(&["metadata.name", "spec.unschedulable"]),
            ("", "ReplicationController") => Some(&["metadata.name", "metadata.namespace", "status.replicas"]),
            ("batch", "Job") => {
                return (!["metadata.name", "metadata.namespace", "status.successful"].contains(&field))
                    .then(|| SelectorError::UnsupportedJobField(field.to_string()));
            }
            _ => None,
        }
    } else {
        None
    };
    match own {
        Some(fields) => (!fields.contains(&field)).then(|| SelectorError::UnsupportedField(field.to_string())),
        None => (field != "metadata.name" && field != "metadata.namespace")
            .then(|| SelectorError::UnknownCustomField(field.to_string())),
    }
}

/// The string value of a selectable field (Go formatting for booleans and numbers).
fn field_value(object: &Value, field: &str) -> String {
    if field == "source" {
        return object::path_str(object, &["source", "component"]).to_string();
    }
    let keys: Vec<&str> = field.split('.').collect();
    match object::path(object, &keys) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        None | Some(Value::Null) => match field {
            "spec.hostNetwork" | "spec.unschedulable" => "false".into(),
            "status.replicas" | "status.successful" => "0".into(),
            _ => String::new(),
        },
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> Value {
        let map: serde_json::Map<String, Value> = pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        json!({"metadata": {"labels": map}})
    }

    #[test]
    fn label_selector_full_syntax() {
        let object = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        for (selector, expected) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("missing notin (x)", true),
            ("app=web,tier=back", false),
            ("n>4,n<6", true),
            ("example.com/key=x", false),
            ("", true),
        ] {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(&object), expected, "{selector}");
        }
    }

    #[test]
    fn label_selector_errors() {
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("app=").is_ok());
        assert!(LabelSelector::parse("a,").is_err());
        assert!(LabelSelector::parse("-bad=x").is_err());
    }

    #[test]
    fn event_field_selectors() {
        let registry = Registry::build([]);
        let events = registry.lookup("", "v1", "events").unwrap();
        let event = json!({"metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "uid": "u"}, "type": "Normal", "reason": "Started"});
        let selector =
            FieldSelector::parse("involvedObject.name=p,involvedObject.kind=Pod,type!=Warning", &events).unwrap();
        assert!(selector.matches(&event));
        assert!(!FieldSelector::parse("reason=Killed", &events).unwrap().matches(&event));
        let new_events = registry.lookup("events.k8s.io", "v1", "events").unwrap();
        assert!(
            FieldSelector::parse("regarding.name=p", &new_events)
                .unwrap()
                .matches(&event)
        );
    }

    #[test]
    fn unsupported_fields_are_rejected_like_the_real_server() {
        let registry = Registry::build([]);
        let cms = registry.lookup("", "v1", "configmaps").unwrap();
        assert_eq!(
            FieldSelector::parse("data.x=y", &cms).unwrap_err().to_string(),
            "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let selector = FieldSelector::parse("metadata.name=a\\,b", &cms).unwrap();
        assert_eq!(selector.required_name(), Some("a,b"));
    }
}
