//! A Fault's spec (the kind whose `kubeRole` is `fault`, the server's own testing kind) as pure
//! functions: read from a stored object, validated on every write (422 with field causes, as
//! kube's strategies answer, where the schema cannot say it), matched against a request, and
//! the `metav1.Status` its `status` action answers, as apimachinery writes that error
//! (K8S staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go `NewGenericServerResponse`).
//! Which requests fire, and the state that says so, are `http::faults`'.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::object::duration;
use crate::object::error::Cause;
use crate::object::meta::parse_rfc3339;
use crate::object::selector::label_selector_matches;

/// The kube verbs a fault may name (K8S staging/src/k8s.io/apiserver/pkg/endpoints/request/
/// requestinfo.go: the verbs `RequestInfoFactory` gives resource requests).
pub const VERBS: &[&str] =
    &["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];

/// The ways a `watch` action cuts a watch that this server serves: `expired`, the watch request
/// answered 410; `end`, the stream closed cleanly after `afterEvents` events; `errorEvent`, an
/// ERROR event carrying a 410 Status after them, then the end; `goaway`, the connection ended
/// after them with no end to the response (what a client sees of an HTTP/2 GOAWAY on a
/// server that, like this one, serves HTTP/1.1 only).
pub const WATCH_CUTS: &[&str] = &["end", "expired", "errorEvent", "goaway"];

/// kube's known Status reasons (errors.go `knownReasons`, metav1 types.go `StatusReason*`).
pub const REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// kube's Status cause types (metav1 types.go `CauseType*`).
pub const CAUSE_TYPES: &[&str] = &[
    "FieldValueNotFound",
    "FieldValueRequired",
    "FieldValueDuplicate",
    "FieldValueInvalid",
    "FieldValueNotSupported",
    "FieldValueForbidden",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "InternalError",
    "FieldValueTypeInvalid",
    "UnexpectedServerResponse",
    "FieldManagerConflict",
    "ResourceVersionTooLarge",
];

/// A Fault's `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default, rename = "match")]
    pub matches: Match,
    #[serde(default)]
    pub after: u64,
    pub times: Option<u64>,
    pub probability: Option<f64>,
    pub not_before: Option<String>,
    pub not_after: Option<String>,
    #[serde(default)]
    pub action: Action,
}

/// `spec.match`: every listed field must match; an absent one matches anything.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    pub verbs: Option<Vec<String>>,
    pub groups: Option<Vec<String>>,
    pub resources: Option<Vec<String>>,
    pub subresources: Option<Vec<String>>,
    pub namespaces: Option<Vec<String>>,
    pub names: Option<Vec<String>>,
    pub label_selector: Option<Value>,
    pub users: Option<Vec<String>>,
    pub user_agents: Option<Vec<String>>,
}

/// `spec.action`: exactly one of its fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub status: Option<StatusAction>,
    pub delay: Option<Delay>,
    pub drop: Option<Value>,
    pub watch: Option<WatchCut>,
    pub stale: Option<Stale>,
}

/// `stale`: gets and lists answer from this many revisions back (at the oldest, the compacted
/// revision), as a lagging watch cache answers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stale {
    pub revisions_behind: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusAction {
    pub code: i64,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub retry_after_seconds: i64,
    #[serde(default)]
    pub causes: Vec<StatusCause>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StatusCause {
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub field: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Delay {
    pub duration: String,
    pub jitter: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchCut {
    pub cut: String,
    #[serde(default)]
    pub after_events: u64,
}

/// What a request is, as a fault matches it.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub user: &'a str,
    pub user_agent: &'a str,
}

impl Spec {
    /// The spec of a stored Fault (validated when written; `None` if it does not decode).
    pub fn of(obj: &Value) -> Option<Spec> {
        serde_json::from_value(obj.get("spec")?.clone()).ok()
    }

    /// Whether the action can act on a request of `verb`: a watch cut on watches only, a stale
    /// read on gets and lists only.
    pub fn acts_on(&self, verb: &str) -> bool {
        let a = &self.action;
        (a.watch.is_none() || verb == "watch")
            && (a.stale.is_none() || matches!(verb, "get" | "list"))
    }

    /// Whether the request's attributes match (the label selector is `selects`').
    pub fn matches(&self, req: &Request<'_>) -> bool {
        let m = &self.matches;
        let is = |list: &Option<Vec<String>>, v: &str| {
            list.as_ref().is_none_or(|l| l.iter().any(|x| x == v))
        };
        is(&m.verbs, req.verb)
            && is(&m.groups, req.group)
            && is(&m.resources, req.resource)
            && is(&m.subresources, req.subresource)
            && is(&m.namespaces, req.namespace)
            && is(&m.names, req.name)
            && is(&m.users, req.user)
            && m.user_agents
                .as_ref()
                .is_none_or(|l| l.iter().any(|p| req.user_agent.starts_with(p.as_str())))
    }

    /// Whether the object's labels pass `match.labelSelector` (an absent selector passes all,
    /// an absent object none).
    pub fn selects(&self, labels: Option<&Map<String, Value>>) -> bool {
        match (&self.matches.label_selector, labels) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(sel), Some(labels)) => label_selector_matches(sel, labels),
        }
    }

    /// Whether `now` (seconds since the epoch) is inside `notBefore`..`notAfter`.
    pub fn in_window(&self, now: i64) -> bool {
        let at = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339);
        at(&self.not_before).is_none_or(|t| now >= t)
            && at(&self.not_after).is_none_or(|t| now <= t)
    }
}

/// The reason and message kube's client gives a status code without a Status body
/// (errors.go `NewGenericServerResponse`): a fault without a reason answers with these.
pub fn generic_reason(code: u16, verb: &str) -> (&'static str, String) {
    let (reason, message) = match code {
        409 if verb == "create" => ("AlreadyExists", "the server reported a conflict"),
        409 => ("Conflict", "the server reported a conflict"),
        404 => ("NotFound", "the server could not find the requested resource"),
        400 => ("BadRequest", "the server rejected our request for an unknown reason"),
        401 => ("Unauthorized", "the server has asked for the client to provide credentials"),
        403 => ("Forbidden", ""),
        406 => (
            "NotAcceptable",
            "the server was unable to respond with a content type that the client supports",
        ),
        415 => ("UnsupportedMediaType", ""),
        405 => ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
        422 => ("Invalid", "the server rejected our request due to an error in our request"),
        503 => ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504 => ("Timeout", "the server was unable to return a response in the time allotted, but may still be processing the request"),
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        500.. => ("InternalError", "an error on the server (\"\") has prevented the request from succeeding"),
        _ => ("", ""),
    };
    let message = if message.is_empty() && reason.is_empty() {
        format!(
            "the server responded with the status code {code} but did not return more information"
        )
    } else {
        message.to_string()
    };
    (reason, message)
}

/// The causes a Fault's spec breaks beyond its schema: exactly one action, codes kube's Status
/// carries (an error code, 400..599), known reasons and cause types, verbs, watch cuts,
/// durations, a probability in 0..1, times as RFC 3339.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(spec_v) = obj.get("spec") else {
        return vec![Cause::required("spec", "")];
    };
    let spec: Spec = match serde_json::from_value(spec_v.clone()) {
        Ok(s) => s,
        Err(e) => return vec![Cause::invalid("spec", "", &e.to_string())],
    };
    let a = &spec.action;
    let set: Vec<&str> = [
        ("status", a.status.is_some()),
        ("delay", a.delay.is_some()),
        ("drop", a.drop.is_some()),
        ("watch", a.watch.is_some()),
        ("stale", a.stale.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(n, _)| *n)
    .collect();
    match set.len() {
        0 => causes.push(Cause::required(
            "spec.action",
            "exactly one of status, delay, drop, watch, stale",
        )),
        1 => {}
        _ => causes.push(Cause::forbidden(
            "spec.action",
            &format!("exactly one action may be set, not {}", set.join(", ")),
        )),
    }
    if let Some(s) = &a.status {
        if !(400..=599).contains(&s.code) {
            causes.push(Cause::invalid(
                "spec.action.status.code",
                &s.code.to_string(),
                "must be an error code between 400 and 599",
            ));
        }
        if !s.reason.is_empty() && !REASONS.contains(&s.reason.as_str()) {
            causes.push(Cause::not_supported("spec.action.status.reason", &s.reason, REASONS));
        }
        if s.retry_after_seconds < 0 {
            causes.push(Cause::invalid(
                "spec.action.status.retryAfterSeconds",
                &s.retry_after_seconds.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        for (i, c) in s.causes.iter().enumerate() {
            if !c.reason.is_empty() && !CAUSE_TYPES.contains(&c.reason.as_str()) {
                let field = format!("spec.action.status.causes[{i}].reason");
                causes.push(Cause::not_supported(&field, &c.reason, CAUSE_TYPES));
            }
        }
    }
    if let Some(d) = &a.delay {
        for (field, v) in [("duration", Some(&d.duration)), ("jitter", d.jitter.as_ref())] {
            if let Some(Err(e)) = v.map(|v| duration::parse(v)) {
                let v = v.map_or("", |v| v.as_str());
                causes.push(Cause::invalid(&format!("spec.action.delay.{field}"), v, &e));
            }
        }
    }
    if let Some(st) = a.stale.as_ref().filter(|st| st.revisions_behind < 1) {
        let field = "spec.action.stale.revisionsBehind";
        causes.push(Cause::invalid(
            field,
            &st.revisions_behind.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(w) = &a.watch {
        if !WATCH_CUTS.contains(&w.cut.as_str()) {
            causes.push(Cause::not_supported("spec.action.watch.cut", &w.cut, WATCH_CUTS));
        }
    }
    if let Some(verbs) = &spec.matches.verbs {
        for v in verbs.iter().filter(|v| !VERBS.contains(&v.as_str())) {
            causes.push(Cause::not_supported("spec.match.verbs", v, VERBS));
        }
    }
    if let Some(p) = spec.probability {
        if !(0.0..=1.0).contains(&p) {
            let detail = "must be between 0 and 1";
            causes.push(Cause::invalid("spec.probability", &p.to_string(), detail));
        }
    }
    for (field, v) in [("notBefore", &spec.not_before), ("notAfter", &spec.not_after)] {
        if let Some(t) = v.as_deref().filter(|t| parse_rfc3339(t).is_none()) {
            causes.push(Cause::invalid(&format!("spec.{field}"), t, "must be an RFC 3339 time"));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fault(spec: Value) -> Value {
        json!({"metadata": {"name": "f"}, "spec": spec})
    }

    #[test]
    fn exactly_one_action() {
        let none = validate(&fault(json!({"action": {}})));
        assert_eq!(none[0].field, "spec.action");
        assert_eq!(none[0].reason, "FieldValueRequired");
        let two = validate(&fault(json!({"action": {"drop": {}, "status": {"code": 500}}})));
        assert_eq!(two[0].reason, "FieldValueForbidden");
        assert!(validate(&fault(json!({"action": {"drop": {}}}))).is_empty());
    }

    #[test]
    fn status_codes_reasons_and_causes_are_kubes() {
        let bad = validate(&fault(json!({"action": {"status": {
            "code": 200, "reason": "Nope", "causes": [{"reason": "Odd"}]}}})));
        let fields: Vec<&str> = bad.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.action.status.code",
                "spec.action.status.reason",
                "spec.action.status.causes[0].reason"
            ]
        );
        let ok = json!({"action": {"status": {"code": 429, "reason": "TooManyRequests"}}});
        assert!(validate(&fault(ok)).is_empty());
    }

    #[test]
    fn verbs_cuts_durations_probability_and_times() {
        let bad = validate(&fault(json!({
            "match": {"verbs": ["fetch"]},
            "probability": 1.5,
            "notAfter": "tomorrow",
            "action": {"delay": {"duration": "soon"}}})));
        assert_eq!(bad.len(), 4, "{bad:?}");
        let bad = validate(&fault(json!({"action": {"watch": {"cut": "snip"}}})));
        assert_eq!(bad[0].field, "spec.action.watch.cut");
    }

    #[test]
    fn an_absent_field_matches_anything() {
        let spec = Spec::of(&fault(json!({
            "match": {"verbs": ["create"], "userAgents": ["kubectl"]},
            "action": {"drop": {}}})))
        .unwrap();
        let req = Request { verb: "create", user_agent: "kubectl/v1.32.0", ..Request::default() };
        assert!(spec.matches(&req));
        assert!(!spec.matches(&Request { verb: "get", ..req.clone() }));
        assert!(!spec.matches(&Request { user_agent: "python", ..req }));
    }

    #[test]
    fn generic_reasons_follow_apimachinery() {
        assert_eq!(generic_reason(409, "create").0, "AlreadyExists");
        assert_eq!(generic_reason(409, "update").0, "Conflict");
        assert_eq!(generic_reason(502, "get").0, "InternalError");
        assert_eq!(generic_reason(418, "get").0, "");
    }
}
