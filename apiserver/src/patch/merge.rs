//! JSON merge patch (RFC 7386), as `application/merge-patch+json` requests use it.

use super::PatchError;
use serde_json::{Map, Value};

/// Applies `patch` to `target`: objects merge recursively, `null` removes a member, anything else
/// replaces the target value.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(patch_members) => {
            let mut out = match target {
                Value::Object(members) => members.clone(),
                _ => Map::new(),
            };
            for (name, value) in patch_members {
                if value.is_null() {
                    out.remove(name);
                } else {
                    let merged = merge_patch(out.get(name).unwrap_or(&Value::Null), value);
                    out.insert(name.clone(), merged);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Rejects merge patch documents the apiserver refuses before applying them: `null` (and other
/// non-object documents) are `Invalid JSON Patch`, a 400.
pub fn check_merge_patch_document(patch: &Value) -> Result<(), PatchError> {
    if patch.is_object() {
        Ok(())
    } else {
        Err(PatchError::BadRequest("Invalid JSON Patch".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The examples of RFC 7386, appendix A.
    #[test]
    fn rfc7386_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ];
        for (target, patch, expected) in cases {
            assert_eq!(merge_patch(&target, &patch), expected, "target {target} patch {patch}");
        }
    }

    #[test]
    fn labels_are_added_and_removed() {
        let target = json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}});
        assert_eq!(
            merge_patch(&target, &patch),
            json!({"metadata": {"name": "x", "labels": {"b": "2", "c": "3"}}})
        );
    }

    #[test]
    fn non_object_documents_are_bad_requests() {
        assert!(check_merge_patch_document(&json!({})).is_ok());
        let err = check_merge_patch_document(&json!(null)).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(err.to_string(), "Invalid JSON Patch");
    }
}
