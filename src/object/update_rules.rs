//! kube's update validation of its built-in kinds, for those whose `x-virt-resource.updateRules`
//! declare it (K8S pkg/apis/core/validation/validation.go `ValidatePodUpdate`,
//! `ValidatePersistentVolumeUpdate`, `ValidatePersistentVolumeClaimUpdate`;
//! pkg/apis/storage/validation/validation.go `ValidateStorageClassUpdate`): values that may not
//! change, lists that may only grow, and whole specs frozen but for some paths, refused with
//! kube's words and, for a frozen spec, a diff in the manner of go-cmp's `cmp.Diff`. Nothing
//! here names a kind. Rules run on writes through the main endpoint; the status subresource
//! keeps the spec as stored.

use serde_json::{Map, Value};

use crate::object::error::Cause;
use crate::object::meta::quote;
use crate::resource::{Allowed, Exception, ResourceInfo, UpdateRule};

/// `validation.InclusiveRangeError(0, math.MaxInt32)` (apimachinery pkg/util/validation).
const DEADLINE_RANGE: &str = "must be between 0 and 2147483647, inclusive";

/// The causes kube's update validation finds in `new` over `old`, in kube's order; a rule that
/// stops kube's validation (a list changing length, a deadline out of bounds) ends them.
pub fn validate(res: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for rule in res.update_rules {
        match rule {
            UpdateRule::Immutable { at, field, message, invalid, once } => {
                let value = get(new, at);
                let settable = *once && get(old, at).is_none();
                if !settable && !same(value, get(old, at)) {
                    causes.push(if *invalid {
                        Cause::invalid(field, &shown(value), message)
                    } else {
                        Cause::forbidden(field, message)
                    });
                }
            }
            UpdateRule::SameLength { at, field, message } => {
                if list_len(get(new, at)) != list_len(get(old, at)) {
                    causes.push(Cause::forbidden(field, message));
                    return causes;
                }
            }
            UpdateRule::OnlyAdditions { at, field, ignoring, message } => {
                let items = |v: &Value| {
                    let list = get(v, at).and_then(Value::as_array).cloned().unwrap_or_default();
                    list.into_iter().map(|i| without(i, ignoring)).collect::<Vec<_>>()
                };
                let kept = items(new);
                if items(old).iter().any(|o| !kept.contains(o)) {
                    causes.push(Cause::forbidden(field, message));
                }
            }
            UpdateRule::OnlyLowered { at, field } => {
                let new_v = get(new, at).and_then(Value::as_i64);
                let old_v = get(old, at).and_then(Value::as_i64);
                match (new_v, old_v) {
                    (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
                        causes.push(Cause::invalid(field, &n.to_string(), DEADLINE_RANGE));
                        return causes;
                    }
                    (Some(n), Some(o)) if o < n => {
                        let msg = "must be less than or equal to previous value";
                        causes.push(Cause::invalid(field, &n.to_string(), msg));
                        return causes;
                    }
                    (None, Some(_)) => {
                        let msg = "must not update from a positive integer to nil value";
                        causes.push(Cause::invalid(field, &quote("null"), msg));
                    }
                    _ => {}
                }
            }
            UpdateRule::NotBelow { at, field, floor, message } => {
                let q = |v: &Value, p: &str| get(v, p).and_then(quantity).unwrap_or(0.0);
                let (n, o, f) = (q(new, at), q(old, at), q(old, floor));
                if n < o && n <= f {
                    causes.push(Cause::forbidden(field, message));
                }
            }
            UpdateRule::Frozen { at, only, except, field, message, diff } => {
                let pick = |v: &Value| {
                    let value = get(v, at).cloned().unwrap_or(Value::Null);
                    match (only.is_empty(), value) {
                        (false, Value::Object(m)) => Value::Object(
                            m.into_iter().filter(|(k, _)| only.contains(&k.as_str())).collect(),
                        ),
                        (_, value) => value,
                    }
                };
                let (old_v, mut new_v) = (pick(old), pick(new));
                for e in *except {
                    let segs: Vec<&str> = e.path.split('.').collect();
                    mask(&mut new_v, &old_v, &segs, e, new);
                }
                if normalized(&old_v) != normalized(&new_v) {
                    let text = format!("{message}\n{}", go_diff(diff, &old_v, &new_v));
                    causes.push(Cause::forbidden(field, &text));
                }
            }
        }
    }
    causes
}

/// The value at a dotted path, if set.
fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, seg| v.get(seg)).filter(|v| !v.is_null())
}

fn list_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_array).map_or(0, Vec::len)
}

/// kube's `apiequality.Semantic.DeepEqual` over JSON: unset, null and empty lists and maps are
/// one (Go's nil and empty slices and maps).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let n = |v: Option<&Value>| v.map_or(Value::Null, normalized);
    n(a) == n(b)
}

fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().map(|(k, v)| (k.clone(), normalized(v))).filter(|(_, v)| !empty(v)).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// An item without the `ignoring` keys, its zero values dropped (a Go struct's "" and unset
/// string are one).
fn without(item: Value, ignoring: &[&str]) -> Value {
    match normalized(&item) {
        Value::Object(m) => Value::Object(
            m.into_iter().filter(|(k, v)| !ignoring.contains(&k.as_str()) && v != "").collect(),
        ),
        other => other,
    }
}

/// A value as `field.Invalid` prints it: strings quoted, an unset pointer `"null"`.
fn shown(v: Option<&Value>) -> String {
    match v {
        None => quote("null"),
        Some(Value::String(s)) => quote(s),
        Some(other) => other.to_string(),
    }
}

/// Puts the old value back at `segs` in `new` where the exception allows the change, as kube
/// munges the new spec before comparing (`[*]` takes each item with the old one at its index).
fn mask(new: &mut Value, old: &Value, segs: &[&str], e: &Exception, whole: &Value) {
    let Some((seg, rest)) = segs.split_first() else { return };
    if let Some(name) = seg.strip_suffix("[*]") {
        let olds = old.get(name).and_then(Value::as_array);
        let Some(news) = new.get_mut(name).and_then(Value::as_array_mut) else { return };
        for (i, item) in news.iter_mut().enumerate() {
            let Some(old_item) = olds.and_then(|o| o.get(i)) else { continue };
            if rest.is_empty() {
                if allowed(e.when, Some(old_item), Some(item), whole) {
                    *item = old_item.clone();
                }
            } else {
                mask(item, old_item, rest, e, whole);
            }
        }
        return;
    }
    let Some(map) = new.as_object_mut() else { return };
    let old_v = old.get(*seg).filter(|v| !v.is_null());
    if rest.is_empty() {
        if allowed(e.when, old_v, map.get(*seg).filter(|v| !v.is_null()), whole) {
            match old_v {
                Some(o) => map.insert(seg.to_string(), o.clone()),
                None => map.remove(*seg),
            };
        }
        return;
    }
    if let Some(child) = map.get_mut(*seg) {
        mask(child, old_v.unwrap_or(&Value::Null), rest, e, whole);
    } else if let Some(o) = old_v {
        // Only the exception's path may differ: put the rest of the old value back around it.
        let mut child = Value::Object(Map::new());
        mask(&mut child, o, rest, e, whole);
        if child.as_object().is_some_and(|m| !m.is_empty()) {
            map.insert(seg.to_string(), child);
        }
    }
}

fn allowed(when: Allowed, old: Option<&Value>, new: Option<&Value>, whole: &Value) -> bool {
    let unset = |v: Option<&Value>| v.is_none_or(|v| v == "" || empty(v));
    match when {
        Allowed::Always => true,
        Allowed::OldUnset => unset(old),
        Allowed::SetOnce => unset(old) && !unset(new),
        Allowed::NegativeToOne => {
            old.and_then(Value::as_i64).is_some_and(|o| o < 0)
                && new.and_then(Value::as_i64) == Some(1)
        }
        Allowed::FieldEquals(field, value) => {
            get(whole, field).and_then(Value::as_str) == Some(value)
        }
    }
}

/// A resource.Quantity's value (`1Gi`, `500M`, `1.5`, `2e3`), for comparing sizes.
pub fn quantity(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => lifecycle::expr::parse_quantity(s),
        _ => None,
    }
}

/// A diff of two values in the manner of go-cmp's `cmp.Diff(old, new)` as kube prints it in
/// these messages (K8S validation.go: `cmp.Diff(oldPod.Spec, mungedPodSpec)`): the type's name
/// and a brace, then, a tab deeper per level, the fields that differ as `-`/`+` lines and those
/// that do not as `... // N identical fields`. It differs from go-cmp's text, which is not
/// stable by design (go-cmp puts non-breaking spaces at random after `-`/`+`): fields are
/// named by capitalizing their JSON names (`DnsPolicy` for Go's `DNSPolicy`), listed in
/// alphabetical order rather than the Go struct's, nested values carry no Go type name, no
/// identical field is shown in full, and values print as JSON-like Go literals (`&30` for a
/// pointer is `30`).
pub fn go_diff(type_name: &str, old: &Value, new: &Value) -> String {
    let mut out = format!("  {type_name}{{\n");
    let (old, new) = (normalized(old), normalized(new));
    match (&old, &new) {
        (Value::Object(o), Value::Object(n)) => diff_fields(&mut out, 1, o, n),
        (Value::Object(o), Value::Null) => diff_fields(&mut out, 1, o, &Map::new()),
        (Value::Null, Value::Object(n)) => diff_fields(&mut out, 1, &Map::new(), n),
        _ => {
            out.push_str(&format!("- \t{},\n+ \t{},\n", literal(&old), literal(&new)));
        }
    }
    out.push_str("  }\n");
    out
}

fn diff_fields(out: &mut String, depth: usize, old: &Map<String, Value>, new: &Map<String, Value>) {
    let mut keys: Vec<&String> =
        old.keys().chain(new.keys().filter(|k| !old.contains_key(*k))).collect();
    keys.sort();
    let mut identical = 0;
    for k in keys {
        let (o, n) = (old.get(k), new.get(k));
        if o == n {
            identical += 1;
            continue;
        }
        elided(out, depth, &mut identical, "field");
        diff_value(out, depth, &format!("{}: ", go_name(k)), o, n);
    }
    elided(out, depth, &mut identical, "field");
}

fn diff_value(out: &mut String, depth: usize, label: &str, o: Option<&Value>, n: Option<&Value>) {
    let tabs = "\t".repeat(depth);
    match (o, n) {
        (Some(Value::Object(o)), Some(Value::Object(n))) => {
            out.push_str(&format!("  {tabs}{label}{{\n"));
            diff_fields(out, depth + 1, o, n);
            out.push_str(&format!("  {tabs}}},\n"));
        }
        (Some(Value::Array(o)), Some(Value::Array(n))) if o.len() == n.len() => {
            out.push_str(&format!("  {tabs}{label}{{\n"));
            let mut identical = 0;
            for (a, b) in o.iter().zip(n) {
                if a == b {
                    identical += 1;
                    continue;
                }
                elided(out, depth + 1, &mut identical, "element");
                diff_value(out, depth + 1, "", Some(a), Some(b));
            }
            elided(out, depth + 1, &mut identical, "element");
            out.push_str(&format!("  {tabs}}},\n"));
        }
        _ => {
            let pad = |v: Option<&Value>| v.map_or_else(|| "nil".to_string(), literal);
            out.push_str(&format!("- {tabs}{label}{},\n", pad(o)));
            out.push_str(&format!("+ {tabs}{label}{},\n", pad(n)));
        }
    }
}

fn elided(out: &mut String, depth: usize, n: &mut usize, what: &str) {
    if *n > 0 {
        let s = if *n == 1 { "" } else { "s" };
        out.push_str(&format!("  {}... // {n} identical {what}{s}\n", "\t".repeat(depth)));
        *n = 0;
    }
}

/// A JSON value as a Go literal, roughly as go-cmp prints one.
fn literal(v: &Value) -> String {
    match v {
        Value::Null => "nil".into(),
        Value::String(s) => format!("{s:?}"),
        Value::Object(m) => {
            let fields: Vec<String> =
                m.iter().map(|(k, v)| format!("{}: {}", go_name(k), literal(v))).collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(literal).collect();
            format!("{{{}}}", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn go_name(json: &str) -> String {
    let mut c = json.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD_RULES: &[UpdateRule] = &[
        UpdateRule::SameLength { at: "spec.containers", field: "spec.containers", message: "add" },
        UpdateRule::OnlyLowered { at: "spec.deadline", field: "spec.deadline" },
        UpdateRule::OnlyAdditions {
            at: "spec.tolerations",
            field: "spec.tolerations",
            ignoring: &["tolerationSeconds"],
            message: "tol",
        },
        UpdateRule::Frozen {
            at: "spec",
            only: &[],
            except: &[
                Exception { path: "containers[*].image", when: Allowed::Always },
                Exception { path: "tolerations", when: Allowed::Always },
                Exception { path: "deadline", when: Allowed::Always },
                Exception { path: "grace", when: Allowed::NegativeToOne },
                Exception { path: "volumeName", when: Allowed::OldUnset },
                Exception {
                    path: "resources.requests.storage",
                    when: Allowed::FieldEquals("status.phase", "Bound"),
                },
            ],
            field: "spec",
            message: "frozen",
            diff: "core.Spec",
        },
        UpdateRule::NotBelow {
            at: "spec.resources.requests.storage",
            field: "spec.resources.requests.storage",
            floor: "status.capacity.storage",
            message: "floor",
        },
        UpdateRule::Immutable {
            at: "mode",
            field: "mode",
            message: "field is immutable",
            invalid: true,
            once: false,
        },
    ];

    fn res() -> ResourceInfo {
        ResourceInfo { update_rules: POD_RULES, ..ResourceInfo::EXAMPLE }
    }

    fn old() -> Value {
        json!({"spec": {"containers": [{"name": "c", "image": "a"}], "grace": -5,
                        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
                        "resources": {"requests": {"storage": "2Gi"}}, "dnsPolicy": "ClusterFirst"},
               "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}}})
    }

    fn causes(edit: impl FnOnce(&mut Value)) -> Vec<String> {
        let mut new = old();
        edit(&mut new);
        validate(&res(), &new, &old())
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn exceptions_may_change_and_nothing_else() {
        assert!(causes(|_| {}).is_empty());
        assert!(causes(|n| n["spec"]["containers"][0]["image"] = json!("b")).is_empty());
        assert!(causes(|n| n["spec"]["grace"] = json!(1)).is_empty());
        assert!(causes(|n| n["spec"]["volumeName"] = json!("pv")).is_empty(), "set once");
        assert!(causes(|n| n["spec"]["resources"]["requests"]["storage"] = json!("3Gi")).is_empty());
        assert!(causes(|n| n["spec"]["deadline"] = json!(30)).is_empty());
        assert!(causes(|n| n["spec"]["tolerations"][0]["tolerationSeconds"] = json!(9)).is_empty());
        assert!(causes(|n| {
            n["spec"]["tolerations"].as_array_mut().unwrap().push(json!({"key": "x"}))
        })
        .is_empty());
        // Go's nil and empty are one.
        assert!(causes(|n| n["spec"]["initContainers"] = json!([])).is_empty());

        let grace = causes(|n| n["spec"]["grace"] = json!(2));
        assert_eq!(grace.len(), 1);
        assert!(grace[0].starts_with("spec: Forbidden: frozen\n  core.Spec{\n"), "{grace:?}");
        assert!(grace[0].contains("- \tGrace: -5,\n+ \tGrace: 2,\n"), "{grace:?}");
        let image = causes(|n| {
            n["spec"]["containers"][0]["name"] = json!("d");
        });
        assert_eq!(
            image[0],
            "spec: Forbidden: frozen\n  core.Spec{\n  \tContainers: {\n  \t\t{\n  \t\t\t... // 1 identical field\n- \t\t\tName: \"c\",\n+ \t\t\tName: \"d\",\n  \t\t},\n  \t},\n  \t... // 4 identical fields\n  }\n"
        );
    }

    #[test]
    fn a_bound_claim_is_resized_unless_the_claim_is_pending() {
        let mut pending = old();
        pending["status"]["phase"] = json!("Pending");
        let mut new = pending.clone();
        new["spec"]["resources"]["requests"]["storage"] = json!("3Gi");
        let c = validate(&res(), &new, &pending);
        assert_eq!(c.len(), 1);
        assert!(
            c[0].message.contains("- \t\t\tStorage: \"2Gi\",\n+ \t\t\tStorage: \"3Gi\",\n"),
            "{c:?}"
        );
        // Lowered to the capacity it has: refused; above it (recovering a failed expansion): taken.
        let mut grown = old();
        grown["spec"]["resources"]["requests"]["storage"] = json!("4Gi");
        let lower = |to: &str| {
            let mut n = grown.clone();
            n["spec"]["resources"]["requests"]["storage"] = json!(to);
            validate(&res(), &n, &grown).into_iter().map(|c| c.message).collect::<Vec<_>>()
        };
        assert_eq!(lower("2048Mi"), ["Forbidden: floor"]);
        assert!(lower("3Gi").is_empty());
    }

    #[test]
    fn lists_deadlines_and_immutable_values() {
        let more = causes(|n| n["spec"]["containers"].as_array_mut().unwrap().push(json!({})));
        assert_eq!(more, ["spec.containers: Forbidden: add"], "stops there");
        let changed = causes(|n| n["spec"]["tolerations"][0]["key"] = json!("j"));
        assert_eq!(changed, ["spec.tolerations: Forbidden: tol"]);
        let mut timed = old();
        timed["spec"]["deadline"] = json!(30);
        let deadline = |v: Value| {
            let mut n = timed.clone();
            n["spec"]["deadline"] = v;
            validate(&res(), &n, &timed).into_iter().map(|c| c.message).collect::<Vec<_>>()
        };
        assert!(deadline(json!(10)).is_empty());
        assert_eq!(
            deadline(json!(31)),
            ["Invalid value: 31: must be less than or equal to previous value"]
        );
        assert_eq!(deadline(json!(-1)), [format!("Invalid value: -1: {DEADLINE_RANGE}")]);
        assert_eq!(
            deadline(Value::Null),
            ["Invalid value: \"null\": must not update from a positive integer to nil value"]
        );
        let mode = causes(|n| n["mode"] = json!("Block"));
        assert_eq!(mode, ["mode: Invalid value: \"Block\": field is immutable"]);
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity(&json!("1Gi")), Some(1073741824.0));
        assert_eq!(quantity(&json!("1024Mi")), quantity(&json!("1Gi")));
        assert_eq!(quantity(&json!("500m")), Some(0.5));
        assert_eq!(quantity(&json!("2e3")), Some(2000.0));
        assert_eq!(quantity(&json!(3)), Some(3.0));
        assert_eq!(quantity(&json!("1Qi")), None);
    }
}
