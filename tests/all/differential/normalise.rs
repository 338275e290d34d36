//! What may differ between two correct servers is replaced by placeholders before answers are compared: uids,
//! timestamps, resourceVersions, ages, allocated addresses and ports, captured (generated) values, the servers' own
//! versions, and the objects only the real control plane's controllers create; managedFields entries are put in
//! one order, and object keys compare without order.

use std::collections::HashMap;

use serde_json::Value;

use super::scenario::Variables;

/// Names of objects a real cluster's controllers put in every namespace, by kind.
const EXTRA_OBJECTS: &[(&str, &str)] = &[("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")];

/// The versions the two servers report.
const SERVER_VERSIONS: &[&str] = &["v1.37.2", "v1.33.0"];

/// Texts after which a number is a resourceVersion.
const VERSION_PREFIXES: &[&str] = &[
    "too old resource version: ",
    "too old resource version: <rv> (",
    "Too large resource version: ",
    "Too large resource version: <rv>, current: ",
    "resourceVersion=",
    "resourceVersion: ",
    "resourceVersion\":\"",
    "ResourceVersion in record (",
    "ResourceVersion in object meta: ",
];

/// Table columns whose cells are durations since a timestamp.
const AGE_COLUMNS: &[&str] = &["AGE", "Age", "LAST SEEN", "Last Seen", "FIRST SEEN", "First Seen"];

/// Normalises the answers of one server within one scenario: uids are numbered in order of appearance, so that
/// references between objects survive.
#[derive(Default)]
pub struct Normaliser {
    uids: HashMap<String, usize>,
}

impl Normaliser {
    /// The normalised form of a recorded answer.
    pub fn answer(&mut self, answer: &Value, variables: &Variables, kubectl: &[String]) -> Value {
        let mut answer = answer.clone();
        sort_managed_fields(&mut answer);
        drop_extra_objects(&mut answer);
        drop_extra_lines(&mut answer, &extra_names(kubectl));
        normalise_tables(&mut answer);
        let mut captured: Vec<(&str, &str)> = variables.iter().filter(|(_, value)| !value.is_empty()).collect();
        captured.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        self.walk(&mut answer, None, &captured);
        answer
    }

    fn walk(&mut self, value: &mut Value, key: Option<&str>, captured: &[(&str, &str)]) {
        match value {
            Value::Object(map) => {
                // Keys in sorted order, so that uids are numbered alike whatever order each server writes fields
                // in; keys themselves may hold uids (`k:{"uid":…}` in managedFields).
                let mut keys: Vec<String> = map.keys().cloned().collect();
                keys.sort();
                let mut renamed = serde_json::Map::new();
                for key in keys {
                    let mut child = map.remove(&key).expect("key listed");
                    self.walk(&mut child, Some(&key), captured);
                    let key = self.string(&key, None, captured);
                    renamed.insert(key, child);
                }
                *map = renamed;
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(item, None, captured);
                }
            }
            Value::String(text) => *text = self.string(text, key, captured),
            Value::Number(_) if key == Some("nodePort") => *value = Value::from("<node-port>"),
            _ => {}
        }
    }

    fn string(&mut self, text: &str, key: Option<&str>, captured: &[(&str, &str)]) -> String {
        match key {
            Some("resourceVersion") if !text.is_empty() => return "<rv>".into(),
            Some("continue") if !text.is_empty() => return "<continue>".into(),
            _ => {}
        }
        let mut text = text.to_owned();
        for (name, value) in captured {
            if text == *value || (value.len() >= 8 && text.contains(value)) {
                text = text.replace(value, &format!("${{{name}}}"));
            }
        }
        let uids = &mut self.uids;
        text = replace_matches(&text, uid_length, |uid| {
            let next = uids.len() + 1;
            format!("<uid-{}>", uids.entry(uid.to_owned()).or_insert(next))
        });
        text = replace_matches(&text, timestamp_length, |stamp| {
            if stamp.contains('.') { "<microtime>" } else { "<time>" }.to_owned()
        });
        text = replace_matches(&text, cluster_ip_length, |_| "<cluster-ip>".to_owned());
        for prefix in VERSION_PREFIXES {
            text = replace_number_after(&text, prefix);
        }
        // The projected service account volume of a pod has a random suffix.
        if let Some(suffix) = text.strip_prefix("kube-api-access-")
            && suffix.len() == 5
            && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            text = "kube-api-access-<suffix>".to_owned();
        }
        for version in SERVER_VERSIONS {
            text = text.replace(version, "<server-version>");
        }
        text
    }
}

/// Orders managedFields entries as the servers do but without their times (which are normalised away, and which
/// decide the order of two entries written in different seconds).
fn sort_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "managedFields"
                    && let Value::Array(entries) = child
                {
                    let field = |entry: &Value, name: &str| entry[name].as_str().unwrap_or_default().to_owned();
                    entries.sort_by_key(|entry| {
                        ["operation", "manager", "apiVersion", "subresource"].map(|name| field(entry, name))
                    });
                }
                sort_managed_fields(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_managed_fields),
        _ => {}
    }
}

/// Whether an object is one a real cluster's controllers create in every namespace.
fn is_extra(object: &Value, list_kind: Option<&str>) -> bool {
    let kind = object["kind"]
        .as_str()
        .or_else(|| list_kind.and_then(|kind| kind.strip_suffix("List")))
        .unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    EXTRA_OBJECTS.contains(&(kind, name))
}

/// Removes the real cluster's extra objects from lists, watch events and Tables.
fn drop_extra_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let list_kind = map.get("kind").and_then(Value::as_str).map(str::to_owned);
            if let Some(Value::Array(items)) = map.get_mut("items") {
                items.retain(|item| !is_extra(item, list_kind.as_deref()));
            }
            if let Some(Value::Array(events)) = map.get_mut("events") {
                events.retain(|event| !is_extra(&event["object"], None));
            }
            if list_kind.as_deref() == Some("Table")
                && let Some(Value::Array(rows)) = map.get_mut("rows")
            {
                rows.retain(|row| !is_extra(&row["object"], None));
            }
            for child in map.values_mut() {
                drop_extra_objects(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_extra_objects),
        _ => {}
    }
}

/// The names of extra objects of the kinds a kubectl command names (`get cm,sa`), as kubectl prints them.
fn extra_names(kubectl: &[String]) -> Vec<String> {
    let resources: Vec<&str> = kubectl
        .iter()
        .filter(|arg| !arg.starts_with('-'))
        .flat_map(|arg| arg.split(','))
        .collect();
    let mut names = Vec::new();
    for (kind, name) in EXTRA_OBJECTS {
        let aliases: &[&str] = match *kind {
            "ConfigMap" => &["cm", "configmap", "configmaps"],
            _ => &["sa", "serviceaccount", "serviceaccounts"],
        };
        if resources.iter().any(|resource| aliases.contains(resource)) {
            names.push((*name).to_owned());
            names.push(format!("{}/{name}", kind.to_lowercase()));
        }
    }
    names
}

/// Removes the rows of extra objects from kubectl's output (tables, `-o name`), and the header of a table left
/// without rows (kubectl prints no table for a kind without objects).
fn drop_extra_lines(answer: &mut Value, names: &[String]) {
    let Some(Value::Array(lines)) = answer.get_mut("stdout") else {
        return;
    };
    let is_extra = |line: &Value| match line {
        Value::Array(cells) => cells
            .first()
            .and_then(Value::as_str)
            .is_some_and(|first| names.iter().any(|n| n == first)),
        Value::String(text) => names.iter().any(|n| n == text),
        _ => false,
    };
    let before = lines.len();
    lines.retain(|line| !is_extra(line));
    if lines.len() == before {
        return;
    }
    let is_blank = |line: &Value| match line {
        Value::Array(cells) => cells.iter().all(|cell| cell.as_str().is_some_and(str::is_empty)),
        Value::String(text) => text.is_empty(),
        _ => false,
    };
    let is_header = |line: &Value| {
        line[0]
            .as_str()
            .is_some_and(|first| first == "NAME" || first == "NAMESPACE")
    };
    let mut index = 0;
    while index < lines.len() {
        let header_alone = is_header(&lines[index]) && lines.get(index + 1).is_none_or(is_blank);
        if header_alone {
            lines.remove(index);
            if index > 0 && is_blank(&lines[index - 1]) {
                lines.remove(index - 1);
                index -= 1;
            } else if lines.get(index).is_some_and(is_blank) {
                lines.remove(index);
            }
            continue;
        }
        index += 1;
    }
}

/// Replaces durations in the age columns of Tables and kubectl tables by `<age>`.
fn normalise_tables(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("kind").and_then(Value::as_str) == Some("Table") {
                let ages: Vec<usize> = map
                    .get("columnDefinitions")
                    .and_then(Value::as_array)
                    .map(|columns| {
                        columns
                            .iter()
                            .enumerate()
                            .filter(|(_, column)| {
                                column["name"].as_str().is_some_and(|name| AGE_COLUMNS.contains(&name))
                            })
                            .map(|(index, _)| index)
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(Value::Array(rows)) = map.get_mut("rows") {
                    for row in rows {
                        for &index in &ages {
                            age_cell(&mut row["cells"][index]);
                        }
                    }
                }
            }
            if let Some(Value::Array(lines)) = map.get_mut("stdout")
                && lines.first().is_some_and(Value::is_array)
            {
                normalise_text_table(lines);
            }
            for child in map.values_mut() {
                normalise_tables(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise_tables),
        _ => {}
    }
}

/// A kubectl table: the header line names the columns; a header line may appear again (several kinds listed).
fn normalise_text_table(lines: &mut [Value]) {
    let mut ages: Vec<usize> = Vec::new();
    for line in lines {
        let Some(cells) = line.as_array_mut() else { continue };
        let is_header = cells.iter().all(|cell| {
            cell.as_str()
                .is_some_and(|text| !text.is_empty() && text == text.to_uppercase())
        }) && cells
            .first()
            .is_some_and(|cell| cell.as_str() == Some("NAME") || cell.as_str() == Some("NAMESPACE"));
        if is_header {
            ages = cells
                .iter()
                .enumerate()
                .filter(|(_, cell)| cell.as_str().is_some_and(|name| AGE_COLUMNS.contains(&name)))
                .map(|(index, _)| index)
                .collect();
            continue;
        }
        for &index in &ages {
            if let Some(cell) = cells.get_mut(index) {
                age_cell(cell);
            }
        }
    }
}

fn age_cell(cell: &mut Value) {
    if cell.as_str().is_some_and(is_age) {
        *cell = Value::from("<age>");
    }
}

/// `text` with every match replaced; `length` says how long a match starting at a byte offset is.
fn replace_matches(
    text: &str,
    length: impl Fn(&[u8]) -> Option<usize>,
    mut replace: impl FnMut(&str) -> String,
) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let boundary = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        match length(&bytes[at..]).filter(|_| boundary && text.is_char_boundary(at)) {
            Some(found) => {
                out.push_str(&text[copied..at]);
                out.push_str(&replace(&text[at..at + found]));
                at += found;
                copied = at;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Bytes matching `pattern`, where `9` stands for a digit, `x` for a lowercase hex digit, and anything else for
/// itself.
fn matches_shape(bytes: &[u8], pattern: &str) -> bool {
    bytes.len() >= pattern.len()
        && pattern.bytes().zip(bytes).all(|(shape, byte)| match shape {
            b'9' => byte.is_ascii_digit(),
            b'x' => byte.is_ascii_digit() || (b'a'..=b'f').contains(byte),
            other => other == *byte,
        })
}

/// A uid (`8-4-4-4-12` lowercase hex digits).
fn uid_length(bytes: &[u8]) -> Option<usize> {
    matches_shape(bytes, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").then_some(36)
}

/// An RFC 3339 UTC timestamp, with or without fractional seconds.
fn timestamp_length(bytes: &[u8]) -> Option<usize> {
    if !matches_shape(bytes, "9999-99-99T99:99:99") {
        return None;
    }
    let mut end = 19;
    if bytes.get(end) == Some(&b'.') {
        end += 1;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    (bytes.get(end) == Some(&b'Z')).then_some(end + 1)
}

/// An address from a service CIDR (10.96.0.0/12) other than the `kubernetes` Service's 10.96.0.1.
fn cluster_ip_length(bytes: &[u8]) -> Option<usize> {
    let end = bytes
        .iter()
        .position(|byte| !byte.is_ascii_digit() && *byte != b'.')
        .unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    let address: std::net::Ipv4Addr = text.parse().ok()?;
    let [first, second, ..] = address.octets();
    (first == 10 && (96..112).contains(&second) && text != "10.96.0.1").then_some(end)
}

/// `text` with the number right after each `prefix` replaced by `<rv>`.
fn replace_number_after(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find(prefix) {
        let after = found + prefix.len();
        out.push_str(&rest[..after]);
        let digits = rest[after..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("<rv>");
        }
        rest = &rest[after + digits..];
    }
    out.push_str(rest);
    out
}

/// A kubectl age (`5s`, `3m2s`, `2d`, `<invalid>`).
fn is_age(text: &str) -> bool {
    if text == "<invalid>" {
        return true;
    }
    let mut units = 0;
    let mut digits = 0;
    for byte in text.bytes() {
        match byte {
            b'0'..=b'9' => digits += 1,
            b's' | b'm' | b'h' | b'd' | b'y' if digits > 0 => {
                digits = 0;
                units += 1;
            }
            _ => return false,
        }
    }
    digits == 0 && (1..=2).contains(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        let mut normaliser = Normaliser::default();
        let answer = serde_json::json!({
            "metadata": {"uid": "0ba17645-0ffb-4e0e-b65e-fc32954465f7", "resourceVersion": "7",
                         "creationTimestamp": "2026-11-24T13:31:45Z"},
            "renewTime": "2026-11-24T13:31:45.123456Z",
            "spec": {"clusterIP": "10.96.14.3", "ports": [{"nodePort": 30080}]},
            "message": "too old resource version: 1 (245) for 0ba17645-0ffb-4e0e-b65e-fc32954465f7",
        });
        let normalised = normaliser.answer(&answer, &Variables::default(), &[]);
        assert_eq!(
            normalised,
            serde_json::json!({
                "metadata": {"uid": "<uid-1>", "resourceVersion": "<rv>", "creationTimestamp": "<time>"},
                "renewTime": "<microtime>",
                "spec": {"clusterIP": "<cluster-ip>", "ports": [{"nodePort": "<node-port>"}]},
                "message": "too old resource version: <rv> (<rv>) for <uid-1>",
            })
        );
        assert!(is_age("5s") && is_age("3m2s") && !is_age("5") && !is_age("1/1"));
    }
}
