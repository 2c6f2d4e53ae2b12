//! Status conditions as kube's helpers read and write them (`podutil.GetPodCondition`,
//! `UpdatePodCondition`): one condition a type, its transition time kept while its status is.

use serde_json::{json, Map, Value};

use crate::object::meta::now_rfc3339;
use crate::object::At;

/// The object's `status.conditions` entry of `type_`.
pub fn find<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    let list = obj.at("/status/conditions")?.as_array()?;
    list.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// kube's `podutil.UpdatePodCondition` (K8S `pkg/api/pod/util.go`): the condition replaces the
/// one of its type whole (an old reason or message does not survive), with
/// `lastTransitionTime` now unless the status is unchanged, or is appended.
pub fn update_condition(pod: &mut Value, type_: &str, status: &str, reason: &str, msg: &str) {
    let mut cond = Map::new();
    cond.insert("type".into(), type_.into());
    cond.insert("status".into(), status.into());
    // metav1.Time's zero value is written as null: kube's pods carry `lastProbeTime: null`.
    cond.insert("lastProbeTime".into(), Value::Null);
    cond.insert("lastTransitionTime".into(), now_rfc3339().into());
    if !reason.is_empty() {
        cond.insert("reason".into(), reason.into());
    }
    if !msg.is_empty() {
        cond.insert("message".into(), msg.into());
    }
    let Some(obj) = pod.as_object_mut() else { return };
    let status_obj = obj.entry("status").or_insert_with(|| json!({}));
    let Some(status_map) = status_obj.as_object_mut() else { return };
    let list = status_map.entry("conditions").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("an array");
    match list.iter_mut().find(|c| c["type"] == type_) {
        Some(old) => {
            if old["status"] == status {
                if let Some(t) = old.get("lastTransitionTime") {
                    cond.insert("lastTransitionTime".into(), t.clone());
                }
            }
            *old = Value::Object(cond);
        }
        None => list.push(Value::Object(cond)),
    }
}
