//! kube's validation of core/v1 Events, for the kind the document marks as the events
//! (`x-virt-resource.events`): `legacyValidateEvent` (`pkg/apis/core/validation/events.go`),
//! which is all `ValidateEventCreate` and `ValidateEventUpdate` apply to a request in core/v1
//! ("No further validation for backwards compatibility"). An Event is about an object in its
//! own namespace; one without `eventTime` (client-go's recorder) about a cluster-scoped object
//! lives in `default` (or nowhere); one with `eventTime` (the events.k8s.io shape) names its
//! reporting controller, instance, action and reason, within kube's lengths.

use serde_json::Value;

use crate::object::error::Cause;
use crate::object::meta::{qualified_name_errors, quote};
use crate::object::At;

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit`, `ReasonLengthLimit`, `NoteLengthLimit`.
const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;
/// In core/v1 kube names `reportingController` by its JSON name.
const REPORTING_CONTROLLER: &str = "reportingComponent";

/// The causes `legacyValidateEvent` finds in `event` (its namespace already set).
pub fn validate(event: &Value) -> Vec<Cause> {
    let text = |path: &str| event.at(path).and_then(Value::as_str).unwrap_or("");
    let namespace = text("/metadata/namespace");
    let involved = text("/involvedObject/namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &quote(involved),
            "does not match event.namespace",
        )
    };
    let mut causes = Vec::new();
    let has_event_time = !text("/eventTime").is_empty();
    if !has_event_time {
        if involved.is_empty() {
            // Cluster-scoped objects' events live in no namespace, or `default` for old clients.
            if !namespace.is_empty() && namespace != "default" {
                causes.push(mismatch());
            }
        } else if namespace != involved {
            causes.push(mismatch());
        }
        return causes;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        causes.push(mismatch());
    }
    let controller = text("/reportingComponent");
    if controller.is_empty() {
        causes.push(Cause::required(REPORTING_CONTROLLER, ""));
    }
    // ValidateQualifiedName reports an empty name too, twice (empty, and not its regex).
    for e in qualified_name_errors(controller) {
        causes.push(Cause::invalid(REPORTING_CONTROLLER, &quote(controller), &e));
    }
    let bounded = |causes: &mut Vec<Cause>, field: &str, max: usize, required: bool| {
        let value = text(&format!("/{field}"));
        if required && value.is_empty() {
            causes.push(Cause::required(field, ""));
        }
        // Go's len: bytes.
        if value.len() > max {
            causes.push(Cause::invalid(
                field,
                "\"\"",
                &format!("can have at most {max} characters"),
            ));
        }
    };
    bounded(&mut causes, "reportingInstance", REPORTING_INSTANCE_MAX, true);
    bounded(&mut causes, "action", ACTION_MAX, true);
    bounded(&mut causes, "reason", REASON_MAX, true);
    bounded(&mut causes, "message", NOTE_MAX, false);
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(event: Value) -> Vec<String> {
        validate(&event).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn a_recorded_event_is_about_an_object_of_its_namespace() {
        let about = |ns: &str, involved: &str| json!({"metadata": {"namespace": ns}, "involvedObject": {"namespace": involved}});
        assert!(messages(about("a", "a")).is_empty());
        assert_eq!(
            messages(about("a", "b")),
            ["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
        );
        assert!(messages(about("default", "")).is_empty(), "cluster-scoped, in default");
        assert!(messages(json!({"metadata": {}, "involvedObject": {}})).is_empty());
        assert_eq!(
            messages(about("a", "")),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
    }

    #[test]
    fn an_event_with_event_time_names_its_reporter() {
        let base = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "virt-controller",
            "reportingInstance": "node-1", "action": "Started", "reason": "Started"});
        assert!(messages(base.clone()).is_empty());
        let mut bare = base.clone();
        for f in ["reportingComponent", "reportingInstance", "action", "reason"] {
            bare.as_object_mut().unwrap().remove(f);
        }
        assert_eq!(
            messages(bare),
            [
                "reportingComponent: Required value",
                "reportingComponent: Invalid value: \"\": name part must be non-empty",
                &format!(
                    "reportingComponent: Invalid value: \"\": {}",
                    crate::object::meta::qualified_name_errors("-")[0]
                ),
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
        let mut long = base.clone();
        long["reason"] = json!("r".repeat(129));
        long["message"] = json!("m".repeat(1025));
        long["reportingComponent"] = json!("not a name");
        let got = messages(long);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with("reportingComponent: Invalid value: \"not a name\""), "{got:?}");
        assert_eq!(got[1], "reason: Invalid value: \"\": can have at most 128 characters");
        assert_eq!(got[2], "message: Invalid value: \"\": can have at most 1024 characters");
        let mut cluster = base;
        cluster["involvedObject"] = json!({});
        assert_eq!(messages(cluster.clone()).len(), 1);
        cluster["metadata"]["namespace"] = json!("kube-system");
        assert!(messages(cluster).is_empty());
    }
}
