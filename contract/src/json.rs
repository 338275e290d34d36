//! The two JSON operations of contract 0.3, shared so the host and the SDK's own fallback agree exactly:
//! [`summarize`] (a child's identity and whether it contains an expected object, read in one pass without building
//! the child) and [`merge_patch`] (RFC 7386, how a `patched` child is made from its base).

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

#[cfg(any(test, feature = "scan"))]
mod scan;

/// `record child-summary`: an object's `apiVersion`, `kind` and `metadata.name`, and whether it contains the
/// expected object it was summarised against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChildSummary {
    /// `apiVersion` (empty when absent).
    pub api_version: String,
    /// `kind` (empty when absent).
    pub kind: String,
    /// `metadata.name` (empty when absent).
    pub name: String,
    /// Whether every field of the expected object is in the object with an equal value; false without one.
    pub contains: bool,
}

/// An expected object prepared for [`summarize`]: each part keeps its JSON text, so a child that writes a part the
/// same way (serde_json writes objects of sorted maps alike, and Kubernetes' maps come sorted) is matched by
/// comparing text, without unescaping or building anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    fields: Vec<(String, Part)>,
}

/// One expected value: its JSON text and its shape.
#[derive(Debug, Clone, PartialEq)]
struct Part {
    text: String,
    shape: Shape,
}

/// An object's fields, or any other value (compared by parsing when its text differs).
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Object(Vec<(String, Part)>),
    Other,
}

impl Expected {
    /// Prepares the JSON object `text`, each part's text taken from it as written. An error when `text` is not a
    /// JSON object.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let fields = deserializer.deserialize_map(RawFields)?;
        deserializer.end()?;
        Ok(Self { fields })
    }
}

/// An object's fields, each as the raw text it is written with.
struct RawFields;

impl<'de> Visitor<'de> for RawFields {
    type Value = Vec<(String, Part)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let raw: &'de RawValue = map.next_value()?;
            let raw = raw.get();
            let shape = if raw.starts_with('{') {
                let fields = serde_json::Deserializer::from_str(raw)
                    .deserialize_map(RawFields)
                    .map_err(serde::de::Error::custom)?;
                Shape::Object(fields)
            } else {
                Shape::Other
            };
            fields.push((
                key.into_owned(),
                Part {
                    text: raw.to_owned(),
                    shape,
                },
            ));
        }
        Ok(fields)
    }
}

impl Part {
    /// Whether it is the string `value`.
    fn is_str(&self, value: &str) -> bool {
        self.text.starts_with('"') && serde_json::from_str::<Cow<'_, str>>(&self.text).is_ok_and(|text| text == value)
    }
}

fn field<'a>(fields: &'a [(String, Part)], key: &str) -> Option<&'a Part> {
    fields.iter().find(|(name, _)| name == key).map(|(_, part)| part)
}

/// Summarises the JSON object `text`; with `expected`, says whether the object contains it: every field of
/// `expected` present with an equal value, objects compared field by field (extra fields do not matter), arrays
/// element by element with equal lengths, numbers as `f64` (the rule the host uses to skip a no-op apply).
///
/// The text is read once and nothing of it is built but the three names; a part written exactly as expected is
/// compared as text. An error when it is not a JSON object.
///
/// With the `scan` feature (the host's), text a JSON writer made is read by a byte scanner that matches each
/// expected part where it starts and skips the rest without parsing it; the answer is the same.
pub fn summarize(text: &str, expected: Option<&Expected>) -> Result<ChildSummary, serde_json::Error> {
    #[cfg(feature = "scan")]
    if let Some(summary) = scan::summarize(text, expected.map(|expected| expected.fields.as_slice())) {
        return Ok(summary);
    }
    summarize_serde(text, expected)
}

/// [`summarize`] on serde_json alone.
fn summarize_serde(text: &str, expected: Option<&Expected>) -> Result<ChildSummary, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let summary = deserializer.deserialize_map(Top {
        expected: expected.map(|expected| expected.fields.as_slice()),
    })?;
    deserializer.end()?;
    Ok(summary)
}

/// Whether `expected` is contained in `observed` (the rule of [`summarize`], on parsed values).
pub fn is_subset(expected: &Value, observed: &Value) -> bool {
    match (expected, observed) {
        (Value::Object(expected), Value::Object(observed)) => expected.iter().all(|(key, value)| {
            observed
                .get(key)
                .is_some_and(|observed_value| is_subset(value, observed_value))
        }),
        (Value::Array(expected), Value::Array(observed)) => {
            expected.len() == observed.len() && expected.iter().zip(observed).all(|(e, o)| is_subset(e, o))
        }
        (Value::Number(expected), Value::Number(observed)) => expected.as_f64() == observed.as_f64(),
        _ => expected == observed,
    }
}

/// Applies the JSON merge patch `patch` to `target` (RFC 7386): an object patch sets each of its fields
/// (recursively; `null` removes the field), anything else replaces `target` whole.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(object) = target else {
        return;
    };
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// [`merge_patch`] on JSON texts: the result as text, built from slices of `target` and `patch` without parsing
/// more than the objects the patch reaches into (serde_json writes the same text for the same value, so the result
/// reads back as `merge_patch` would make it). Fields keep their order; new ones come last.
pub fn merge_patch_text(target: &str, patch: &str) -> Result<String, serde_json::Error> {
    let patch_fields = match object_fields(patch)? {
        Some(fields) => fields,
        // Not an object: the patch replaces the target whole (checked to be JSON).
        None => return serde_json::from_str::<&RawValue>(patch).map(|raw| raw.get().to_owned()),
    };
    let mut fields: Vec<(Cow<'_, str>, String)> = object_fields(target)?
        .unwrap_or_default()
        .into_iter()
        .map(|(key, raw)| (key, raw.to_owned()))
        .collect();
    for (key, value) in patch_fields {
        let position = fields.iter().position(|(name, _)| *name == key);
        if value == "null" {
            if let Some(position) = position {
                fields.remove(position);
            }
            continue;
        }
        let merged = match position {
            Some(position) => merge_patch_text(&fields[position].1, value)?,
            None => merge_patch_text("{}", value)?,
        };
        match position {
            Some(position) => fields[position].1 = merged,
            None => fields.push((key, merged)),
        }
    }
    let mut text = String::from("{");
    for (index, (key, value)) in fields.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&serde_json::to_string(key.as_ref())?);
        text.push(':');
        text.push_str(value);
    }
    text.push('}');
    Ok(text)
}

/// An object's fields: each key with the raw text of its value.
type RawFieldList<'a> = Vec<(Cow<'a, str>, &'a str)>;

/// The fields of the JSON object `text` as raw slices, in order; `None` when `text` is JSON but not an object.
fn object_fields(text: &str) -> Result<Option<RawFieldList<'_>>, serde_json::Error> {
    if !text.trim_start().starts_with('{') {
        serde_json::from_str::<&RawValue>(text)?;
        return Ok(None);
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let fields = deserializer.deserialize_map(RawSlices)?;
    deserializer.end()?;
    Ok(Some(fields))
}

/// An object's fields as raw slices of its text.
struct RawSlices;

impl<'de> Visitor<'de> for RawSlices {
    type Value = RawFieldList<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let raw: &'de RawValue = map.next_value()?;
            fields.push((key, raw.get()));
        }
        Ok(fields)
    }
}

/// Whether the raw JSON value `raw` contains `part`: equal text, else compared by shape.
fn contains_raw(raw: &str, part: &Part) -> bool {
    if raw == part.text {
        return true;
    }
    match &part.shape {
        Shape::Object(fields) => serde_json::Deserializer::from_str(raw)
            .deserialize_map(ObjectContains { fields })
            .unwrap_or(false),
        Shape::Other => match (
            serde_json::from_str::<Value>(&part.text),
            serde_json::from_str::<Value>(raw),
        ) {
            (Ok(expected), Ok(observed)) => is_subset(&expected, &observed),
            _ => false,
        },
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(value)))
            }
            fn visit_str<E>(self, value: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(value.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// How far an object's fields meet the expected ones: fields that matched, and whether any did not.
#[derive(Default)]
struct Tally {
    matched: usize,
    mismatched: bool,
}

impl Tally {
    fn record(&mut self, equal: bool) {
        if equal {
            self.matched += 1;
        } else {
            self.mismatched = true;
        }
    }

    /// Whether every expected field matched (keys of a JSON object are unique).
    fn contains(&self, expected: Option<&[(String, Part)]>) -> bool {
        expected.is_some_and(|expected| !self.mismatched && self.matched == expected.len())
    }

    /// Reads the value of a field the caller does not capture: compared when expected, skipped otherwise.
    fn other<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        key: &str,
        expected: Option<&[(String, Part)]>,
    ) -> Result<(), A::Error> {
        match expected.and_then(|expected| field(expected, key)) {
            Some(part) => {
                let raw: &'de RawValue = map.next_value()?;
                self.record(contains_raw(raw.get(), part));
            }
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    /// Reads a string field the caller captures, compared when expected.
    fn captured<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        key: &str,
        expected: Option<&[(String, Part)]>,
    ) -> Result<String, A::Error> {
        let value: String = map.next_value()?;
        if let Some(part) = expected.and_then(|expected| field(expected, key)) {
            self.record(part.is_str(&value));
        }
        Ok(value)
    }
}

/// The whole object: captures `apiVersion`, `kind` and `metadata.name`.
struct Top<'a> {
    expected: Option<&'a [(String, Part)]>,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ChildSummary;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChildSummary, A::Error> {
        let expected = self.expected;
        let mut tally = Tally::default();
        let mut summary = ChildSummary::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match &*key {
                "apiVersion" => summary.api_version = tally.captured(&mut map, &key, expected)?,
                "kind" => summary.kind = tally.captured(&mut map, &key, expected)?,
                "metadata" => {
                    let wanted = expected.and_then(|expected| field(expected, "metadata"));
                    let fields = wanted.and_then(|part| match &part.shape {
                        Shape::Object(fields) => Some(fields.as_slice()),
                        Shape::Other => None,
                    });
                    let (name, contains) = map.next_value_seed(Metadata { expected: fields })?;
                    summary.name = name;
                    if wanted.is_some() {
                        tally.record(fields.is_some() && contains);
                    }
                }
                _ => tally.other(&mut map, &key, expected)?,
            }
        }
        summary.contains = tally.contains(expected);
        Ok(summary)
    }
}

/// `metadata`: captures `name`, and says whether it contains the expected metadata (false without one).
struct Metadata<'a> {
    expected: Option<&'a [(String, Part)]>,
}

impl<'de> DeserializeSeed<'de> for Metadata<'_> {
    type Value = (String, bool);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(String, bool), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Metadata<'_> {
    type Value = (String, bool);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(String, bool), A::Error> {
        let mut tally = Tally::default();
        let mut name = String::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if key == "name" {
                name = tally.captured(&mut map, &key, self.expected)?;
            } else {
                tally.other(&mut map, &key, self.expected)?;
            }
        }
        Ok((name, tally.contains(self.expected)))
    }
}

/// An object written differently from the expected one: whether it contains it, field by field.
struct ObjectContains<'a> {
    fields: &'a [(String, Part)],
}

impl<'de> Visitor<'de> for ObjectContains<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut tally = Tally::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            tally.other(&mut map, &key, Some(self.fields))?;
        }
        Ok(tally.contains(Some(self.fields)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn contains(object: &Value, expected: &Value) -> bool {
        let prepared = Expected::parse(&expected.to_string()).unwrap();
        let text = object.to_string();
        let by_text = summarize_serde(&text, Some(&prepared)).unwrap();
        assert_eq!(by_text.contains, is_subset(expected, object), "{expected} in {object}");
        let scanned = scan::summarize(&text, Some(&prepared.fields));
        assert_eq!(scanned.as_ref(), Some(&by_text), "scanned {expected} in {object}");
        by_text.contains
    }

    /// Where the scanner answers, it answers as the serde path does; where the serde path refuses the text, the
    /// scanner does not answer. Whether it answered.
    fn scanner_agrees(text: &str, expected: Option<&Expected>) -> bool {
        let scanned = scan::summarize(text, expected.map(|expected| expected.fields.as_slice()));
        match (summarize_serde(text, expected), &scanned) {
            (Ok(by_serde), Some(scanned)) => assert_eq!(&by_serde, scanned, "{text}"),
            (Err(error), Some(scanned)) => panic!("scanned {scanned:?} from text serde refuses ({error}): {text}"),
            (_, None) => {}
        }
        scanned.is_some()
    }

    #[test]
    fn scanner_answers_as_serde_or_not_at_all() {
        let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web-0", "namespace": "ns", "resourceVersion": "12",
                "labels": {"app": "web"}, "annotations": {"a": "b"},
                "ownerReferences": [{"kind": "Set", "controller": true, "uid": "u-1"}],
                "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:data": {}}}]},
            "data": {"settings.yaml": "a: 1\nb: \"two\"\n", "n": "-1.5e3"}, "list": [1, -0.5, 2e-3, true, false, null]});
        let expected = [
            None,
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                "data": {"settings.yaml": "a: 1\nb: \"two\"\n", "n": "-1.5e3"}})),
            Some(json!({"metadata": {"name": "web-1"}, "list": [1.0, -0.5, 0.002, true, false, null]})),
            Some(json!({"metadata": "web-0", "data": {"n": "x"}})),
        ]
        .map(|expected| expected.map(|expected| Expected::parse(&expected.to_string()).unwrap()));
        let texts = [
            child.to_string(),
            serde_json::to_string_pretty(&child).unwrap(),
            r#"{"metadata":{"name":"c"},"data":{"k\u0065y":"line\nnext \"q\""}}"#.to_owned(),
        ];
        let replacements = [
            "\"", "\\", "}", "]", "{", "[", ",", ":", "0", "1", "x", " ", "\u{1}", "-", ".", "e", "",
        ];
        let mut answered = 0_usize;
        for expected in &expected {
            for text in &texts {
                assert!(scanner_agrees(text, expected.as_ref()) || text.contains("\\u0065"));
                for (at, _) in text.char_indices() {
                    answered += usize::from(scanner_agrees(&text[..at], expected.as_ref()));
                    for replacement in replacements {
                        let mut changed = text.clone();
                        changed.replace_range(at..at + 1, replacement);
                        answered += usize::from(scanner_agrees(&changed, expected.as_ref()));
                        changed = text.clone();
                        changed.insert_str(at, replacement);
                        answered += usize::from(scanner_agrees(&changed, expected.as_ref()));
                    }
                }
            }
        }
        // Many changes leave valid JSON (a letter in a string, a digit in a number), which the scanner answers.
        assert!(answered > 1000, "the scanner answered {answered} times");
        let deep = format!(
            r#"{{"metadata":{{"name":"c"}},"x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        // Nesting the scanner does not follow is left to the serde path, which skips it without recursing.
        assert!(!scanner_agrees(&deep, None));
        assert_eq!(summarize_serde(&deep, None).unwrap().name, "c");
    }

    #[test]
    fn summary_names_the_object() {
        let text = r#"{"metadata":{"labels":{"a":"b"},"name":"web-0"},"kind":"ConfigMap","apiVersion":"v1","data":{}}"#;
        let summary = summarize(text, None).unwrap();
        assert_eq!(
            summary,
            ChildSummary {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "web-0".into(),
                contains: false,
            }
        );
        assert!(summarize("[1]", None).is_err());
        assert!(summarize(r#"{"a":1} x"#, None).is_err());
        assert!(summarize(r#"{"kind":1}"#, None).is_err());
    }

    #[test]
    fn contains_is_a_recursive_subset() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"app": "web", "extra": "x"}},
            "data": {"a": "1", "b": "2"}, "list": [1, {"x": 1, "y": 2}], "n": 2, "t": true, "z": null});
        assert!(contains(&object, &json!({})));
        assert!(contains(
            &object,
            &json!({"metadata": {"labels": {"app": "web"}}, "data": {"b": "2"}})
        ));
        assert!(contains(
            &object,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        ));
        assert!(contains(
            &object,
            &json!({"list": [1.0, {"y": 2}], "n": 2.0, "t": true, "z": null})
        ));
        assert!(!contains(&object, &json!({"kind": "Secret"})));
        assert!(!contains(&object, &json!({"metadata": {"name": "d"}})));
        assert!(!contains(&object, &json!({"metadata": {"labels": {"app": "db"}}})));
        assert!(!contains(&object, &json!({"metadata": {"annotations": {}}})));
        assert!(!contains(&object, &json!({"metadata": "c"})));
        assert!(!contains(&object, &json!({"data": {"c": "3"}})));
        assert!(!contains(&object, &json!({"list": [1]})));
        assert!(!contains(&object, &json!({"list": [1, {"x": 1}, 3]})));
        assert!(!contains(&object, &json!({"n": "2"})));
        assert!(!contains(&object, &json!({"t": false})));
        assert!(!contains(&object, &json!({"data": "x"})));
        assert!(!contains(&object, &json!({"missing": null})));
    }

    #[test]
    fn escaped_keys_and_values_compare_by_content() {
        let text = r#"{"metadata":{"name":"c"},"data":{"k\u0065y":"line\nnext \"q\""}}"#;
        let expected = Expected::parse(&json!({"data": {"key": "line\nnext \"q\""}}).to_string()).unwrap();
        assert!(summarize(text, Some(&expected)).unwrap().contains);
        // The same content written with other whitespace and key order.
        let spaced = r#"{ "data" : { "other": 1, "key" : "line\nnext \"q\"" }, "metadata": {"name": "c"} }"#;
        assert!(summarize(spaced, Some(&expected)).unwrap().contains);
    }

    #[test]
    fn only_objects_are_prepared_from_text() {
        assert!(Expected::parse("[1]").is_err());
        assert!(Expected::parse(r#"{"a":1} x"#).is_err());
        assert!(Expected::parse(r#"{"a":{"b":}}"#).is_err());
        assert!(
            !summarize(
                r#"{"kind":"A"}"#,
                Some(&Expected::parse(r#"{"kind":"\u0042"}"#).unwrap())
            )
            .unwrap()
            .contains
        );
        assert!(
            summarize(
                r#"{"kind":"B"}"#,
                Some(&Expected::parse(r#"{"kind":"\u0042"}"#).unwrap())
            )
            .unwrap()
            .contains
        );
    }

    #[test]
    fn merge_patch_on_text_reads_back_as_merge_patch() {
        let cases = [
            (
                json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1]}),
                json!({"a": "z", "c": {"f": null, "h": "i"}, "l": [2], "n": {"x": 1}}),
            ),
            (
                json!({"apiVersion": "v1", "metadata": {"labels": {"k": "v"}}, "data": {"s": "line\nnext \"q\""}}),
                json!({"metadata": {"name": "c-0"}}),
            ),
            (json!({"a": 1}), json!([1, 2])),
            (json!({"a": 1}), json!({"a": {"b": null, "c": 2}})),
            (json!({"a": {"b": 1}}), json!({"a": "x", "k\u{e9}y": {"n": null}})),
            (json!({"a": 1}), json!({})),
        ];
        for (target, patch) in cases {
            let mut expected = target.clone();
            merge_patch(&mut expected, &patch);
            let text = merge_patch_text(&target.to_string(), &patch.to_string()).unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&text).unwrap(),
                expected,
                "{target} + {patch}"
            );
            assert_eq!(text, expected.to_string(), "{target} + {patch}");
        }
        assert!(merge_patch_text("{", "{}").is_err());
        assert!(merge_patch_text("{}", "{").is_err());
        assert_eq!(merge_patch_text("[1]", r#"{"a":1}"#).unwrap(), r#"{"a":1}"#);
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "list": [1]});
        merge_patch(
            &mut target,
            &json!({"a": "z", "c": {"f": null, "h": "i"}, "list": [2], "new": {"x": 1}}),
        );
        assert_eq!(
            target,
            json!({"a": "z", "c": {"d": "e", "h": "i"}, "list": [2], "new": {"x": 1}})
        );
        let mut scalar = json!("x");
        merge_patch(&mut scalar, &json!({"a": 1}));
        assert_eq!(scalar, json!({"a": 1}));
        merge_patch(&mut scalar, &json!([1]));
        assert_eq!(scalar, json!([1]));
    }
}
