//! JSON patch (RFC 6902) with the behaviour and messages of `gopkg.in/evanphx/json-patch.v4`, the
//! library kube-apiserver applies `application/json-patch+json` requests with.

use super::PatchError;
use serde_json::{Map, Value};

/// The apiserver refuses JSON patches with more operations than this.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies the RFC 6902 `patch` (a list of operations) to `target`.
///
/// Malformed documents are [`PatchError::BadRequest`]; an operation that does not apply is
/// [`PatchError::Unprocessable`] carrying the library's message.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations: &[Value] = match patch {
        Value::Null => &[],
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_json_kind(other)
            )));
        }
    };
    if let Some(bad) = operations.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            go_json_kind(bad)
        )));
    }
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::RequestEntityTooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            operations.len()
        )));
    }
    let mut doc = target.clone();
    let empty = Map::new();
    for op in operations {
        let op = Operation(op.as_object().unwrap_or(&empty));
        apply_operation(&mut doc, &op).map_err(PatchError::Unprocessable)?;
    }
    Ok(doc)
}

/// How Go's encoding/json names the kind of a JSON value in its type errors.
pub fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const MISSING: &str = "missing value";

/// One operation object.
struct Operation<'a>(&'a Map<String, Value>);

impl Operation<'_> {
    fn kind(&self) -> &str {
        self.0.get("op").and_then(Value::as_str).unwrap_or("unknown")
    }

    fn string_field(&self, name: &str, missing: &str) -> Result<String, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(format!("{missing}: {MISSING}")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                go_json_kind(other)
            )),
        }
    }

    fn path(&self) -> Result<String, String> {
        self.string_field("path", "operation missing path field")
    }

    fn from(&self) -> Result<String, String> {
        self.string_field("from", "operation, missing from field")
    }

    /// The `value` member; an absent value behaves as `null`.
    fn value(&self) -> Value {
        self.0.get("value").cloned().unwrap_or(Value::Null)
    }

    fn has_value(&self) -> bool {
        self.0.contains_key("value")
    }
}

fn apply_operation(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    match op.kind() {
        "add" => add(doc, op),
        "remove" => remove(doc, op),
        "replace" => replace(doc, op),
        "move" => move_value(doc, op),
        "test" => test(doc, op),
        "copy" => copy(doc, op),
        other => Err(format!("Unexpected kind: {other}")),
    }
}

fn add(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    container_add(container, &key, op.value()).map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    container_remove(container, &key)
        .map(|_| ())
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        // The library replaces the document with an object or array and silently ignores other values.
        let value = op.value();
        if value.is_object() || value.is_array() {
            *doc = value;
        }
        return Ok(());
    }
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "replace operation does not apply: doc is missing path: {path}: {MISSING}"
        ));
    };
    if container_get(container, &key).is_err() {
        return Err(format!(
            "replace operation does not apply: doc is missing key: {path}: {MISSING}"
        ));
    }
    container_set(container, &key, op.value()).map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn move_value(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let from = op
        .from()
        .map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let Some((container, key)) = find_container(doc, &from) else {
        return Err(format!(
            "move operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    container_get(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let value = container_remove(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = op
        .path()
        .map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    };
    container_add(container, &key, value).map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn test(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let path = op
        .path()
        .map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return if *doc == op.value() { Ok(()) } else { Err(failed()) };
    }
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "test operation does not apply: is missing path: {path}: {MISSING}"
        ));
    };
    let current = container_get(container, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match current {
        None if op.value().is_null() => Ok(()),
        None => Err(failed()),
        Some(_) if !op.has_value() => Err(failed()),
        Some(v) if *v == op.value() => Ok(()),
        Some(_) => Err(failed()),
    }
}

fn copy(doc: &mut Value, op: &Operation<'_>) -> Result<(), String> {
    let from = op
        .from()
        .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let Some((container, key)) = find_container(doc, &from) else {
        return Err(format!(
            "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    let value = container_get(container, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
        .cloned()
        .unwrap_or(Value::Null);
    let path = op
        .path()
        .map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    };
    container_add(container, &key, value).map_err(|e| format!("error while adding value during copy: {e}"))
}

/// RFC 6901 unescaping: `~1` is `/`, then `~0` is `~`.
fn decode_key(part: &str) -> String {
    part.replace("~1", "/").replace("~0", "~")
}

/// Finds the container of the last path segment (the library's `findObject`): every segment but the
/// last must name an existing, non-null object or array.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let key = decode_key(split[split.len() - 1]);
    let mut current = doc;
    for part in &split[1..split.len() - 1] {
        let part = decode_key(part);
        let next = match current {
            Value::Object(map) => map.get_mut(&part),
            Value::Array(list) => {
                let len = list.len();
                resolve_index(&part, len)
                    .ok()
                    .filter(|i| *i < len)
                    .and_then(move |i| list.get_mut(i))
            }
            _ => None,
        }?;
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        current = next;
    }
    Some((current, key))
}

/// Go's `strconv.Atoi`.
fn atoi(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            crate::go_format::quote(text)
        ));
    }
    text.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            crate::go_format::quote(text)
        )
    })
}

fn invalid_index(index: i64) -> String {
    format!("Unable to access invalid index: {index}: invalid index referenced")
}

/// Resolves an existing-element index (negative indices count from the end).
fn resolve_index(key: &str, len: usize) -> Result<usize, String> {
    let index = atoi(key)?;
    let len = len as i64;
    let resolved = if index < 0 {
        if index < -len {
            return Err(invalid_index(index));
        }
        index + len
    } else {
        index
    };
    if resolved >= len {
        return Err(invalid_index(index));
    }
    Ok(resolved as usize)
}

/// The member at `key` (`None` for absent or null object members).
fn container_get<'a>(container: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match container {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null())),
        Value::Array(list) => {
            let index = resolve_index(key, list.len())?;
            Ok(list.get(index).filter(|v| !v.is_null()))
        }
        _ => Err(MISSING.into()),
    }
}

fn container_set(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(list) => {
            let index = resolve_index(key, list.len())?;
            list[index] = value;
            Ok(())
        }
        _ => Err(MISSING.into()),
    }
}

fn container_add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(list) => {
            if key == "-" {
                list.push(value);
                return Ok(());
            }
            let index = atoi(key).map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let new_len = list.len() as i64 + 1;
            if index >= new_len || index < -new_len {
                return Err(invalid_index(index));
            }
            let position = if index < 0 { index + new_len } else { index } as usize;
            list.insert(position, value);
            Ok(())
        }
        _ => Err(MISSING.into()),
    }
}

fn container_remove(container: &mut Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(map) => map
            .shift_remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(list) => {
            let index = atoi(key)?;
            let len = list.len() as i64;
            if index >= len || index < -len {
                return Err(invalid_index(index));
            }
            let position = if index < 0 { index + len } else { index } as usize;
            Ok(list.remove(position))
        }
        _ => Err(MISSING.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(target: Value, patch: Value) -> Value {
        json_patch(&target, &patch).unwrap()
    }

    fn err(target: Value, patch: Value) -> String {
        json_patch(&target, &patch).unwrap_err().to_string()
    }

    /// The examples of RFC 6902, appendix A.
    #[test]
    fn rfc6902_examples() {
        assert_eq!(
            ok(
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux"}])
            ),
            json!({"foo": "bar", "baz": "qux"})
        );
        assert_eq!(
            ok(
                json!({"foo": ["bar", "baz"]}),
                json!([{"op": "add", "path": "/foo/1", "value": "qux"}])
            ),
            json!({"foo": ["bar", "qux", "baz"]})
        );
        assert_eq!(
            ok(
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "remove", "path": "/baz"}])
            ),
            json!({"foo": "bar"})
        );
        assert_eq!(
            ok(
                json!({"foo": ["bar", "qux", "baz"]}),
                json!([{"op": "remove", "path": "/foo/1"}])
            ),
            json!({"foo": ["bar", "baz"]})
        );
        assert_eq!(
            ok(
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "replace", "path": "/baz", "value": "boo"}])
            ),
            json!({"baz": "boo", "foo": "bar"})
        );
        assert_eq!(
            ok(
                json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
                json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}])
            ),
            json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})
        );
        assert_eq!(
            ok(
                json!({"foo": ["all", "grass", "cows", "eat"]}),
                json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}])
            ),
            json!({"foo": ["all", "cows", "eat", "grass"]})
        );
        assert_eq!(
            ok(
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
                json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}])
            ),
            json!({"baz": "qux", "foo": ["a", 2, "c"]})
        );
        assert_eq!(
            err(
                json!({"baz": "qux"}),
                json!([{"op": "test", "path": "/baz", "value": "bar"}])
            ),
            "testing value /baz failed: test failed"
        );
        assert_eq!(
            ok(
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}])
            ),
            json!({"foo": "bar", "child": {"grandchild": {}}})
        );
        assert_eq!(
            err(
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz/bat", "value": "qux"}])
            ),
            "add operation does not apply: doc is missing path: \"/baz/bat\": missing value"
        );
        assert_eq!(
            ok(
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": 10}])
            ),
            json!({"/": 9, "~1": 10})
        );
        assert_eq!(
            err(
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": "10"}])
            ),
            "testing value /~01 failed: test failed"
        );
        assert_eq!(
            ok(
                json!({"foo": ["bar"]}),
                json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}])
            ),
            json!({"foo": ["bar", ["abc", "def"]]})
        );
        assert_eq!(
            ok(
                json!({"a": {"b": 1}}),
                json!([{"op": "copy", "from": "/a", "path": "/c"}])
            ),
            json!({"a": {"b": 1}, "c": {"b": 1}})
        );
    }

    #[test]
    fn library_messages_for_failures() {
        assert_eq!(
            err(json!({"a": 1}), json!([{"op": "remove", "path": "/b"}])),
            "error in remove for path: '/b': Unable to remove nonexistent key: b: missing value"
        );
        assert_eq!(
            err(
                json!({"a": [1]}),
                json!([{"op": "replace", "path": "/a/5", "value": 1}])
            ),
            "replace operation does not apply: doc is missing key: /a/5: missing value"
        );
        assert_eq!(
            err(json!({"a": [1]}), json!([{"op": "add", "path": "/a/7", "value": 1}])),
            "error in add for path: '/a/7': Unable to access invalid index: 7: invalid index referenced"
        );
        assert_eq!(
            err(json!({}), json!([{"op": "frob", "path": "/a"}])),
            "Unexpected kind: frob"
        );
        assert_eq!(
            err(json!({}), json!([{"op": "add"}])),
            "add operation failed to decode path: missing value"
        );
    }

    #[test]
    fn replace_of_a_missing_member_adds_it_like_the_apiserver() {
        assert_eq!(
            ok(
                json!({"metadata": {"labels": {}}}),
                json!([{"op": "replace", "path": "/metadata/labels/a", "value": "x"}])
            ),
            json!({"metadata": {"labels": {"a": "x"}}})
        );
    }

    #[test]
    fn errors_map_to_statuses() {
        let e = json_patch(&json!({"a": 1}), &json!([{"op": "test", "path": "/a", "value": 2}])).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.status_message(),
            "the server rejected our request due to an error in our request"
        );
        let e = json_patch(&json!({}), &json!({"op": "add"})).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        let many: Vec<Value> = (0..10_001)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let e = json_patch(&json!({"a": 1}), &Value::Array(many)).unwrap_err();
        assert_eq!(e.code(), 413);
        assert_eq!(
            e.status_message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    #[test]
    fn escaped_pointers_and_negative_indices() {
        assert_eq!(
            ok(
                json!({"metadata": {"annotations": {"a/b": "1"}}}),
                json!([{"op": "remove", "path": "/metadata/annotations/a~1b"}])
            ),
            json!({"metadata": {"annotations": {}}})
        );
        assert_eq!(
            ok(json!({"l": [1, 2, 3]}), json!([{"op": "remove", "path": "/l/-1"}])),
            json!({"l": [1, 2]})
        );
    }
}
