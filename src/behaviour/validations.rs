//! The rules a lifecycle file's `validations` name (`lifecycle::Rule`): virt-api's admitters
//! whose checks are programs over the spec's shape, each after the KubeVirt function it is
//! named for (pkg/virt-api/webhooks/validating-webhook/admitters/). Pure: from the part of the
//! object the rule reads and its field path, the causes (none admits).

use lifecycle::Rule;
use serde_json::Value;

use crate::object::error::Cause;

/// `rule`'s causes against `spec` (a VMI spec), found at the dotted field path `at`.
pub fn causes(rule: Rule, spec: &Value, at: &str) -> Vec<Cause> {
    match rule {
        Rule::AccessCredentials => access_credentials(spec, &format!("{at}.accessCredentials")),
    }
}

/// A `metav1.CauseTypeFieldValueInvalid` cause.
fn invalid(message: String, field: String) -> Cause {
    Cause { reason: "FieldValueInvalid", message, field }
}

/// vmi-create-admitter.go `validateAccessCredentials`: each credential has exactly one type;
/// an `sshPublicKey` exactly one source and one propagation method, `noCloud` and
/// `configDrive` a cloud-init volume of theirs, `qemuGuestAgent` at least one user; a
/// `userPassword` exactly one source and the agent's propagation. Causes in its order.
fn access_credentials(spec: &Value, field: &str) -> Vec<Cause> {
    let volumes = spec["volumes"].as_array().map(Vec::as_slice).unwrap_or_default();
    let has = |source: &str| volumes.iter().any(|v| v.get(source).is_some_and(|s| !s.is_null()));
    let (no_cloud, config_drive) = (has("cloudInitNoCloud"), has("cloudInitConfigDrive"));
    let set = |v: &Value, key: &str| v.get(key).is_some_and(|s| !s.is_null());
    let mut out = Vec::new();
    let creds = spec["accessCredentials"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, cred) in creds.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let mut count = 0;
        if set(cred, "sshPublicKey") {
            count += 1;
            let key = &cred["sshPublicKey"];
            let method = &key["propagationMethod"];
            let mut methods = 0;
            let method_field = format!("{at}.sshPublicKey.propagationMethod");
            if set(method, "noCloud") {
                methods += 1;
                if !no_cloud {
                    out.push(invalid(format!("{at} requires a noCloud volume to exist when the noCloud propagationMethod is in use."), method_field.clone()));
                }
            }
            if set(method, "configDrive") {
                methods += 1;
                if !config_drive {
                    out.push(invalid(format!("{at} requires a configDrive volume to exist when the configDrive propagationMethod is in use."), method_field.clone()));
                }
            }
            if set(method, "qemuGuestAgent") {
                let users = method["qemuGuestAgent"]["users"].as_array().map_or(0, Vec::len);
                if users == 0 {
                    out.push(invalid(
                        format!("{at} requires at least one user to be present in the users list"),
                        format!("{method_field}.qemuGuestAgent.users"),
                    ));
                }
                methods += 1;
            }
            out.extend(exactly_one(&at, "sshPublicKey", set(&key["source"], "secret"), methods));
        }
        if set(cred, "userPassword") {
            count += 1;
            let pw = &cred["userPassword"];
            let methods = usize::from(set(&pw["propagationMethod"], "qemuGuestAgent"));
            out.extend(exactly_one(&at, "userPassword", set(&pw["source"], "secret"), methods));
        }
        if count != 1 {
            let message = format!("{at} must have exactly one access credential type set");
            out.push(invalid(message, at.clone()));
        }
    }
    out
}

/// The source and propagation-method counts' causes of credential type `ty` at `at`.
fn exactly_one(at: &str, ty: &str, source: bool, methods: usize) -> Vec<Cause> {
    let mut out = Vec::new();
    if !source {
        let message = format!("{at} must have exactly one source set");
        out.push(invalid(message, format!("{at}.{ty}.source")));
    }
    if methods != 1 {
        let message = format!("{at} must have exactly one propagationMethod set");
        out.push(invalid(message, format!("{at}.{ty}.propagationMethod")));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(spec: Value) -> Vec<(String, String)> {
        let causes = causes(Rule::AccessCredentials, &spec, "spec.template.spec");
        causes.into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn access_credentials_are_refused_as_the_vmi_admitter_refuses_them() {
        let secret = json!({"secret": {"secretName": "s"}});
        let ok = json!({"volumes": [{"name": "c", "cloudInitNoCloud": {"userData": "x"}}],
          "accessCredentials": [
            {"sshPublicKey": {"source": secret, "propagationMethod": {"noCloud": {}}}},
            {"sshPublicKey": {"source": secret, "propagationMethod": {"qemuGuestAgent": {"users": ["u"]}}}},
            {"userPassword": {"source": secret, "propagationMethod": {"qemuGuestAgent": {}}}}]});
        assert_eq!(messages(ok), vec![]);
        let at = "spec.template.spec.accessCredentials";
        let bad = json!({"accessCredentials": [
            {"sshPublicKey": {"source": {}, "propagationMethod": {"configDrive": {}, "qemuGuestAgent": {}}}},
            {},
            {"userPassword": {"source": secret, "propagationMethod": {}}}]});
        assert_eq!(messages(bad), vec![
            (format!("{at}[0].sshPublicKey.propagationMethod"), format!("{at}[0] requires a configDrive volume to exist when the configDrive propagationMethod is in use.")),
            (format!("{at}[0].sshPublicKey.propagationMethod.qemuGuestAgent.users"), format!("{at}[0] requires at least one user to be present in the users list")),
            (format!("{at}[0].sshPublicKey.source"), format!("{at}[0] must have exactly one source set")),
            (format!("{at}[0].sshPublicKey.propagationMethod"), format!("{at}[0] must have exactly one propagationMethod set")),
            (format!("{at}[1]"), format!("{at}[1] must have exactly one access credential type set")),
            (format!("{at}[2].userPassword.propagationMethod"), format!("{at}[2] must have exactly one propagationMethod set")),
        ]);
    }
}
