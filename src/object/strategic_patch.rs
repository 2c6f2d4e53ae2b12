//! Strategic merge patch (`application/strategic-merge-patch+json`), as apimachinery's
//! `strategicpatch.StrategicMergeMapPatch` applies it on the server (parallel lists merged,
//! unmatched nulls dropped), driven by the kind's schema in the document: a field's
//! `x-kubernetes-patch-strategy` (`merge`, `replace`, `retainKeys`, or `retainKeys` with one of
//! the others) and `x-kubernetes-patch-merge-key`. Maps merge recursively and `null` deletes;
//! lists without a strategy are replaced; lists of maps with a merge key merge by it; primitive
//! lists with `merge` become a union. Directives: `$patch` (`replace`, `merge`, `delete`) in maps
//! and list items, `$retainKeys`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`.
//!
//! Errors carry kube's words and codes (handlers/patch.go `interpretStrategicMergePatchError`):
//! malformed directives are 400, lists of lists and content outside `$retainKeys` 422, and the
//! rest of the package's errors plain errors, which kube answers 500. Values in messages are
//! printed as Go's `%v` prints decoded JSON (`map[a:1 b:[x y]]`). Pure functions.

use serde_json::{Map, Value};

use crate::object::error::ApiError;
use crate::object::schema::resolve;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
const NOT_IN_RETAIN_KEYS: &str = "patch content doesn't match retainKeys list";
const LISTS_OF_LISTS: &str = "lists of lists are not supported";

/// Why a strategic merge patch failed, in kube's three answers.
#[derive(Debug, Clone, PartialEq)]
enum Failure {
    /// 400: a directive of the wrong shape.
    BadRequest(&'static str),
    /// 422 with the message as its cause.
    Unprocessable(&'static str),
    /// Any other error of the package: kube answers it 500.
    Other(String),
}

impl From<Failure> for ApiError {
    fn from(f: Failure) -> ApiError {
        match f {
            Failure::BadRequest(m) => ApiError::bad_request(m),
            Failure::Unprocessable(m) => ApiError::PatchUnprocessable(m.into()),
            Failure::Other(m) => ApiError::Unknown(m),
        }
    }
}

type Result<T> = std::result::Result<T, Failure>;

/// Decodes a strategic merge patch body: a JSON object (`null` is an empty one, as Go decodes
/// it into a map).
pub fn parse(body: &[u8]) -> std::result::Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't decode the strategic merge patch: {e}"))
    })?;
    match v {
        Value::Object(_) => Ok(v),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(ApiError::bad_request(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_type(&other)
        ))),
    }
}

/// Go's name of a JSON value's type in `json.Unmarshal` errors.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "object",
    }
}

/// Applies `patch` (an object, from [`parse`]) to `doc`; `schema` is the kind's definition,
/// `None` to merge without strategies (every list replaced).
pub fn apply(
    doc: &mut Value,
    patch: &Value,
    schema: Option<&Value>,
) -> std::result::Result<(), ApiError> {
    let original = match std::mem::take(doc) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let patch = patch.as_object().cloned().unwrap_or_default();
    *doc = Value::Object(merge_map(original, patch, schema.and_then(resolve))?);
    Ok(())
}

/// What the schema says of one field: the schema of its value (of its items, for a list),
/// its patch strategies and its merge key.
struct FieldMeta<'s> {
    schema: Option<&'s Value>,
    strategies: Vec<String>,
    merge_key: String,
}

fn field_meta<'s>(schema: Option<&'s Value>, key: &str) -> FieldMeta<'s> {
    let raw = schema.and_then(|s| {
        s.get("properties").and_then(|p| p.get(key)).or_else(|| {
            // A map's values all share one schema.
            s.get("additionalProperties").filter(|a| a.is_object())
        })
    });
    let resolved = raw.and_then(resolve);
    // The extensions sit beside a `$ref` or `allOf`, or on the definition it names.
    let ext = |name: &str| {
        raw.and_then(|r| r.get(name))
            .or_else(|| resolved.and_then(|r| r.get(name)))
            .and_then(Value::as_str)
    };
    let strategies = ext("x-kubernetes-patch-strategy")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let merge_key = ext("x-kubernetes-patch-merge-key").unwrap_or("").to_string();
    let items = resolved.and_then(|r| r.get("items")).and_then(resolve);
    let schema = match resolved {
        Some(r) if r.get("type").and_then(Value::as_str) == Some("array") => items,
        other => other,
    };
    FieldMeta { schema, strategies, merge_key }
}

/// apimachinery's `extractRetainKeysPatchStrategy`: the strategy besides `retainKeys`.
fn strategy(strategies: &[String]) -> Result<&str> {
    match strategies {
        [] => Ok(""),
        [one] if one == "retainKeys" => Ok(""),
        [one] => Ok(one),
        [a, b] if a == "retainKeys" => Ok(b),
        [a, b] if b == "retainKeys" => Ok(a),
        _ => Err(Failure::Other(format!("unexpected patch strategy: [{}]", strategies.join(" ")))),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Option<&Value>,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_orders(&mut original, &mut patch, schema)?;
    for (key, patch_v) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => match rest.strip_prefix('/') {
                Some(field) => (field.to_string(), true),
                None => return Err(Failure::BadRequest(BAD_PRIMITIVE_LIST)),
            },
            None => (key, false),
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let same_shape = matches!(
            (original.get(&key), &patch_v),
            (Some(Value::Object(_)), Value::Object(_)) | (Some(Value::Array(_)), Value::Array(_))
        );
        if !same_shape {
            // Absent, a scalar, or of another type: the patch's value, without its nulls.
            if !delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                original.insert(key, v);
            }
            continue;
        }
        let meta = field_meta(schema, &key);
        let strategy = strategy(&meta.strategies)?;
        let current = original.remove(&key).unwrap_or_default();
        let merged = match (current, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                if strategy == "replace" {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(o, p, meta.schema)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                if strategy == "merge" {
                    Value::Array(merge_slice(o, p, meta.schema, &meta.merge_key, delete_list)?)
                } else {
                    Value::Array(p)
                }
            }
            _ => unreachable!("both maps or both lists"),
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// Nulls inside a value that has nothing to delete from (`discardNullValuesFromPatch`).
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `$retainKeys`: fields of the original it does not list are cleared; the patch may set only
/// fields it lists.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else { return Ok(()) };
    let Value::Array(retain) = retain else { return Err(Failure::BadRequest(BAD_RETAIN_KEYS)) };
    let kept = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !kept(k) {
            return Err(Failure::Unprocessable(NOT_IN_RETAIN_KEYS));
        }
    }
    original.retain(|k, _| kept(k));
    Ok(())
}

/// `$setElementOrder/<field>` (`mergePatchIntoOriginal`): merges the field's list from the
/// patch, then orders the result as the directive lists it, the items only the server has kept
/// where they were relative to the others.
fn merge_set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Option<&Value>,
) -> Result<()> {
    let keys: Vec<String> =
        patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for key in keys {
        let order = patch.remove(&key).unwrap_or_default();
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let field = match key.split_once('/') {
            Some((SET_ELEMENT_ORDER, field)) => field.to_string(),
            _ => return Err(Failure::BadRequest(BAD_SET_ELEMENT_ORDER)),
        };
        let list_of = |v: Option<&Value>| -> Result<Option<Vec<Value>>> {
            match v {
                None => Ok(None),
                Some(Value::Array(items)) => Ok(Some(items.clone())),
                Some(other) => Err(bad_arg_type("[]interface {}", other)),
            }
        };
        let in_original = list_of(original.get(&field))?;
        let in_patch = list_of(patch.get(&field))?;
        let meta = field_meta(schema, &field);
        let strategy = strategy(&meta.strategies)?;
        let merge_key = meta.merge_key.as_str();
        check_against_order(in_patch.as_deref().unwrap_or(&[]), &order, merge_key)?;
        let (original_items, patch_items) =
            (in_original.clone().unwrap_or_default(), in_patch.clone().unwrap_or_default());
        let merged = match (in_original, in_patch) {
            (Some(o), None) => o,
            (None, Some(p)) => p,
            (Some(o), Some(p)) if strategy == "merge" => {
                merge_slice(o, p, meta.schema, merge_key, false)?
            }
            (Some(_), Some(p)) => p,
            (None, None) => continue,
        };
        let (listed, server_only) = partition(merged, &order, merge_key)?;
        let kind = element_kind(&[&original_items, &patch_items])?;
        let both =
            normalize_element_order(listed, server_only, &order, &original_items, merge_key, kind)?;
        original.insert(field.clone(), Value::Array(both));
        patch.remove(&field);
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch's items (deletions aside) appear in the
/// directive's list, in its order.
fn check_against_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch.iter().collect()
    } else {
        let mut kept = Vec::new();
        for v in patch {
            let Some(m) = v.as_object() else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                kept.push(v);
            }
        }
        kept
    };
    let (mut p, mut o) = (0, 0);
    while p < non_delete.len() && o < order.len() {
        if non_delete[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if merge_key_equal(non_delete[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < non_delete.len() && o >= order.len() {
        return Err(Failure::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_list(patch),
            go_list(order)
        )));
    }
    Ok(())
}

fn merge_key_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let key_of = |v: &Value| -> Result<Value> {
        let m = v.as_object().ok_or_else(|| bad_arg_type("map[string]interface {}", v))?;
        m.get(merge_key).cloned().ok_or_else(|| no_merge_key(m, merge_key))
    };
    Ok(key_of(left)? == key_of(right)?)
}

/// What the items of some lists are: maps, or scalars.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Map,
    Scalar,
}

/// `sliceElementType`: every item of the lists has one type, and it is not a list.
fn element_kind(lists: &[&[Value]]) -> Result<Kind> {
    let mut first: Option<&Value> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        match first {
            None => {
                if item.is_array() {
                    return Err(Failure::Unprocessable(LISTS_OF_LISTS));
                }
                first = Some(item);
            }
            Some(f) if go_type(f) != go_type(item) => {
                let all: Vec<String> = lists.iter().map(|l| go_list(l)).collect();
                return Err(Failure::Other(format!(
                    "list element types are not identical: [{}]",
                    all.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    match first {
        None => Err(Failure::Other("no elements in any of the given slices".into())),
        Some(Value::Object(_)) => Ok(Kind::Map),
        Some(_) => Ok(Kind::Scalar),
    }
}

/// Merges a list with the `merge` strategy (`mergeSlice`).
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    item_schema: Option<&Value>,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_kind(&[&original, &patch])?;
    let (original, patch, merged) = if kind == Kind::Scalar {
        if delete_list {
            return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        (original, patch, deduplicate(both))
    } else {
        if merge_key.is_empty() {
            return Err(Failure::Other(
                "cannot merge lists without merge key for type struct".into(),
            ));
        }
        let (original, patch) = merge_special_items(original, patch, merge_key)?;
        let merged = merge_plain_items(original.clone(), &patch, item_schema, merge_key)?;
        (original, patch, merged)
    };
    let (in_patch, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(in_patch, server_only, &patch, &original, merge_key, kind)
}

/// Go's `deduplicateScalars`: keeps the first of equal items, moving the last item into the
/// place of each duplicate, as Go does.
fn deduplicate(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                s.swap_remove(j);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// List items with `$patch` (`mergeSliceWithSpecialElements`): `delete` removes the original's
/// items with its merge key, `replace` makes the other items the whole list.
fn merge_special_items(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else { unreachable!("the kind is maps") };
        let Some(directive) = m.get(DIRECTIVE) else {
            plain.push(v);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key) = m.get(merge_key) else { return Err(no_merge_key(m, merge_key)) };
                original.retain(|o| o.get(merge_key) != Some(key));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(Failure::Other(
                    "merging lists cannot yet be specified in the patch".into(),
                ))
            }
            _ => return Err(bad_patch_type(directive, m)),
        }
    }
    Ok(if replace { (plain, Vec::new()) } else { (original, plain) })
}

/// Merges each patch item into the original's item with its merge key, or appends it.
fn merge_plain_items(
    mut original: Vec<Value>,
    patch: &[Value],
    item_schema: Option<&Value>,
    merge_key: &str,
) -> Result<Vec<Value>> {
    for v in patch {
        let Value::Object(p) = v else { unreachable!("the kind is maps") };
        let Some(key) = p.get(merge_key) else { return Err(no_merge_key(p, merge_key)) };
        match original.iter().position(|o| o.get(merge_key) == Some(key)) {
            Some(i) => {
                let Value::Object(o) = std::mem::take(&mut original[i]) else {
                    unreachable!("the kind is maps")
                };
                original[i] = Value::Object(merge_map(o, p.clone(), item_schema)?);
            }
            None => original.push(v.clone()),
        }
    }
    Ok(original)
}

/// Splits `items` into those `by` holds (by merge key, for maps) and the others.
fn partition(items: Vec<Value>, by: &[Value], merge_key: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for v in items {
        let present = if merge_key.is_empty() {
            by.contains(&v)
        } else {
            let m = v.as_object().ok_or_else(|| bad_arg_type("map[string]interface {}", &v))?;
            let key = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
            let mut found = false;
            for b in by {
                let b = b.as_object().ok_or_else(|| {
                    Failure::Other(format!("value for key {} is not a map.", go_v(b)))
                })?;
                if b.get(merge_key) == Some(key) {
                    found = true;
                    break;
                }
            }
            found
        };
        if present {
            inside.push(v);
        } else {
            outside.push(v);
        }
    }
    Ok((inside, outside))
}

/// `normalizeElementOrder`: the patch's items in `patch_order`, the server's in
/// `server_order`, then interleaved by where the server had them.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(server_only, patch, server_order, merge_key, kind))
}

/// Where `v` is in `list`, by merge key for maps (an item without one matches another
/// without one, as Go's nil interfaces compare equal).
fn index(list: &[Value], v: &Value, merge_key: &str, kind: Kind) -> Option<usize> {
    let id = |x: &Value| match kind {
        Kind::Map => x.get(merge_key).cloned().unwrap_or(Value::Null),
        Kind::Scalar => x.clone(),
    };
    let wanted = id(v);
    list.iter().position(|x| id(x) == wanted)
}

fn normalize_slice_order(
    mut to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let mut to_delete = Vec::new();
    if kind == Kind::Map {
        for item in to_sort.iter().chain(order) {
            let m =
                item.as_object().ok_or_else(|| bad_arg_type("map[string]interface {}", item))?;
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
        to_sort = keep;
        to_delete = delete;
    }
    // Go's `sort.SliceStable` with kube's comparator, which says "less" for any pair it cannot
    // place; an insertion sort, as Go's is for the short lists objects hold, keeps its result.
    let less = |a: &Value, b: &Value| match (
        index(order, a, merge_key, kind),
        index(order, b, merge_key, kind),
    ) {
        (Some(ia), Some(ib)) => ia < ib,
        _ => true,
    };
    for i in 1..to_sort.len() {
        let mut j = i;
        while j > 0 && less(&to_sort[j], &to_sort[j - 1]) {
            to_sort.swap(j, j - 1);
            j -= 1;
        }
    }
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `mergeSortedSlice`: inserts each of `left` (the server's) before the first of `right` (the
/// patch's) the server had after it.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index(server_order, l, merge_key, kind),
                    index(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> Failure {
    Failure::Other(format!("unknown patch type: {} in map: {}", go_v(directive), go_map(m)))
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> Failure {
    Failure::Other(format!("map: {} does not contain declared merge key: {key}", go_map(m)))
}

fn bad_arg_type(expected: &str, actual: &Value) -> Failure {
    Failure::Other(format!("expected a {expected}, but received a {}", go_type(actual)))
}

/// The Go type `encoding/json` decodes a value to (integers kept as int64, as kube's decoder).
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A decoded value as Go's `%v` prints it.
pub fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => go_float(f),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => go_list(items),
        Value::Object(m) => go_map(m),
    }
}

fn go_list(items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(go_v).collect();
    format!("[{}]", parts.join(" "))
}

/// Go prints a map's keys sorted, as `Map` holds them.
fn go_map(m: &Map<String, Value>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", go_v(v))).collect();
    format!("map[{}]", parts.join(" "))
}

/// `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, with an
/// exponent below 1e-4 and from 1e6 on.
fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema as kube's OpenAPI gives a Pod-like kind: merge lists with and without keys,
    /// a replaced list, `retainKeys`, and a map of strings.
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "finalizers": {"type": "array", "items": {"type": "string"},
                                   "x-kubernetes-patch-strategy": "merge"},
                    "ownerReferences": {"type": "array", "items": {"type": "object"},
                                        "x-kubernetes-patch-strategy": "merge",
                                        "x-kubernetes-patch-merge-key": "uid"}}},
                "spec": {"type": "object", "properties": {
                    "containers": {"type": "array",
                                   "x-kubernetes-patch-strategy": "merge",
                                   "x-kubernetes-patch-merge-key": "name",
                                   "items": {"type": "object", "properties": {
                                       "name": {"type": "string"},
                                       "args": {"type": "array", "items": {"type": "string"}},
                                       "ports": {"type": "array",
                                                 "x-kubernetes-patch-strategy": "merge",
                                                 "x-kubernetes-patch-merge-key": "containerPort",
                                                 "items": {"type": "object"}}}}},
                    "strategy": {"type": "object",
                                 "x-kubernetes-patch-strategy": "retainKeys",
                                 "properties": {"type": {"type": "string"},
                                                "rollingUpdate": {"type": "object"}}},
                    "selector": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
                    "tags": {"type": "array", "items": {"type": "string"},
                             "x-kubernetes-patch-strategy": "merge"}}}
            }
        })
    }

    fn patched(doc: Value, patch: Value) -> std::result::Result<Value, ApiError> {
        let mut doc = doc;
        let s = schema();
        apply(&mut doc, &patch, Some(&s)).map(|_| doc)
    }

    fn ok(doc: Value, patch: Value) -> Value {
        patched(doc, patch).unwrap()
    }

    #[test]
    fn maps_merge_and_nulls_delete() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}});
        let out = ok(doc, json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": null}));
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
        // A null below a field the original lacks is dropped, not stored.
        let out = ok(json!({}), json!({"data": {"x": "1", "y": null}}));
        assert_eq!(out, json!({"data": {"x": "1"}}));
    }

    #[test]
    fn lists_without_a_strategy_are_replaced() {
        let doc = json!({"spec": {"containers": [{"name": "a", "args": ["1", "2"]}]}});
        let out = ok(doc, json!({"spec": {"containers": [{"name": "a", "args": ["3"]}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "args": ["3"]}]));
    }

    #[test]
    fn lists_of_maps_merge_by_key() {
        let doc = json!({"spec": {"containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "y"}]}});
        let out = ok(
            doc,
            json!({"spec": {"containers": [
                {"name": "b", "image": "z"},
                {"name": "c", "image": "w"},
                {"name": "a", "ports": [{"containerPort": 443}]}]}}),
        );
        // kube's order without `$setElementOrder`: the patch's items in the patch's order,
        // each of the server's others placed before the first patch item the server had after
        // it; an item the server lacks wins every comparison, so new ports come first.
        assert_eq!(
            out["spec"]["containers"],
            json!([
                {"name": "b", "image": "z"},
                {"name": "c", "image": "w"},
                {"name": "a", "image": "x", "ports": [{"containerPort": 443}, {"containerPort": 80}]}
            ])
        );
    }

    #[test]
    fn primitive_merge_lists_are_unions_and_parallel_lists_delete() {
        let doc = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = ok(doc.clone(), json!({"metadata": {"finalizers": ["c", "a"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let out = ok(doc, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        // A deletion list for a field the object lacks adds nothing.
        let out =
            ok(json!({"spec": {}}), json!({"spec": {"$deleteFromPrimitiveList/tags": ["x"]}}));
        assert_eq!(out, json!({"spec": {}}));
    }

    #[test]
    fn patch_directives_in_maps_and_items() {
        let doc = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}],
                                  "strategy": {"type": "R", "rollingUpdate": {"m": 1}}}});
        let out =
            ok(doc.clone(), json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
        let out = ok(
            doc.clone(),
            json!({"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
        let out =
            ok(doc.clone(), json!({"spec": {"strategy": {"$patch": "replace", "type": "X"}}}));
        assert_eq!(out["spec"]["strategy"], json!({"type": "X"}));
        let out = ok(doc.clone(), json!({"spec": {"strategy": {"$patch": "delete"}}}));
        assert_eq!(out["spec"]["strategy"], json!({}));
        // A `replace` strategy in the schema replaces the whole map.
        let out = ok(
            json!({"spec": {"selector": {"a": "1"}}}),
            json!({"spec": {"selector": {"b": "2"}}}),
        );
        assert_eq!(out["spec"]["selector"], json!({"b": "2"}));
    }

    #[test]
    fn retain_keys_clears_the_rest() {
        let doc =
            json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"m": 1}}}});
        let out = ok(
            doc.clone(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        let err = patched(
            doc.clone(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        )
        .unwrap_err();
        assert_eq!(err, ApiError::PatchUnprocessable(NOT_IN_RETAIN_KEYS.into()));
        let err = patched(doc, json!({"spec": {"strategy": {"$retainKeys": "type"}}})).unwrap_err();
        assert_eq!(err, ApiError::bad_request(BAD_RETAIN_KEYS));
    }

    #[test]
    fn set_element_order_orders_the_result() {
        // kubectl apply's parallel order list, from kube's TestStrategicMergePatch cases.
        let doc = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
        let out = ok(
            doc,
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "d"}, {"name": "a"}],
                "containers": [{"name": "d"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "a"}])
        );
        let doc = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
        let out = ok(
            doc,
            json!({"metadata": {"$setElementOrder/finalizers": ["c", "a", "x"], "finalizers": ["x"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "c", "a", "x"]));
    }

    #[test]
    fn malformed_patches_answer_as_kube() {
        let doc = json!({"spec": {"containers": [{"name": "a"}]}});
        let e = patched(doc.clone(), json!({"$patch": "nope", "x": 1})).unwrap_err();
        assert_eq!(
            e,
            ApiError::Unknown("unknown patch type: nope in map: map[$patch:nope x:1]".into())
        );
        let e =
            patched(doc.clone(), json!({"spec": {"containers": [{"image": "i"}]}})).unwrap_err();
        assert_eq!(
            e,
            ApiError::Unknown("map: map[image:i] does not contain declared merge key: name".into())
        );
        let e = patched(
            doc.clone(),
            json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            e,
            ApiError::Unknown("merging lists cannot yet be specified in the patch".into())
        );
        let e =
            patched(json!({"spec": {"tags": []}}), json!({"spec": {"tags": [["b"]]}})).unwrap_err();
        assert_eq!(e, ApiError::PatchUnprocessable(LISTS_OF_LISTS.into()));
        // Go names the first item's type, so a list after a string is a mismatch.
        let e = patched(json!({"spec": {"tags": ["a"]}}), json!({"spec": {"tags": [["b"]]}}))
            .unwrap_err();
        assert_eq!(
            e,
            ApiError::Unknown("list element types are not identical: [[a] [[b]]]".into())
        );
        let e = patched(doc.clone(), json!({"$deleteFromPrimitiveList": ["a"]})).unwrap_err();
        assert_eq!(e, ApiError::bad_request(BAD_PRIMITIVE_LIST));
        let e = patched(doc.clone(), json!({"$setElementOrder": []})).unwrap_err();
        assert_eq!(e, ApiError::bad_request(BAD_SET_ELEMENT_ORDER));
        let e = patched(doc, json!({"spec": {"$setElementOrder/containers": "x"}})).unwrap_err();
        assert_eq!(e, ApiError::Unknown("expected a []interface {}, but received a string".into()));
        assert_eq!(
            parse(b"[1]").unwrap_err(),
            ApiError::bad_request(
                "json: cannot unmarshal array into Go value of type map[string]interface {}"
            )
        );
        assert_eq!(parse(b"null").unwrap(), json!({}));
    }

    #[test]
    fn without_a_schema_lists_are_replaced() {
        let mut doc = json!({"a": [1, 2], "m": {"x": 1}});
        apply(&mut doc, &json!({"a": [3], "m": {"y": 2}}), None).unwrap();
        assert_eq!(doc, json!({"a": [3], "m": {"x": 1, "y": 2}}));
    }

    #[test]
    fn go_prints_values() {
        assert_eq!(
            go_v(&json!({"b": [1, "x", null], "a": {"c": true}})),
            "map[a:map[c:true] b:[1 x <nil>]]"
        );
        assert_eq!(go_v(&json!(1.5)), "1.5");
        assert_eq!(go_v(&json!(1e21)), "1e+21");
        assert_eq!(go_v(&json!(1000000.0)), "1e+06");
        assert_eq!(go_v(&json!(123456.5)), "123456.5");
        assert_eq!(go_v(&json!(0.00001)), "1e-05");
    }
}
