//! Strategic merge patch as kube-apiserver applies it (`k8s.io/apimachinery/pkg/util/strategicpatch`,
//! `StrategicMergeMapPatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`).

use super::PatchError;
use super::typeinfo::{FieldType, ListPatch};
use crate::go_format;
use serde_json::{Map, Value};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

const ERR_BAD_JSON_DOC: &str = "invalid JSON document";
const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
const ERR_BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";

type Result<T> = std::result::Result<T, PatchError>;

/// Applies a strategic merge `patch` to `target` using the list strategies of `ty`.
///
/// Lists merge by their merge key (or as a union of scalars), `null` deletes a field, and the
/// directives `$patch` (`replace`, `delete`), `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
/// `$setElementOrder/<field>` are honoured; no directive is left in the result.
pub fn strategic_merge_patch(target: &Value, patch: &Value, ty: &FieldType) -> Result<Value> {
    let Value::Object(original) = target else {
        return Err(PatchError::BadRequest(ERR_BAD_JSON_DOC.into()));
    };
    let patch = match patch {
        Value::Null => Map::new(),
        Value::Object(map) => map.clone(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    merge_map(Some(original.clone()), patch, ty).map(Value::Object)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    PatchError::Internal(format!(
        "expected a {expected}, but received a {}",
        go_format::type_name(actual)
    ))
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::Internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_format::value_v(&Value::Object(map.clone()))
    ))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::Internal(format!(
        "unknown patch type: {} in map: {}",
        go_format::value_v(directive),
        go_format::value_v(&Value::Object(map.clone()))
    ))
}

/// Whether a list's items merge (`patchStrategy:"merge"`), and its merge key (empty for scalars).
fn list_strategy(ty: &FieldType) -> (bool, String) {
    match ty {
        FieldType::List {
            patch: ListPatch::MergeByKey(key),
            ..
        } => (true, key.clone()),
        FieldType::List {
            patch: ListPatch::MergeScalars,
            ..
        } => (true, String::new()),
        _ => (false, String::new()),
    }
}

fn merge_map(
    original: Option<Map<String, Value>>,
    mut patch: Map<String, Value>,
    ty: &FieldType,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
        return handle_directive_in_merge_map(&directive, patch);
    }
    let mut original = original.unwrap_or_default();
    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, ty)?;
    // Deletion lists go last so that an item both added and deleted ends up deleted.
    let (deletions, regular): (Vec<String>, Vec<String>) = patch
        .keys()
        .cloned()
        .partition(|k| k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX));
    for patch_key in regular.into_iter().chain(deletions) {
        let Some(patch_value) = patch.shift_remove(&patch_key) else {
            continue;
        };
        let is_delete_list = patch_key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX);
        let key = if is_delete_list {
            extract_key(&patch_key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?
        } else {
            patch_key
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let Some(current) = original.get(&key) else {
            if !is_delete_list && let Some(v) = clean_patch_value(patch_value) {
                original.insert(key, v);
            }
            continue;
        };
        if go_format::type_name(current) != go_format::type_name(&patch_value) {
            if !is_delete_list {
                match clean_patch_value(patch_value) {
                    Some(v) => original.insert(key, v),
                    None => original.shift_remove(&key),
                };
            }
            continue;
        }
        let child_ty = ty.child(&key).0;
        let merged = match (current, patch_value) {
            (Value::Object(current), Value::Object(patch_map)) => {
                Some(Value::Object(merge_map(Some(current.clone()), patch_map, child_ty)?))
            }
            (Value::Array(current), Value::Array(patch_list)) => Some(Value::Array(merge_slice_handler(
                current,
                &patch_list,
                child_ty,
                is_delete_list,
            )?)),
            (_, scalar) => remove_directives(scalar),
        };
        match merged {
            Some(v) => original.insert(key, v),
            None => original.shift_remove(&key),
        };
    }
    Ok(original)
}

fn handle_directive_in_merge_map(directive: &Value, mut patch: Map<String, Value>) -> Result<Map<String, Value>> {
    match directive.as_str() {
        Some(REPLACE_DIRECTIVE) => {
            patch.shift_remove(DIRECTIVE_MARKER);
            match clean_patch_value(Value::Object(patch)) {
                Some(Value::Object(map)) => Ok(map),
                _ => Ok(Map::new()),
            }
        }
        Some(DELETE_DIRECTIVE) => Ok(Map::new()),
        _ => Err(bad_patch_type(directive, &patch)),
    }
}

/// `extractKey`: the field name after `<prefix>/`.
fn extract_key(key: &str, prefix: &str) -> Result<String> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_string()),
        _ => Err(PatchError::BadRequest(
            if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX {
                ERR_BAD_PRIMITIVE_LIST
            } else {
                ERR_BAD_SET_ELEMENT_ORDER
            }
            .into(),
        )),
    }
}

/// `$retainKeys`: clears fields of the original missing from the list; every patched field must be listed.
fn apply_retain_keys_directive(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<()> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadRequest(ERR_BAD_RETAIN_KEYS.into()));
    };
    let retained = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) || k.starts_with(SET_ELEMENT_ORDER_PREFIX) {
            continue;
        }
        if !retained(k) {
            return Err(PatchError::BadRequest(ERR_BAD_RETAIN_KEYS.into()));
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the list now and orders it as the directive says.
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    ty: &FieldType,
) -> Result<()> {
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for order_key in order_keys {
        let Some(order) = patch.shift_remove(&order_key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let key = extract_key(&order_key, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = match original.get(&key) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        let patch_list = match patch.get(&key) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        let child_ty = ty.child(&key).0;
        let (_, merge_key) = list_strategy(child_ty);
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or_default(), &order, &merge_key)?;
        let merged = match (&original_list, &patch_list) {
            (Some(list), None) => list.clone(),
            (None, Some(list)) => clean_list(list.clone()),
            (Some(current), Some(list)) => merge_slice_handler(current, list, child_ty, false)?,
            (None, None) => continue,
        };
        let (patch_items, server_only) = partition(&merged, &order, &merge_key)?;
        let server_order = original_list.unwrap_or_default();
        let is_map = slice_element_is_map(&[&server_order, patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_element_order(patch_items, server_only, &order, &server_order, &merge_key, is_map)?;
        original.insert(key.clone(), Value::Array(ordered));
        patch.shift_remove(&key);
    }
    Ok(())
}

fn partition(merged: &[Value], by: &[Value], merge_key: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    if merge_key.is_empty() {
        Ok(merged.iter().cloned().partition(|v| by.contains(v)))
    } else {
        let mut in_patch = Vec::new();
        let mut server_only = Vec::new();
        for item in merged {
            let Value::Object(map) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            let Some(value) = map.get(merge_key) else {
                return Err(no_merge_key(map, merge_key));
            };
            if find_map_by_key(by, merge_key, value)?.is_some() {
                in_patch.push(item.clone());
            } else {
                server_only.push(item.clone());
            }
        }
        Ok((in_patch, server_only))
    }
}

fn validate_patch_with_set_order_list(patch: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let non_delete = if merge_key.is_empty() {
        patch.to_vec()
    } else {
        extract_to_delete_items(patch)?.0
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if non_delete[pi]
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(PatchError::Internal(format!(
            "the order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}",
            go_format::value_v(&Value::Array(patch.to_vec())),
            go_format::value_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg_type("map[string]interface {}", left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg_type("map[string]interface {}", right));
    };
    let lv = l.get(merge_key).ok_or_else(|| no_merge_key(l, merge_key))?;
    let rv = r.get(merge_key).ok_or_else(|| no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

fn extract_to_delete_items(list: &[Value]) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for item in list {
        let Value::Object(map) = item else {
            return Err(bad_arg_type("map[string]interface {}", item));
        };
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(item.clone());
        } else {
            keep.push(item.clone());
        }
    }
    Ok((keep, delete))
}

fn merge_slice_handler(
    original: &[Value],
    patch: &[Value],
    ty: &FieldType,
    is_delete_list: bool,
) -> Result<Vec<Value>> {
    let (merge, merge_key) = list_strategy(ty);
    if merge {
        merge_slice(
            original.to_vec(),
            patch.to_vec(),
            ty.items(),
            &merge_key,
            is_delete_list,
        )
    } else {
        Ok(clean_list(patch.to_vec()))
    }
}

fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    item_ty: &FieldType,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let is_map = slice_element_is_map(&[&original, &patch])?;
    let (original, patch, merged) = if !is_map {
        if is_delete_list {
            return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both);
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError::Internal(
                "cannot merge lists without merge key for type struct".into(),
            ));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_without_special_elements(original.clone(), &patch, merge_key, item_ty)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = partition(&merged, &patch, merge_key)?;
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, is_map)
}

/// Handles list items carrying `$patch`: `delete` removes matching items, `replace` replaces the list.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut without = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        let Some(directive) = map.get(DIRECTIVE_MARKER) else {
            without.push(item);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let Some(value) = map.get(merge_key) else {
                    return Err(no_merge_key(map, merge_key));
                };
                let value = value.clone();
                while let Some(index) = find_map_by_key(&original, merge_key, &value)? {
                    original.remove(index);
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(PatchError::Internal(
                    "merging lists cannot yet be specified in the patch".into(),
                ));
            }
            _ => return Err(bad_patch_type(directive, map)),
        }
    }
    if replace {
        Ok((clean_list(without), Vec::new()))
    } else {
        Ok((original, without))
    }
}

fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    item_ty: &FieldType,
) -> Result<Vec<Value>> {
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(bad_arg_type("map[string]interface {}", item));
        };
        let Some(value) = map.get(merge_key) else {
            return Err(no_merge_key(map, merge_key));
        };
        match find_map_by_key(&original, merge_key, value)? {
            Some(index) => {
                let current = original[index].as_object().cloned();
                original[index] = Value::Object(merge_map(current, map.clone(), item_ty)?);
            }
            None => {
                if let Some(v) = clean_patch_value(item.clone()) {
                    original.push(v);
                }
            }
        }
    }
    Ok(original)
}

/// `findMapInSliceBasedOnKeyValue`: index of the first map whose `key` equals `value`.
fn find_map_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>> {
    for (index, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(PatchError::Internal(format!("value for key {index} is not a map.")));
        };
        if map.get(key) == Some(value) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// `sliceElementType`: whether the items are maps; all items must share one type and not be lists.
fn slice_element_is_map(slices: &[&[Value]]) -> Result<bool> {
    let mut first: Option<&'static str> = None;
    for item in slices.iter().flat_map(|s| s.iter()) {
        let t = go_format::type_name(item);
        match first {
            None => {
                if item.is_array() {
                    return Err(PatchError::Unprocessable(ERR_NO_LIST_OF_LISTS.into()));
                }
                first = Some(t);
            }
            Some(prev) if prev != t => {
                let all: Vec<Value> = slices.iter().map(|s| Value::Array(s.to_vec())).collect();
                return Err(PatchError::Internal(format!(
                    "list element types are not identical: {}",
                    go_format::value_v(&Value::Array(all))
                )));
            }
            Some(_) => {}
        }
    }
    match first {
        None => Err(PatchError::Internal("no elements in any of the given slices".into())),
        Some(t) => Ok(t == "map[string]interface {}"),
    }
}

/// Go's `deduplicateScalars`, including the order it leaves.
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
                // Go decrements j and then the loop increments it again: re-check position j.
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

/// `index`: position of `value` in `list` (by merge key for maps), if any.
fn index_of(list: &[Value], value: &Value, merge_key: &str, is_map: bool) -> Option<usize> {
    let key_of = |v: &Value| {
        if is_map {
            v.as_object().and_then(|m| m.get(merge_key)).cloned()
        } else {
            Some(v.clone())
        }
    };
    let wanted = key_of(value);
    list.iter().position(|v| key_of(v) == wanted)
}

fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, is_map)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, is_map)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        merge_key,
        is_map,
    ))
}

fn normalize_slice_order(to_sort: Vec<Value>, order: &[Value], merge_key: &str, is_map: bool) -> Result<Vec<Value>> {
    let (mut to_sort, to_delete) = if is_map {
        for item in to_sort.iter().chain(order.iter()) {
            let Value::Object(map) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if !map.contains_key(merge_key) {
                return Err(no_merge_key(map, merge_key));
            }
        }
        extract_to_delete_items(&to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    go_stable_sort(&mut to_sort, |a, b| {
        match (
            index_of(order, a, merge_key, is_map),
            index_of(order, b, merge_key, is_map),
        ) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        }
    });
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `mergeSortedSlice`: interleaves server-only items (left) with patch items (right), keeping the
/// live order where both are known.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if i >= left.len() {
            out.push(right[j].clone());
            j += 1;
        } else if j >= right.len() {
            out.push(left[i].clone());
            i += 1;
        } else {
            let li = index_of(server_order, &left[i], merge_key, is_map);
            let ri = index_of(server_order, &right[j], merge_key, is_map);
            if matches!((li, ri), (Some(l), Some(r)) if l < r) {
                out.push(left[i].clone());
                i += 1;
            } else {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    out
}

/// Go's `sort.SliceStable` (insertion sort on blocks of 20, then `symMerge`), so that orders agree
/// with the apiserver even for comparators that are not strict weak orders.
fn go_stable_sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        let (mut a, mut b) = (0, 2 * block);
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) { i = h + 1 } else { j = h }
        }
        for k in a..i.saturating_sub(1) {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) { i = h + 1 } else { j = h }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1
        } else {
            r = c
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

/// A value adopted from the patch as is: nulls dropped, maps carrying `$patch` dropped
/// (`removeDirectives`), and no other directive key kept.
fn clean_patch_value(value: Value) -> Option<Value> {
    remove_directives(discard_nulls(value))
}

fn clean_list(list: Vec<Value>) -> Vec<Value> {
    list.into_iter().filter_map(clean_patch_value).collect()
}

fn discard_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, discard_nulls(v)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.into_iter().map(discard_nulls).collect()),
        other => other,
    }
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with(&format!("{DELETE_FROM_PRIMITIVE_LIST_PREFIX}/"))
        || key.starts_with(&format!("{SET_ELEMENT_ORDER_PREFIX}/"))
}

fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter(|(k, _)| !is_directive_key(k))
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(list) => Some(Value::Array(list.into_iter().filter_map(remove_directives).collect())),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::typeinfo::builtin;
    use serde_json::json;

    fn pod() -> FieldType {
        builtin("v1", "Pod")
    }

    fn smp(target: Value, patch: Value) -> Value {
        strategic_merge_patch(&target, &patch, &pod()).unwrap()
    }

    /// The "Update API Objects in Place Using kubectl patch" example: the new container comes first.
    #[test]
    fn containers_merge_by_name() {
        let target = json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.14"}]}});
        let patch = json!({"spec": {"containers": [{"name": "redis", "image": "redis"}]}});
        assert_eq!(
            smp(target.clone(), patch),
            json!({"spec": {"containers": [{"name": "redis", "image": "redis"}, {"name": "nginx", "image": "nginx:1.14"}]}})
        );
        let patch = json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.16"}]}});
        assert_eq!(
            smp(target, patch),
            json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.16"}]}})
        );
    }

    #[test]
    fn tolerations_are_replaced() {
        let target = json!({"spec": {"tolerations": [{"key": "a", "effect": "NoSchedule"}]}});
        let patch = json!({"spec": {"tolerations": [{"key": "b", "effect": "NoSchedule"}]}});
        assert_eq!(
            smp(target, patch),
            json!({"spec": {"tolerations": [{"key": "b", "effect": "NoSchedule"}]}})
        );
    }

    #[test]
    fn finalizers_union_and_delete_from_primitive_list() {
        let target = json!({"metadata": {"finalizers": ["a", "b"]}});
        // Patch items first in patch order, then live-only items (strategicpatch's mergeSortedSlice).
        assert_eq!(
            smp(target.clone(), json!({"metadata": {"finalizers": ["c", "a"]}})),
            json!({"metadata": {"finalizers": ["c", "a", "b"]}})
        );
        assert_eq!(
            smp(
                target,
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
            ),
            json!({"metadata": {"finalizers": ["b"]}})
        );
    }

    #[test]
    fn patch_delete_in_list_and_map() {
        let target = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}});
        assert_eq!(
            smp(
                target,
                json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}})
            ),
            json!({"spec": {"containers": [{"name": "b", "image": "2"}]}})
        );
        let target = json!({"spec": {"securityContext": {"runAsUser": 1}, "nodeName": "n"}});
        assert_eq!(
            smp(target, json!({"spec": {"securityContext": {"$patch": "delete"}}})),
            json!({"spec": {"securityContext": {}, "nodeName": "n"}})
        );
    }

    #[test]
    fn patch_replace_in_map_and_list() {
        let target = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        assert_eq!(
            smp(target, json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}})),
            json!({"metadata": {"labels": {"c": "3"}}})
        );
        let target = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            smp(
                target,
                json!({"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}})
            ),
            json!({"spec": {"containers": [{"name": "c"}]}})
        );
    }

    #[test]
    fn retain_keys_clears_other_fields() {
        let ty = builtin("apps/v1", "Deployment");
        let target = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        assert_eq!(
            strategic_merge_patch(&target, &patch, &ty).unwrap(),
            json!({"spec": {"strategy": {"type": "Recreate"}}})
        );
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
        let err = strategic_merge_patch(&target, &bad, &ty).unwrap_err();
        assert_eq!(
            (err.code(), err.to_string()),
            (400, "invalid patch format of retainKeys".into())
        );
    }

    #[test]
    fn set_element_order_orders_the_list() {
        let target = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "c", "image": "x"}]
        }});
        assert_eq!(
            smp(target, patch),
            json!({"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "a"}, {"name": "b"}]}})
        );
        let target = json!({"metadata": {"finalizers": ["a", "b"]}});
        let patch = json!({"metadata": {"$setElementOrder/finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]}});
        assert_eq!(smp(target, patch), json!({"metadata": {"finalizers": ["b", "c"]}}));
    }

    #[test]
    fn null_deletes_and_directives_never_leak() {
        let target = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"nodeName": "n"}});
        let patch = json!({
            "metadata": {"labels": {"a": null}},
            "spec": {"nodeName": null, "containers": [{"name": "x", "image": null, "$setElementOrder/env": [], "env": [{"name": "e", "$patch": "delete"}]}]}
        });
        assert_eq!(
            smp(target, patch),
            json!({"metadata": {"labels": {}}, "spec": {"containers": [{"name": "x", "env": []}]}})
        );
    }

    #[test]
    fn ports_merge_by_container_port() {
        let target =
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 443}]}]}});
        let patch = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}});
        assert_eq!(
            smp(target, patch),
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]}})
        );
    }

    #[test]
    fn errors_match_the_library() {
        let err = strategic_merge_patch(
            &json!({"metadata": {}}),
            &json!({"metadata": {"$patch": "merge"}}),
            &pod(),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "unknown patch type: merge in map: map[$patch:merge]");
        assert_eq!(err.code(), 500);
        let err = strategic_merge_patch(
            &json!({"spec": {"containers": [{"name": "a"}]}}),
            &json!({"spec": {"containers": [{"image": "x"}]}}),
            &pod(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "map: map[image:x] does not contain declared merge key: name"
        );
        let err = strategic_merge_patch(&json!({}), &json!([1]), &pod()).unwrap_err();
        assert_eq!(err.code(), 400);
    }

    #[test]
    fn go_stable_sort_matches_go_for_inconsistent_comparators() {
        // With a comparator that always says "less", Go's insertion sort reverses the block.
        let mut v: Vec<u32> = (0..5).collect();
        go_stable_sort(&mut v, |_, _| true);
        assert_eq!(v, vec![4, 3, 2, 1, 0]);
        let mut v: Vec<u32> = vec![
            5, 3, 9, 1, 7, 2, 8, 0, 6, 4, 15, 13, 19, 11, 17, 12, 18, 10, 16, 14, 21, 20, 22,
        ];
        go_stable_sort(&mut v, |a, b| a < b);
        assert_eq!(v, (0..23).collect::<Vec<_>>());
    }

    #[test]
    fn deduplicate_matches_go() {
        assert_eq!(
            deduplicate_scalars(vec![json!("a"), json!("b"), json!("a"), json!("c")]),
            vec![json!("a"), json!("b"), json!("c")]
        );
        assert_eq!(
            deduplicate_scalars(vec![json!(1), json!(1), json!(2), json!(1)]),
            vec![json!(1), json!(2)]
        );
    }
}
