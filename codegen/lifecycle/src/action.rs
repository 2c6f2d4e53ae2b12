//! Actions: KubeVirt's `subresources.kubevirt.io` calls on an object (`start`, `pause`,
//! `guestosinfo`...) as data, under a kind's `actions`. An action reads the object, its related
//! objects and the request body (`$body`), answers the first of its `checks` whose predicate
//! holds, and otherwise performs its `steps` (the lifecycle file's one write vocabulary,
//! [`Step`](crate::Step)), or, for a read, renders its `answer`.
//!
//! The error a check gives is shaped by its code as virt-api's constructors shape it: 409
//! `Operation cannot be fulfilled on <singular>.<group> "<name>": <message>`, 403 `… is
//! forbidden: <message>`, 500 `Internal error occurred: <message>`, others the message alone;
//! `plain: true` answers it as text (the guest-agent reads).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::eval::{Pred, Template};
use crate::{Let, Step};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Action {
    /// A PUT action's success code (200 or 202); a read answers 200.
    #[serde(default)]
    pub code: Option<u16>,
    /// The body's fields and their JSON types; another field is ignored, another type refused
    /// (Go's `json.Unmarshal` into the options struct).
    #[serde(default)]
    pub body: BTreeMap<String, FieldType>,
    /// The Go options type the body decodes into (`StartOptions`), named by decoding errors.
    #[serde(default)]
    pub body_type: Option<String>,
    /// What `dryRun: ["All"]` in the body does.
    #[serde(default)]
    pub dry_run: DryRun,
    /// Values the checks and steps read as `$name`, evaluated in order after `$body` and the
    /// related objects.
    #[serde(default, rename = "let")]
    pub lets: Vec<Let>,
    /// In order: the first that holds answers.
    #[serde(default)]
    pub checks: Vec<Check>,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// A read's answer (a template).
    #[serde(default)]
    pub answer: Option<Template>,
    /// A stream (`console`): once the checks pass, the websocket upgrade to the simulated
    /// guest's stream of that name (KV pkg/virt-api/rest/streamer.go: checks, then upgrade).
    #[serde(default)]
    pub stream: Option<String>,
    /// The relation whose object streams, when not the action's own (a VM's port-forward
    /// reaches its VMI's guest).
    #[serde(default)]
    pub stream_of: Option<String>,
    /// What the simulated guest does once the steps are written (`reboot`: softreboot, reset).
    #[serde(default)]
    pub guest: Option<String>,
    /// The field manager of the steps' writes, when not virt-api's (the guest's own power
    /// events are virt-handler's, which sees the domain stop).
    #[serde(default)]
    pub manager: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FieldType {
    Bool,
    Int,
    String,
    Object,
    Strings,
}

impl FieldType {
    /// Whether `v` decodes as this type (null always does).
    pub fn admits(self, v: &Value) -> bool {
        match self {
            _ if v.is_null() => true,
            FieldType::Bool => v.is_boolean(),
            FieldType::Int => v.is_i64() || v.is_u64(),
            FieldType::String => v.is_string(),
            FieldType::Object => v.is_object(),
            FieldType::Strings => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        }
    }

    /// Go's name of the type, for the unmarshal error.
    pub fn go_name(self) -> &'static str {
        match self {
            FieldType::Bool => "bool",
            FieldType::Int => "int64",
            FieldType::String => "string",
            FieldType::Object => "struct",
            FieldType::Strings => "[]string",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DryRun {
    /// The writes are dry runs (start, stop, restart, migrate).
    #[default]
    Write,
    /// The action stops once its checks pass (pause, unpause).
    Validate,
    /// Not looked at (freeze, softreboot, reset).
    Ignore,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    pub when: Pred,
    pub code: u16,
    /// A template string (a 404 says `<singular>.<group> "<name>" not found` itself).
    #[serde(default = "Template::empty")]
    pub message: Template,
    /// The related object the refusal names (its kind, the same name), not the object.
    #[serde(default)]
    pub about: Option<String>,
    /// Answered as `text/plain` rather than a Status.
    #[serde(default)]
    pub plain: bool,
}

/// The request body decoded as the action's options: an empty body is `{}`; a body that is
/// not an object, or a declared field of another type, is refused with Go's unmarshal error.
pub fn decode_body(action: &Action, bytes: &[u8]) -> Result<Value, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    let v: Value = serde_yaml::from_slice(bytes).map_err(|e| e.to_string())?;
    let Value::Object(fields) = &v else {
        let what = match v {
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            _ => "null",
        };
        if v.is_null() {
            return Ok(Value::Object(Default::default()));
        }
        let ty = action.body_type.as_deref().unwrap_or("struct");
        let ty = if ty == "struct" { ty.to_string() } else { format!("v1.{ty}") };
        return Err(format!("json: cannot unmarshal {what} into Go value of type {ty}"));
    };
    for (name, ty) in &action.body {
        if let Some(value) = fields.get(name) {
            if !ty.admits(value) {
                let what = match value {
                    Value::Array(_) => "array",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "bool",
                    Value::Object(_) => "object",
                    Value::Null => "null",
                };
                let owner = action.body_type.as_deref().unwrap_or("");
                return Err(format!(
                    "json: cannot unmarshal {what} into Go struct field {owner}.{name} of type {}",
                    ty.go_name()
                ));
            }
        }
    }
    Ok(v)
}

/// Whether the body asks for a dry run (`dryRun: ["All"]`).
pub fn dry_run(body: &Value) -> bool {
    body.get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some("All")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action() -> Action {
        let yaml = "code: 202\nbodyType: StartOptions\nbody: {paused: bool, dryRun: strings, gracePeriod: int}\n\
                    checks: [{when: {deleting: true}, code: 409, message: gone}]\n\
                    steps:\n  - {when: {deleting: false}, patch: {merge: {spec: {a: 1}}}}\n  \
                    - jsonPatch: {subresource: status, ops: [{op: test, path: /status, value: null}]}\n";
        serde_json::from_value(serde_yaml::from_str(yaml).unwrap()).unwrap()
    }

    #[test]
    fn an_action_parses() {
        let a = action();
        assert_eq!(a.code, Some(202));
        assert_eq!(a.steps.len(), 2);
        assert!(a.steps[0].when.is_some());
        assert_eq!(a.steps[1].write.verb(), "jsonPatch");
        assert_eq!(a.steps[1].write.subresource(), Some("status"));
        assert_eq!(a.dry_run, DryRun::Write);
    }

    #[test]
    fn bodies_decode_as_go_does() {
        let a = action();
        assert_eq!(decode_body(&a, b"").unwrap(), json!({}));
        assert_eq!(decode_body(&a, b"{\"paused\": true}").unwrap(), json!({"paused": true}));
        assert_eq!(decode_body(&a, b"paused: true\n").unwrap(), json!({"paused": true}));
        assert_eq!(
            decode_body(&a, b"{\"paused\": \"yes\"}").unwrap_err(),
            "json: cannot unmarshal string into Go struct field StartOptions.paused of type bool"
        );
        assert_eq!(
            decode_body(&a, b"[1]").unwrap_err(),
            "json: cannot unmarshal array into Go value of type v1.StartOptions"
        );
        assert!(decode_body(&a, b"{").is_err());
        // Unknown fields are ignored, as encoding/json does.
        assert!(decode_body(&a, b"{\"other\": 1}").is_ok());
        assert!(dry_run(&json!({"dryRun": ["All"]})));
        assert!(!dry_run(&json!({"dryRun": []})));
    }
}
