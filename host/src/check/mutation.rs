//! Spec mutations generated from the primary's CRD schema, in the manner of Acto (SOSP '23): for every field of
//! the spec, values the schema accepts (the bounds of an integer, each enum value, strings of the allowed lengths,
//! a flipped boolean, an optional field removed or added, a list grown, shrunk or emptied, a map entry added or
//! removed) and values it refuses (past a bound, outside the enum, a required field removed, the wrong type).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use wasm_reconciler_apiserver::schema::Structural;

use crate::plugin::Gvk;

/// Items of a list, and entries of a map, whose own fields are mutated (the rest are mutated as a whole).
const NESTED_ELEMENTS: usize = 3;

/// Strings tried for a string field without an enum, kept when the schema accepts them.
const STRING_GUESSES: [&str; 10] = [
    "a",
    "example",
    "example-2",
    "Example",
    "a1",
    "1",
    "www",
    "example.org.",
    "192.0.2.1",
    "2026-01-02T03:04:05Z",
];

/// A map key the schema accepts (it cannot constrain keys) that label, annotation and ConfigMap keys may not be.
const ODD_KEY: &str = "check key";

/// Why the schema of a primary's spec could not be read from its CRD.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// No CRD defines the kind.
    #[error("no CRD given with --crd defines {0}")]
    NoCrd(String),
    /// The CRD does not serve the version.
    #[error("CRD {crd} has no version {version}")]
    NoVersion {
        /// The CRD's name.
        crd: String,
        /// The version looked for.
        version: String,
    },
    /// The schema is not one the API server accepts.
    #[error("CRD {crd}: the schema of version {version} is invalid: {problems}")]
    Invalid {
        /// The CRD's name.
        crd: String,
        /// The version.
        version: String,
        /// The API server's objections.
        problems: String,
    },
}

/// The schema of a primary's `spec`.
#[derive(Debug, Clone)]
pub struct SpecSchema {
    spec: Structural,
}

/// One step of the path to a field inside the spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Segment {
    /// An object's field or a map's key.
    Key(String),
    /// A list's item.
    Index(usize),
}

/// What a mutation does at its path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Edit {
    /// Sets the field (adding it when absent).
    Set(Value),
    /// Removes the field.
    Remove,
}

/// One change of a spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mutation {
    /// Where, from the spec.
    pub path: Vec<Segment>,
    /// What.
    pub edit: Edit,
    /// Why this value: `minimum`, `enum value`, `optional field removed`, ...
    pub reason: String,
}

impl std::fmt::Display for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = path_text(&self.path);
        match &self.edit {
            Edit::Set(value) => write!(f, "{path} = {} ({})", super::compare::short(value), self.reason),
            Edit::Remove => write!(f, "{path} removed ({})", self.reason),
        }
    }
}

/// `spec.a.b[0]["key.with.dots"]`.
pub fn path_text(path: &[Segment]) -> String {
    let mut text = String::from("spec");
    for segment in path {
        match segment {
            Segment::Key(key) if is_plain(key) => {
                text.push('.');
                text.push_str(key);
            }
            Segment::Key(key) => text.push_str(&format!("[{key:?}]")),
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

fn is_plain(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Mutation {
    /// `spec` with this mutation made (a path that does not lead anywhere leaves it unchanged).
    pub fn apply_to(&self, spec: &Value) -> Value {
        let mut spec = spec.clone();
        let Some((last, parents)) = self.path.split_last() else {
            if let Edit::Set(value) = &self.edit {
                spec = value.clone();
            }
            return spec;
        };
        let mut node = &mut spec;
        for segment in parents {
            node = match segment {
                Segment::Key(key) => match node.as_object_mut() {
                    Some(fields) => fields.entry(key.clone()).or_insert_with(|| json!({})),
                    None => return spec,
                },
                Segment::Index(index) => match node.as_array_mut().and_then(|items| items.get_mut(*index)) {
                    Some(item) => item,
                    None => return spec,
                },
            };
        }
        match (last, &self.edit, node) {
            (Segment::Key(key), Edit::Set(value), Value::Object(fields)) => {
                fields.insert(key.clone(), value.clone());
            }
            (Segment::Key(key), Edit::Remove, Value::Object(fields)) => {
                fields.shift_remove(key);
            }
            (Segment::Index(index), Edit::Set(value), Value::Array(items)) if *index <= items.len() => {
                if *index == items.len() {
                    items.push(value.clone());
                } else {
                    items[*index] = value.clone();
                }
            }
            (Segment::Index(index), Edit::Remove, Value::Array(items)) if *index < items.len() => {
                items.remove(*index);
            }
            _ => {}
        }
        spec
    }
}

/// Values of the fixtures' specs, by schema path (`spec.records[]`): realistic values to try besides the
/// generated ones.
#[derive(Debug, Clone, Default)]
pub struct ValuePool {
    values: BTreeMap<String, Vec<Value>>,
}

impl ValuePool {
    /// Collects every scalar of `spec` under its schema path.
    pub fn add(&mut self, spec: &Value) {
        self.collect(spec, "spec".into());
    }

    fn collect(&mut self, value: &Value, path: String) {
        match value {
            Value::Object(fields) => {
                for (key, value) in fields {
                    self.collect(value, format!("{path}.{key}"));
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.collect(item, format!("{path}[]"));
                }
            }
            scalar => {
                let values = self.values.entry(path).or_default();
                if !values.contains(scalar) {
                    values.push(scalar.clone());
                }
            }
        }
    }

    fn at(&self, path: &str) -> &[Value] {
        self.values.get(path).map_or(&[], Vec::as_slice)
    }
}

impl SpecSchema {
    /// The `spec` schema of `gvk` in the CRD among `crds` that defines its group and kind.
    pub fn from_crds(crds: &[Value], gvk: &Gvk) -> Result<Self, SchemaError> {
        let crd = crds
            .iter()
            .find(|crd| {
                crd.pointer("/spec/group").and_then(Value::as_str) == Some(gvk.group.as_str())
                    && crd.pointer("/spec/names/kind").and_then(Value::as_str) == Some(gvk.kind.as_str())
            })
            .ok_or_else(|| SchemaError::NoCrd(gvk.to_string()))?;
        let crd_name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let version = versions
            .iter()
            .find(|version| version["name"] == gvk.version.as_str())
            .ok_or_else(|| SchemaError::NoVersion {
                crd: crd_name.clone(),
                version: gvk.version.clone(),
            })?;
        let schema = version
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        let root = Structural::from_openapi_v3(&schema).map_err(|errors| SchemaError::Invalid {
            crd: crd_name.clone(),
            version: gvk.version.clone(),
            problems: errors
                .iter()
                .map(|error| error.cause_message())
                .collect::<Vec<_>>()
                .join("; "),
        })?;
        let spec = root.property("spec").cloned().unwrap_or_else(|| {
            let mut open = Structural::default();
            open.type_name = Some("object".into());
            open.preserve_unknown_fields = true;
            open
        });
        Ok(Self { spec })
    }

    /// Whether `spec` is valid by the schema (what the API server would also check).
    pub fn accepts(&self, spec: &Value) -> bool {
        self.spec.validate(spec).is_empty()
    }

    /// What the schema objects to in `spec`, a line each, fields named from `spec`.
    pub fn problems(&self, spec: &Value) -> Vec<String> {
        self.spec
            .validate(spec)
            .iter()
            .map(|error| {
                // The validator names the root `<nil>` and leaves its path out of the message, as Go's does.
                let field = match error.field.as_str() {
                    "" | "<nil>" => "spec".to_owned(),
                    field => format!("spec.{field}"),
                };
                format!("{field}: {}", error.cause_message().replace(":  in body", ": in body"))
            })
            .collect()
    }

    /// Every change of `spec` to a value the schema accepts, field by field, in schema order.
    pub fn valid_mutations(&self, spec: &Value, pool: &ValuePool) -> Vec<Mutation> {
        let mut out = Vec::new();
        valid_at(&self.spec, Some(spec), &mut Vec::new(), "spec", pool, &mut out);
        out.retain(|mutation| {
            let mutated = mutation.apply_to(spec);
            mutated != *spec && self.accepts(&mutated)
        });
        dedupe(out)
    }

    /// Changes of `spec` to values the schema refuses, field by field.
    pub fn invalid_mutations(&self, spec: &Value) -> Vec<Mutation> {
        let mut out = Vec::new();
        invalid_at(&self.spec, spec, &mut Vec::new(), &mut out);
        out.retain(|mutation| !self.accepts(&mutation.apply_to(spec)));
        dedupe(out)
    }
}

fn dedupe(mutations: Vec<Mutation>) -> Vec<Mutation> {
    let mut kept: Vec<Mutation> = Vec::with_capacity(mutations.len());
    for mutation in mutations {
        if !kept
            .iter()
            .any(|other| other.path == mutation.path && other.edit == mutation.edit)
        {
            kept.push(mutation);
        }
    }
    kept
}

fn set(path: &[Segment], value: Value, reason: impl Into<String>) -> Mutation {
    Mutation {
        path: path.to_vec(),
        edit: Edit::Set(value),
        reason: reason.into(),
    }
}

fn remove(path: &[Segment], reason: impl Into<String>) -> Mutation {
    Mutation {
        path: path.to_vec(),
        edit: Edit::Remove,
        reason: reason.into(),
    }
}

fn valid_at(
    node: &Structural,
    value: Option<&Value>,
    path: &mut Vec<Segment>,
    schema_path: &str,
    pool: &ValuePool,
    out: &mut Vec<Mutation>,
) {
    if node.preserve_unknown_fields && node.properties.is_empty() {
        return;
    }
    if !node.enum_values.is_empty() {
        for member in &node.enum_values {
            if Some(member) != value {
                out.push(set(path, member.clone(), "enum value"));
            }
        }
        return;
    }
    if node.int_or_string {
        for (candidate, reason) in [(json!(1), "integer form"), (json!("50%"), "string form")] {
            if Some(&candidate) != value {
                out.push(set(path, candidate, reason));
            }
        }
        return;
    }
    match node.type_name.as_deref() {
        Some("integer") | Some("number") => {
            for (candidate, reason) in number_candidates(node, value) {
                out.push(set(path, candidate, reason));
            }
        }
        Some("boolean") => {
            let current = value.and_then(Value::as_bool);
            for flag in [true, false] {
                if current != Some(flag) {
                    out.push(set(path, json!(flag), "flipped"));
                }
            }
        }
        Some("string") => {
            for (candidate, reason) in string_candidates(node, value, pool.at(schema_path)) {
                out.push(set(path, candidate, reason));
            }
        }
        Some("array") => list_mutations(node, value, path, schema_path, pool, out),
        Some("object") => object_mutations(node, value, path, schema_path, pool, out),
        _ => {}
    }
}

fn object_mutations(
    node: &Structural,
    value: Option<&Value>,
    path: &mut Vec<Segment>,
    schema_path: &str,
    pool: &ValuePool,
    out: &mut Vec<Mutation>,
) {
    let fields = value.and_then(Value::as_object);
    for (name, property) in &node.properties {
        let current = fields.and_then(|fields| fields.get(name));
        path.push(Segment::Key(name.clone()));
        let property_path = format!("{schema_path}.{name}");
        match current {
            Some(current) => {
                valid_at(property, Some(current), path, &property_path, pool, out);
                if !node.required.contains(name) {
                    out.push(remove(path, "optional field removed"));
                }
            }
            None => {
                if let Some(generated) = generate(property, &property_path, pool) {
                    out.push(set(path, generated, "optional field added"));
                }
            }
        }
        path.pop();
    }
    if let Some(values) = node.additional_properties_schema() {
        let entries = fields
            .map(|fields| fields.iter().collect::<Vec<_>>())
            .unwrap_or_default();
        let entry_path = format!("{schema_path}[]");
        if node.max_properties.is_none_or(|max| (entries.len() as i64) < max)
            && let Some(generated) = generate(values, &entry_path, pool)
        {
            let key = (1..)
                .map(|n| format!("check-key-{n}"))
                .find(|key| !fields.is_some_and(|fields| fields.contains_key(key)))
                .unwrap_or_default();
            path.push(Segment::Key(key));
            out.push(set(path, generated.clone(), "map entry added"));
            path.pop();
            // The schema cannot constrain keys: one that most key grammars (labels, ConfigMap keys, environment
            // variables) refuse is as valid to it as any.
            if !fields.is_some_and(|fields| fields.contains_key(ODD_KEY)) {
                path.push(Segment::Key(ODD_KEY.into()));
                out.push(set(path, generated, "map entry added under a key with a space"));
                path.pop();
            }
        }
        let min = node.min_properties.unwrap_or(0);
        if let Some((key, _)) = entries.last()
            && (entries.len() as i64) > min
        {
            path.push(Segment::Key((*key).clone()));
            out.push(remove(path, "map entry removed"));
            path.pop();
        }
        if entries.len() > 1 && min == 0 {
            out.push(set(path, json!({}), "map emptied"));
        }
        for (key, entry) in entries.iter().take(NESTED_ELEMENTS) {
            path.push(Segment::Key((*key).clone()));
            valid_at(values, Some(entry), path, &entry_path, pool, out);
            path.pop();
        }
    }
}

fn list_mutations(
    node: &Structural,
    value: Option<&Value>,
    path: &mut Vec<Segment>,
    schema_path: &str,
    pool: &ValuePool,
    out: &mut Vec<Mutation>,
) {
    let items = value.and_then(Value::as_array).cloned().unwrap_or_default();
    let min = node.min_items.unwrap_or(0);
    let len = items.len() as i64;
    let item_path = format!("{schema_path}[]");
    if len > min && len > 0 {
        if min == 0 {
            out.push(set(path, json!([]), "list emptied"));
        }
        if len > 1 {
            path.push(Segment::Index(items.len() - 1));
            out.push(remove(path, "list shrunk by one"));
            path.pop();
        }
    }
    if let Some(item_schema) = &node.items
        && node.max_items.is_none_or(|max| len < max)
    {
        // A new item: one another fixture uses, a generated one, or a guess, not already in the list.
        let mut guesses = Vec::new();
        valid_at(item_schema, None, &mut Vec::new(), &item_path, pool, &mut guesses);
        let fresh = pool
            .at(&item_path)
            .iter()
            .cloned()
            .chain(generate(item_schema, &item_path, pool))
            .chain(guesses.into_iter().filter_map(|guess| match guess.edit {
                Edit::Set(value) if guess.path.is_empty() => Some(value),
                _ => None,
            }))
            .find(|candidate| {
                !items.contains(candidate) && *candidate != json!("") && item_schema.validate(candidate).is_empty()
            });
        if let Some(item) = fresh {
            path.push(Segment::Index(items.len()));
            out.push(set(path, item, "list grown by one"));
            path.pop();
        }
        for (index, item) in items.iter().enumerate().take(NESTED_ELEMENTS) {
            path.push(Segment::Index(index));
            valid_at(item_schema, Some(item), path, &item_path, pool, out);
            path.pop();
        }
    }
}

/// Integer (or number) values at and near the bounds: the minimum and one above it, the maximum and one below
/// it, zero and a small value where a side is open, and one step either way from the current value.
fn number_candidates(node: &Structural, value: Option<&Value>) -> Vec<(Value, String)> {
    let integer = node.type_name.as_deref() == Some("integer");
    let step = if integer { 1.0 } else { 0.5 };
    let low = node
        .minimum
        .map(|min| if node.exclusive_minimum { min + step } else { min });
    let high = node
        .maximum
        .map(|max| if node.exclusive_maximum { max - step } else { max });
    let current = value.and_then(Value::as_f64);
    let mut candidates: Vec<(f64, &str)> = Vec::new();
    match low {
        Some(low) => {
            candidates.push((low, "minimum"));
            candidates.push((low + step, "minimum + 1"));
        }
        None => {
            candidates.push((0.0, "zero"));
            candidates.push((-step, "negative"));
        }
    }
    match high {
        Some(high) => {
            candidates.push((high, "maximum"));
            candidates.push((high - step, "maximum - 1"));
        }
        None => candidates.push((low.unwrap_or(0.0) + 3.0 * step, "small value above the minimum")),
    }
    if let Some(current) = current {
        candidates.push((current + step, "one more"));
        candidates.push((current - step, "one less"));
    }
    let mut out: Vec<(Value, String)> = Vec::new();
    for (candidate, reason) in candidates {
        let in_bounds = low.is_none_or(|low| candidate >= low) && high.is_none_or(|high| candidate <= high);
        let multiple = node
            .multiple_of
            .is_none_or(|factor| factor == 0.0 || (candidate / factor).fract() == 0.0);
        if !in_bounds || !multiple || Some(candidate) == current {
            continue;
        }
        let json = if integer {
            json!(candidate as i64)
        } else {
            json!(candidate)
        };
        if !out.iter().any(|(seen, _)| *seen == json) {
            out.push((json, reason.to_owned()));
        }
    }
    out
}

/// Strings the schema accepts: empty, one letter, the current value changed, the longest allowed, values other
/// fixtures use, and common shapes (names, a domain, an address, a time) the pattern or format admits.
fn string_candidates(node: &Structural, value: Option<&Value>, pool: &[Value]) -> Vec<(Value, String)> {
    let current = value.and_then(Value::as_str);
    let mut candidates: Vec<(String, String)> = vec![(String::new(), "empty string".into())];
    if let Some(current) = current {
        candidates.push((format!("{current}-changed"), "changed".into()));
    }
    if let Some(max) = node.max_length.filter(|max| (1..=253).contains(max)) {
        candidates.push(("a".repeat(max as usize), "maximum length".into()));
    }
    if let Some(min) = node.min_length.filter(|min| *min > 1) {
        candidates.push(("a".repeat(min as usize), "minimum length".into()));
    }
    for value in pool {
        if let Some(text) = value.as_str() {
            candidates.push((text.to_owned(), "value of another fixture".into()));
        }
    }
    for guess in STRING_GUESSES {
        candidates.push((guess.to_owned(), "example value".into()));
    }
    let mut out: Vec<(Value, String)> = Vec::new();
    let mut generic = 0;
    for (text, reason) in candidates {
        if Some(text.as_str()) == current || out.iter().any(|(seen, _)| seen == &text) {
            continue;
        }
        let candidate = json!(text);
        if !node.validate(&candidate).is_empty() {
            continue;
        }
        // Of the common shapes, two are enough.
        if reason == "example value" {
            generic += 1;
            if generic > 2 {
                continue;
            }
        }
        out.push((candidate, reason));
    }
    out
}

/// A small valid value of `node`: its default, the first enum value, the lowest number, a string the schema
/// accepts, an object with its required fields, a list of its minimum length (at least one item); `None` when
/// none is found.
fn generate(node: &Structural, schema_path: &str, pool: &ValuePool) -> Option<Value> {
    let valid = |value: &Value| node.validate(value).is_empty();
    if let Some(default) = node.default.as_ref().filter(|default| valid(default)) {
        return Some(default.clone());
    }
    if let Some(member) = node.enum_values.first() {
        return Some(member.clone());
    }
    if let Some(value) = pool.at(schema_path).iter().find(|value| valid(value)) {
        return Some(value.clone());
    }
    if node.int_or_string {
        return Some(json!(1));
    }
    let generated = match node.type_name.as_deref() {
        Some("integer") | Some("number") => number_candidates(node, None).into_iter().next().map(|(value, _)| value),
        Some("boolean") => Some(json!(true)),
        Some("string") => string_candidates(node, None, &[])
            .into_iter()
            .find(|(value, _)| value != "")
            .map(|(value, _)| value),
        Some("object") => {
            let mut fields = serde_json::Map::new();
            for name in &node.required {
                let property = node.property(name)?;
                fields.insert(
                    name.clone(),
                    generate(property, &format!("{schema_path}.{name}"), pool)?,
                );
            }
            if let Some(values) = node.additional_properties_schema() {
                for n in 0..node.min_properties.unwrap_or(0).max(1) {
                    fields.insert(
                        format!("check-key-{}", n + 1),
                        generate(values, &format!("{schema_path}[]"), pool)?,
                    );
                }
            }
            Some(Value::Object(fields))
        }
        Some("array") => {
            let item = generate(node.items.as_deref()?, &format!("{schema_path}[]"), pool)?;
            Some(Value::Array(vec![item; node.min_items.unwrap_or(1).max(1) as usize]))
        }
        _ => None,
    }?;
    valid(&generated).then_some(generated)
}

fn invalid_at(node: &Structural, value: &Value, path: &mut Vec<Segment>, out: &mut Vec<Mutation>) {
    if node.preserve_unknown_fields && node.properties.is_empty() {
        return;
    }
    if !node.enum_values.is_empty() {
        out.push(set(path, json!("NotAnAllowedValue"), "outside the enum"));
        return;
    }
    match node.type_name.as_deref() {
        Some("integer") | Some("number") => {
            if let Some(min) = node.minimum {
                let below = if node.exclusive_minimum { min } else { min - 1.0 };
                out.push(set(path, number(node, below), "below the minimum"));
            }
            if let Some(max) = node.maximum {
                let above = if node.exclusive_maximum { max } else { max + 1.0 };
                out.push(set(path, number(node, above), "above the maximum"));
            }
            out.push(set(path, json!("not-a-number"), "a string for a number"));
        }
        Some("boolean") => out.push(set(path, json!("yes"), "a string for a boolean")),
        Some("string") => {
            if let Some(max) = node.max_length.filter(|max| *max < 10_000) {
                out.push(set(path, json!("a".repeat(max as usize + 1)), "longer than maxLength"));
            }
            if let Some(min) = node.min_length.filter(|min| *min > 0) {
                out.push(set(path, json!("a".repeat(min as usize - 1)), "shorter than minLength"));
            }
            if node.pattern.is_some() {
                out.push(set(path, json!("Not Matching!"), "not matching the pattern"));
            }
            if !node.int_or_string {
                out.push(set(path, json!(12345), "a number for a string"));
            }
        }
        Some("array") => {
            let len = value.as_array().map_or(0, Vec::len) as i64;
            if let Some(min) = node.min_items.filter(|min| *min > 0 && len >= *min) {
                out.push(set(path, json!([]), format!("fewer than minItems ({min})")));
            }
            out.push(set(path, json!("not-a-list"), "a string for a list"));
        }
        Some("object") => {
            let fields = value.as_object();
            if !path.is_empty() {
                out.push(set(path, json!("not-an-object"), "a string for an object"));
            }
            if let Some(values) = node.additional_properties_schema()
                && let Some((key, entry)) = fields.and_then(|fields| fields.iter().next())
            {
                path.push(Segment::Key(key.clone()));
                invalid_at(values, entry, path, out);
                path.pop();
            }
            for (name, property) in &node.properties {
                path.push(Segment::Key(name.clone()));
                match fields.and_then(|fields| fields.get(name)) {
                    Some(current) => {
                        invalid_at(property, current, path, out);
                        if node.required.contains(name) {
                            out.push(remove(path, "required field removed"));
                        }
                    }
                    None => {
                        if let Some(generated) = generate(property, "", &ValuePool::default()) {
                            invalid_at(property, &generated, path, out);
                        }
                    }
                }
                path.pop();
            }
        }
        _ => {}
    }
}

fn number(node: &Structural, value: f64) -> Value {
    if node.type_name.as_deref() == Some("integer") {
        json!(value as i64)
    } else {
        json!(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> SpecSchema {
        let crd = json!({
            "metadata": {"name": "sets.ex.io"},
            "spec": {"group": "ex.io", "names": {"kind": "Set"}, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "required": ["replicas", "mode"], "properties": {
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                    "mode": {"type": "string", "enum": ["Fast", "Safe"]},
                    "paused": {"type": "boolean"},
                    "name": {"type": "string", "minLength": 1, "maxLength": 5},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "records": {"type": "array", "minItems": 1, "items": {"type": "string"}}
                }}}
            }}}]}
        });
        SpecSchema::from_crds(&[crd], &Gvk::new("ex.io", "v1", "Set")).unwrap()
    }

    fn texts(mutations: &[Mutation]) -> Vec<String> {
        mutations.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_mutations_cover_bounds_enums_flags_lengths_optional_fields_lists_and_maps() {
        let spec = json!({"replicas": 3, "mode": "Safe", "labels": {"a": "1", "b": "2"}, "records": ["x", "y"]});
        let mutations = schema().valid_mutations(&spec, &ValuePool::default());
        let texts = texts(&mutations);
        for expected in [
            "spec.replicas = 0 (minimum)",
            "spec.replicas = 1 (minimum + 1)",
            "spec.replicas = 10 (maximum)",
            "spec.replicas = 9 (maximum - 1)",
            "spec.replicas = 4 (one more)",
            "spec.mode = \"Fast\" (enum value)",
            "spec.paused = true (optional field added)",
            "spec.name = \"aaaaa\" (optional field added)",
            "spec.labels[\"check-key-1\"] = \"a\" (map entry added)",
            "spec.labels[\"check key\"] = \"a\" (map entry added under a key with a space)",
            "spec.labels.b removed (map entry removed)",
            "spec.labels = {} (map emptied)",
            "spec.labels removed (optional field removed)",
            "spec.records[1] removed (list shrunk by one)",
            "spec.records[2] = \"a\" (list grown by one)",
        ] {
            assert!(
                texts.iter().any(|text| text == expected),
                "{expected} missing from {texts:#?}"
            );
        }
        // Every one is valid, changes the spec, and the list never goes below minItems.
        for mutation in &mutations {
            let mutated = mutation.apply_to(&spec);
            assert_ne!(mutated, spec, "{mutation}");
            assert!(schema().accepts(&mutated), "{mutation}");
        }
        assert!(!texts.iter().any(|text| text.contains("list emptied")), "{texts:#?}");
    }

    #[test]
    fn invalid_mutations_break_bounds_enums_required_fields_and_types() {
        let spec = json!({"replicas": 3, "mode": "Safe", "name": "ab", "records": ["x"]});
        let texts = texts(&schema().invalid_mutations(&spec));
        for expected in [
            "spec.replicas = -1 (below the minimum)",
            "spec.replicas = 11 (above the maximum)",
            "spec.replicas removed (required field removed)",
            "spec.mode = \"NotAnAllowedValue\" (outside the enum)",
            "spec.name = \"aaaaaa\" (longer than maxLength)",
            "spec.name = \"\" (shorter than minLength)",
            "spec.records = [] (fewer than minItems (1))",
        ] {
            assert!(
                texts.iter().any(|text| text == expected),
                "{expected} missing from {texts:#?}"
            );
        }
    }

    #[test]
    fn mutations_apply_at_their_path() {
        let spec = json!({"a": {"b": [1, 2]}, "c": 1});
        let at = |path: Vec<Segment>, edit: Edit| {
            Mutation {
                path,
                edit,
                reason: String::new(),
            }
            .apply_to(&spec)
        };
        let key = |k: &str| Segment::Key(k.into());
        assert_eq!(at(vec![key("c")], Edit::Remove), json!({"a": {"b": [1, 2]}}));
        assert_eq!(
            at(vec![key("a"), key("b"), Segment::Index(2)], Edit::Set(json!(3))),
            json!({"a": {"b": [1, 2, 3]}, "c": 1})
        );
        assert_eq!(
            at(vec![key("a"), key("b"), Segment::Index(0)], Edit::Remove),
            json!({"a": {"b": [2]}, "c": 1})
        );
        assert_eq!(at(vec![key("x"), key("y")], Edit::Set(json!(1)))["x"], json!({"y": 1}));
        assert_eq!(
            path_text(&[key("data"), key("a.b"), Segment::Index(1)]),
            "spec.data[\"a.b\"][1]"
        );
    }

    #[test]
    fn a_missing_crd_or_version_is_named() {
        let error = SpecSchema::from_crds(&[], &Gvk::new("ex.io", "v1", "Set")).unwrap_err();
        assert_eq!(error.to_string(), "no CRD given with --crd defines ex.io/v1/Set");
    }
}
