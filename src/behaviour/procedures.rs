//! The procedures a lifecycle file's `call` names (`lifecycle::Procedure`): JSON patches that
//! follow the object's shape as a program, each after the virt-api function it is named for
//! (pkg/virt-api/rest/lifecycle.go). Pure: from the object written to and the rendered `with`,
//! the patch's operations, which `test` what they were computed from (a patch over a state that
//! moved on fails, and the action answers it as a conflict).

use lifecycle::Procedure;
use serde_json::{json, Value};

/// `procedure`'s JSON patch of `obj` for the arguments `with`.
pub fn call(procedure: Procedure, obj: &Value, with: &Value) -> Value {
    match procedure {
        Procedure::ChangeRequest => change_request(obj, &with["requests"]),
        Procedure::RunningPatch => running_patch(obj, with["running"].as_bool() == Some(true)),
    }
}

/// `getChangeRequestJson`: `requests` become the object's `status.stateChangeRequests`. An
/// object with no status gets one; otherwise the list read is tested and added to (none yet) or
/// replaced (virt-api's checks let only a lone Stop request replace a pending one). A start
/// failure is dropped: the request starts over.
fn change_request(obj: &Value, requests: &Value) -> Value {
    let status = obj.get("status").filter(|s| s.as_object().is_some_and(|m| !m.is_empty()));
    let Some(status) = status else {
        return json!([{"op": "add", "path": "/status", "value": {"stateChangeRequests": requests}}]);
    };
    let mut ops = match status.get("stateChangeRequests") {
        // A missing list reads as null, which kube's JSON patch cannot test.
        None => {
            vec![json!({"op": "add", "path": "/status/stateChangeRequests", "value": requests})]
        }
        Some(pending) => {
            let op = match pending.as_array().is_some_and(|l| !l.is_empty()) {
                true => "replace",
                false => "add",
            };
            vec![
                json!({"op": "test", "path": "/status/stateChangeRequests", "value": pending}),
                json!({"op": op, "path": "/status/stateChangeRequests", "value": requests}),
            ]
        }
    };
    if status.get("startFailure").is_some() {
        ops.push(json!({"op": "remove", "path": "/status/startFailure"}));
    }
    Value::Array(ops)
}

/// `getRunningPatch`: `spec.runStrategy` to Always or Halted where the object has one, else the
/// deprecated `spec.running` to `running`, each over the value read (a VM with neither gets
/// `spec.running`, which virt-api's `replace` could not write).
fn running_patch(obj: &Value, running: bool) -> Value {
    let spec = &obj["spec"];
    if let Some(strategy) = spec.get("runStrategy") {
        let to = if running { "Always" } else { "Halted" };
        return json!([
            {"op": "test", "path": "/spec/runStrategy", "value": strategy},
            {"op": "replace", "path": "/spec/runStrategy", "value": to},
        ]);
    }
    match spec.get("running") {
        Some(was) => json!([
            {"op": "test", "path": "/spec/running", "value": was},
            {"op": "replace", "path": "/spec/running", "value": running},
        ]),
        None => json!([{"op": "add", "path": "/spec/running", "value": running}]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patched(obj: &Value, ops: &Value) -> Result<Value, String> {
        let patch: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
        let mut out = obj.clone();
        json_patch::patch(&mut out, &patch).map_err(|e| e.to_string())?;
        Ok(out)
    }

    #[test]
    fn a_change_request_is_queued_over_the_status_read() {
        let start = json!([{"action": "Start"}]);
        let with = json!({"requests": start});
        let call = |vm: &Value| call(Procedure::ChangeRequest, vm, &with);
        // No status, or an empty one: a new status.
        for vm in [json!({"spec": {}}), json!({"status": {}})] {
            let ops = call(&vm);
            assert_eq!(ops[0]["path"], "/status");
            assert_eq!(
                patched(&vm, &ops).unwrap()["status"],
                json!({"stateChangeRequests": start})
            );
        }
        // A status without requests: added; a start failure dropped.
        let failed =
            json!({"status": {"printableStatus": "Stopped", "startFailure": {"retries": 2}}});
        let out = patched(&failed, &call(&failed)).unwrap();
        assert_eq!(
            out["status"],
            json!({"printableStatus": "Stopped", "stateChangeRequests": start})
        );
        // Pending requests: replaced, only while they are still those read.
        let stop = json!({"action": "Stop", "uid": "u1"});
        let pending = json!({"status": {"stateChangeRequests": [stop]}});
        let ops = call(&pending);
        assert_eq!(patched(&pending, &ops).unwrap()["status"]["stateChangeRequests"], start);
        let moved = json!({"status": {"stateChangeRequests": [{"action": "Stop", "uid": "u2"}]}});
        assert!(patched(&moved, &ops).is_err());
        // An empty list read is tested, then added to.
        let empty = json!({"status": {"stateChangeRequests": []}});
        assert_eq!(call(&empty)[1]["op"], "add");
        assert_eq!(patched(&empty, &call(&empty)).unwrap()["status"]["stateChangeRequests"], start);
    }

    #[test]
    fn running_sets_the_run_strategy_or_the_deprecated_field_over_the_value_read() {
        let on = json!({"running": true});
        let off = json!({"running": false});
        let call = |vm: &Value, with: &Value| call(Procedure::RunningPatch, vm, with);
        let manual = json!({"spec": {"runStrategy": "Manual"}});
        assert_eq!(patched(&manual, &call(&manual, &on)).unwrap()["spec"]["runStrategy"], "Always");
        assert_eq!(
            patched(&manual, &call(&manual, &off)).unwrap()["spec"]["runStrategy"],
            "Halted"
        );
        let moved = json!({"spec": {"runStrategy": "Always"}});
        assert!(patched(&moved, &call(&manual, &off)).is_err());
        let old = json!({"spec": {"running": false}});
        assert_eq!(patched(&old, &call(&old, &on)).unwrap()["spec"], json!({"running": true}));
        assert!(patched(&json!({"spec": {"running": true}}), &call(&old, &on)).is_err());
        let neither = json!({"spec": {"template": {}}});
        let out = patched(&neither, &call(&neither, &off)).unwrap();
        assert_eq!(out["spec"], json!({"template": {}, "running": false}));
    }
}
