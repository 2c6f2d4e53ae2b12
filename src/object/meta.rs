//! ObjectMeta rules: system fields on create, names, labels, annotations and the other checks of
//! kube's `ValidateObjectMeta`, for objects held as JSON.

use serde_json::{Map, Value};

use crate::object::error::Cause;
use crate::object::At;

/// The finalizer a delete with `propagationPolicy=Orphan` adds: the garbage collector orphans
/// the dependents, then removes it.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer a foreground delete adds: the owner stays until its blocking dependents are gone.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Longest object name (A.9).
pub const MAX_NAME_LEN: usize = 253;
/// Longest namespace (A.9).
pub const MAX_NAMESPACE_LEN: usize = 63;
/// Sum of annotation key and value sizes (`TotalAnnotationSizeLimitB`).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// Fields that a creator may not set; the server owns them.
const SYSTEM_FIELDS: &[&str] =
    &["creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"];

/// The object's metadata, created empty when absent; a non-object metadata is a 400.
pub fn metadata_mut(
    obj: &mut Value,
) -> Result<&mut Map<String, Value>, crate::object::error::ApiError> {
    let root = obj.as_object_mut().ok_or_else(|| {
        crate::object::error::ApiError::bad_request("the object must be a JSON object")
    })?;
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
        .ok_or_else(|| crate::object::error::ApiError::bad_request("metadata must be an object"))
}

/// The finalizers `meta` lists.
/// The finalizers of object `obj` (its metadata's).
pub fn object_finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata").and_then(Value::as_object).map(finalizers).unwrap_or_default()
}

pub fn finalizers(meta: &Map<String, Value>) -> Vec<String> {
    meta.get("finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Removes `remove` from `meta`'s finalizers and appends each of `add` it lacks; an empty list
/// goes. Whether anything changed.
pub fn edit_finalizers(meta: &mut Map<String, Value>, add: &[String], remove: &[String]) -> bool {
    let Some(list) = edited_finalizers(meta, add, remove) else { return false };
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(list));
    }
    true
}

/// The finalizers `edit_finalizers` would leave, when they differ from `meta`'s.
pub fn edited_finalizers(
    meta: &Map<String, Value>,
    add: &[String],
    remove: &[String],
) -> Option<Vec<String>> {
    let before = finalizers(meta);
    let mut list: Vec<String> = before.iter().filter(|f| !remove.contains(f)).cloned().collect();
    for a in add {
        if !list.contains(a) {
            list.push(a.clone());
        }
    }
    (list != before).then_some(list)
}

/// Whether `meta` marks its object as being deleted (a `deletionTimestamp` is set).
pub fn deleting(meta: &Map<String, Value>) -> bool {
    meta.get("deletionTimestamp").is_some_and(|t| !t.is_null() && t != "")
}

/// Whether `obj` is being deleted.
pub fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata").and_then(Value::as_object).is_some_and(deleting)
}

/// The ownerReference of `obj`'s controller (metav1 `GetControllerOf`: the first that says
/// `controller: true`; validation allows one).
pub fn controller_ref(obj: &Value) -> Option<&Map<String, Value>> {
    let refs = obj.at("/metadata/ownerReferences")?.as_array()?;
    refs.iter()
        .filter_map(Value::as_object)
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))
}

/// Is `s` a lowercase RFC 1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`), without the length limit.
pub fn is_dns_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label_chars)
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Problems with a name or namespace of the seed's shape (A.9); empty when valid.
pub fn name_errors(name: &str, max: usize) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > max {
        errs.push(format!("must be no more than {max} characters"));
    }
    if !is_dns_label_chars(name) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

/// Problems with a name that kube validates as an RFC 1035 label (apimachinery
/// `pkg/util/validation/validation.go`, `IsDNS1035Label`).
fn dns1035_label_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > MAX_NAMESPACE_LEN {
        errs.push(format!("must be no more than {MAX_NAMESPACE_LEN} characters"));
    }
    if !is_dns_label_chars(name) || !name.as_bytes()[0].is_ascii_lowercase() {
        errs.push(DNS1035_LABEL_MSG.to_string());
    }
    errs
}

/// Problems with a name that kube validates as an RFC 1123 subdomain (`NameIsDNSSubdomain`).
fn subdomain_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > MAX_NAME_LEN {
        errs.push(format!("must be no more than {MAX_NAME_LEN} characters"));
    }
    if !name.split('.').all(is_dns_label_chars) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// Problems with a qualified name such as a label key, annotation key or finalizer
/// (apimachinery `pkg/util/validation/validation.go`, `IsQualifiedName`).
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else if !is_dns_subdomain(prefix) {
                errs.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                &QUALIFIED_NAME_MSG["name part ".len()..]
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    // The regex does not match an empty name either.
    if !is_qualified_name_part(name) {
        errs.push(QUALIFIED_NAME_MSG.to_string());
    }
    errs
}

/// Problems with a label value.
pub fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_qualified_name_part(v) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

/// Go's `%q` rendering of a string value in a cause message.
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Which names a kind accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// The seed's: label characters, up to 253 long (A.9).
    Seed,
    /// RFC 1123 subdomains (`NameIsDNSSubdomain`), as most built-in kinds.
    Subdomain,
    /// RFC 1123 labels, at most 63 long (`NameIsDNSLabel`): namespaces
    /// (apimachinery `pkg/api/validation/generic.go`, `ValidateNamespaceName`).
    Label,
    /// RFC 1035 labels, a letter first (`NameIsDNS1035Label`): services (K8S
    /// pkg/apis/core/validation/validation.go, `ValidateServiceName`).
    Dns1035Label,
}

/// Validates `metadata` as kube's `ValidateObjectMeta` does for a custom resource.
/// `namespaced` says whether a namespace is required; `names` which names are valid.
pub fn validate(meta: &Map<String, Value>, namespaced: bool, names: Names) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        causes.push(Cause::required("metadata.name", "name or generateName is required"));
    } else {
        let errs = match names {
            Names::Seed => name_errors(name, MAX_NAME_LEN),
            Names::Subdomain => subdomain_name_errors(name),
            Names::Label => name_errors(name, MAX_NAMESPACE_LEN),
            Names::Dns1035Label => dns1035_label_errors(name),
        };
        for e in errs {
            causes.push(Cause::invalid("metadata.name", &quote(name), &e));
        }
    }
    let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    if namespaced {
        if namespace.is_empty() {
            causes.push(Cause::required("metadata.namespace", ""));
        } else {
            for e in name_errors(namespace, MAX_NAMESPACE_LEN) {
                causes.push(Cause::invalid("metadata.namespace", &quote(namespace), &e));
            }
        }
    } else if !namespace.is_empty() {
        causes.push(Cause::forbidden("metadata.namespace", "not allowed on this type"));
    }
    validate_string_map(meta, "labels", &mut causes, |k, v, causes| {
        for e in qualified_name_errors(k) {
            causes.push(Cause::invalid("metadata.labels", &quote(k), &e));
        }
        for e in label_value_errors(v) {
            causes.push(Cause::invalid("metadata.labels", &quote(v), &e));
        }
    });
    let mut annotation_bytes = 0usize;
    validate_string_map(meta, "annotations", &mut causes, |k, v, causes| {
        annotation_bytes += k.len() + v.len();
        for e in qualified_name_errors(&k.to_lowercase()) {
            causes.push(Cause::invalid("metadata.annotations", &quote(k), &e));
        }
    });
    if annotation_bytes > MAX_ANNOTATIONS_BYTES {
        causes.push(Cause::too_long("metadata.annotations", MAX_ANNOTATIONS_BYTES));
    }
    match meta.get("finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let mut names = Vec::new();
            for (i, f) in items.iter().enumerate() {
                let field = format!("metadata.finalizers[{i}]");
                match f.as_str() {
                    Some(s) => {
                        for e in qualified_name_errors(s) {
                            causes.push(Cause::invalid(&field, &quote(s), &e));
                        }
                        names.push(s);
                    }
                    None => causes.push(type_cause(&field, f, "string")),
                }
            }
            if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
                causes.push(Cause::invalid(
                    "metadata.finalizers",
                    "[]string{\"orphan\", \"foregroundDeletion\"}",
                    "finalizer orphan and foregroundDeletion cannot be both set",
                ));
            }
        }
        Some(other) => causes.push(type_cause("metadata.finalizers", other, "array")),
    }
    match meta.get("generation") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_i64().is_some_and(|g| g >= 0) => {}
        Some(Value::Number(n)) => causes.push(Cause::invalid(
            "metadata.generation",
            &n.to_string(),
            "must be greater than or equal to 0",
        )),
        Some(other) => causes.push(type_cause("metadata.generation", other, "integer")),
    }
    validate_owner_references(meta, &mut causes);
    for (field, ty) in
        [("generateName", "string"), ("uid", "string"), ("resourceVersion", "string")]
    {
        if let Some(v) = meta.get(field) {
            if !v.is_string() && !v.is_null() {
                causes.push(type_cause(&format!("metadata.{field}"), v, ty));
            }
        }
    }
    causes
}

fn validate_owner_references(meta: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let refs = match meta.get("ownerReferences") {
        None | Some(Value::Null) => return,
        Some(Value::Array(refs)) => refs,
        Some(other) => {
            causes.push(type_cause("metadata.ownerReferences", other, "array"));
            return;
        }
    };
    let mut controllers = 0;
    for (i, r) in refs.iter().enumerate() {
        let field = format!("metadata.ownerReferences[{i}]");
        let Some(obj) = r.as_object() else {
            causes.push(type_cause(&field, r, "object"));
            continue;
        };
        for key in ["apiVersion", "kind", "name", "uid"] {
            if obj.get(key).and_then(Value::as_str).unwrap_or("").is_empty() {
                causes.push(Cause::invalid(
                    &format!("{field}.{key}"),
                    "\"\"",
                    &format!("{key} must not be empty"),
                ));
            }
        }
        if obj.get("controller").and_then(Value::as_bool) == Some(true) {
            controllers += 1;
        }
    }
    if controllers > 1 {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            "[]v1.OwnerReference{...}",
            "Only one reference can have Controller set to true",
        ));
    }
}

fn validate_string_map(
    meta: &Map<String, Value>,
    field: &str,
    causes: &mut Vec<Cause>,
    mut each: impl FnMut(&str, &str, &mut Vec<Cause>),
) {
    match meta.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v.as_str() {
                    Some(s) => each(k, s, causes),
                    None => causes.push(type_cause(&format!("metadata.{field}.{k}"), v, "string")),
                }
            }
        }
        Some(other) => causes.push(type_cause(&format!("metadata.{field}"), other, "object")),
    }
}

fn type_cause(field: &str, v: &Value, expected: &str) -> Cause {
    Cause {
        reason: "FieldValueTypeInvalid",
        message: format!("Invalid value: {}: must be of type {expected}", short(v)),
        field: field.into(),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 64 {
        format!("{}...", &s[..s.char_indices().nth(60).map(|(i, _)| i).unwrap_or(s.len())])
    } else {
        s
    }
}

/// Type errors in the fields the server sets (uid, timestamps, resourceVersion, generation,
/// managedFields): kube's ObjectMeta decoding refuses them even where their values are then
/// replaced, so they are checked before `wipe_system_fields` or the update rules run.
pub fn system_field_type_causes(meta: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (field, ty) in [
        ("uid", "string"),
        ("resourceVersion", "string"),
        ("creationTimestamp", "string"),
        ("deletionTimestamp", "string"),
        ("selfLink", "string"),
        ("generation", "integer"),
        ("deletionGracePeriodSeconds", "integer"),
        ("managedFields", "array"),
    ] {
        let ok = match meta.get(field) {
            None | Some(Value::Null) => true,
            Some(v) => match ty {
                "string" => v.is_string(),
                "integer" => v.is_i64() || v.is_u64(),
                _ => v.is_array(),
            },
        };
        if !ok {
            causes.push(type_cause(&format!("metadata.{field}"), &meta[field], ty));
        }
    }
    causes
}

/// Removes the fields a creator may not set (kube's `WipeObjectMetaSystemFields`).
pub fn wipe_system_fields(meta: &mut Map<String, Value>) {
    for f in SYSTEM_FIELDS {
        meta.remove(*f);
    }
}

/// A generated name: the base cut to 58 characters plus 5 random characters (kube's
/// `SimpleNameGenerator`, alphabet without vowels and look-alikes).
pub fn generate_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let base: String = base.chars().take(58).collect();
    let mut bytes = [0u8; 5];
    getrandom::getrandom(&mut bytes).expect("system randomness");
    let suffix: String =
        bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect();
    format!("{base}{suffix}")
}

/// A fresh random UID.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Now as RFC 3339 UTC at seconds precision, as metav1.Time is written.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parses `YYYY-MM-DDTHH:MM:SSZ` (as written by `rfc3339`) back to Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc3339_round_trips() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_782_907_200), "2026-07-01T12:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        for t in [0, 951_782_400, 1_782_907_200, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
    }

    #[test]
    fn subdomain_names_may_have_dots() {
        let name = |n: &str| json!({"name": n, "namespace": "ns"});
        let causes = |n: &str, names| validate(name(n).as_object().unwrap(), true, names);
        assert!(causes("vm1.17979cfe3d85cd15", Names::Subdomain).is_empty());
        assert_eq!(causes("vm1.17979cfe3d85cd15", Names::Seed).len(), 1, "the seed's labels");
        for bad in ["a..b", ".a", "A.b", "a.-b"] {
            let c = causes(bad, Names::Subdomain);
            assert!(c.len() == 1 && c[0].message.contains("RFC 1123 subdomain"), "{bad}: {c:?}");
        }
        assert_eq!(causes(&"a".repeat(254), Names::Subdomain).len(), 1);
    }

    #[test]
    fn label_names_are_at_most_63_long() {
        let causes =
            |n: &str| validate(json!({"name": n}).as_object().unwrap(), false, Names::Label);
        assert!(causes(&"a".repeat(63)).is_empty());
        let c = causes(&"a".repeat(64));
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].field, "metadata.name");
        assert!(c[0].message.ends_with("must be no more than 63 characters"), "{c:?}");
        assert_eq!(causes("a.b").len(), 1, "no dots");
    }

    #[test]
    fn names_follow_the_seed_shape() {
        assert!(name_errors("vm-1", MAX_NAME_LEN).is_empty());
        assert!(!name_errors("VM", MAX_NAME_LEN).is_empty());
        assert!(!name_errors("a.b", MAX_NAME_LEN).is_empty());
        assert!(!name_errors("-a", MAX_NAME_LEN).is_empty());
        assert!(!name_errors(&"a".repeat(64), MAX_NAMESPACE_LEN).is_empty());
        assert!(name_errors(&"a".repeat(253), MAX_NAME_LEN).is_empty());
    }

    #[test]
    fn finalizers_deletion_and_the_controller() {
        let mut meta = json!({"finalizers": ["a", "b"]}).as_object().unwrap().clone();
        assert!(!edit_finalizers(&mut meta, &["a".into()], &[]));
        assert!(edit_finalizers(&mut meta, &["c".into()], &["a".into()]));
        assert_eq!(finalizers(&meta), ["b", "c"]);
        assert!(edit_finalizers(&mut meta, &[], &["b".into(), "c".into()]));
        assert!(!meta.contains_key("finalizers"), "an empty list goes");
        assert!(!is_deleting(&json!({"metadata": {"deletionTimestamp": null}})));
        assert!(is_deleting(&json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})));
        assert!(!is_deleting(&json!({"metadata": {}})));
        let owned = json!({"metadata": {"ownerReferences": [
            {"uid": "a", "controller": false}, {"uid": "b", "controller": true}]}});
        assert_eq!(controller_ref(&owned).and_then(|r| r.get("uid")), Some(&json!("b")));
        assert!(controller_ref(&json!({"metadata": {}})).is_none());
    }

    #[test]
    fn qualified_names_are_checked_as_kubes_is_qualified_name() {
        assert!(qualified_name_errors("example.com/x").is_empty());
        assert_eq!(qualified_name_errors("").len(), 2, "empty, and not matching the regex");
        assert_eq!(qualified_name_errors("/x"), ["prefix part must be non-empty"]);
        let nested = qualified_name_errors("a/b/c");
        assert_eq!(nested.len(), 1);
        assert!(
            nested[0].starts_with("a qualified name must consist of alphanumeric characters")
                && nested[0].ends_with(
                    "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            "{nested:?}"
        );
    }

    #[test]
    fn labels_are_checked() {
        let meta = json!({"name": "a", "namespace": "b", "labels": {"ok/x": "y", "bad key": "v", "k": "-bad"}});
        let causes = validate(meta.as_object().unwrap(), true, Names::Seed);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert!(causes.iter().all(|c| c.field == "metadata.labels"));
        let long = json!({"name": "a", "namespace": "b", "labels": {"a".repeat(64): "v"}});
        let causes = validate(long.as_object().unwrap(), true, Names::Seed);
        assert!(causes[0].message.contains("name part must be no more than 63 characters"));
    }

    #[test]
    fn scope_rules_for_namespace() {
        let c = validate(json!({"name": "a"}).as_object().unwrap(), true, Names::Seed);
        assert_eq!(c[0].field, "metadata.namespace");
        assert!(validate(json!({"name": "a"}).as_object().unwrap(), false, Names::Seed).is_empty());
        let c = validate(json!({}).as_object().unwrap(), false, Names::Seed);
        assert_eq!(c[0].message, "Required value: name or generateName is required");
    }

    #[test]
    fn generated_names_are_bounded() {
        let n = generate_name(&"x".repeat(80));
        assert_eq!(n.len(), 63);
        assert!(n.starts_with(&"x".repeat(58)));
    }
}
