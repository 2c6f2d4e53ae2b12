//! Authorization: kube-apiserver's ABAC policy file (one JSON policy per line), judged on the
//! request's attributes exactly as kube's `abac` authorizer does.

use serde::Deserialize;

use crate::http::authn::User;
use crate::http::request_info::RequestInfo;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec {
    #[serde(default)]
    user: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    readonly: bool,
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    non_resource_path: String,
}

#[derive(Debug, Deserialize)]
struct Policy {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    kind: String,
    spec: PolicySpec,
}

/// The loaded policies.
#[derive(Debug, Default)]
pub struct Abac {
    policies: Vec<PolicySpec>,
}

impl Abac {
    pub fn load(path: &str) -> Result<Abac, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        Abac::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    pub fn parse(text: &str) -> Result<Abac, String> {
        let mut policies = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let p: Policy =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            if p.kind != "Policy" || !p.api_version.starts_with("abac.authorization.kubernetes.io/")
            {
                return Err(format!(
                    "line {}: want kind Policy of abac.authorization.kubernetes.io/v1beta1",
                    i + 1
                ));
            }
            policies.push(p.spec);
        }
        Ok(Abac { policies })
    }

    /// Whether any policy allows the request.
    pub fn allows(&self, user: &User, info: &RequestInfo) -> bool {
        self.policies.iter().any(|p| {
            subject_matches(p, user)
                && (info.is_read_only() || !p.readonly)
                && (resource_matches(p, info) || non_resource_matches(p, info))
        })
    }
}

fn subject_matches(p: &PolicySpec, user: &User) -> bool {
    let mut matched = false;
    if !p.user.is_empty() {
        if p.user != "*" && p.user != user.name {
            return false;
        }
        matched = true;
    }
    if !p.group.is_empty() {
        if p.group == "*" || user.groups.contains(&p.group) {
            matched = true;
        } else {
            return false;
        }
    }
    matched
}

fn resource_matches(p: &PolicySpec, info: &RequestInfo) -> bool {
    info.is_resource
        && (p.namespace == "*" || p.namespace == info.namespace)
        && (p.resource == "*" || p.resource == info.resource)
        && (p.api_group == "*" || p.api_group == info.api_group)
}

fn non_resource_matches(p: &PolicySpec, info: &RequestInfo) -> bool {
    if info.is_resource || p.non_resource_path.is_empty() {
        return false;
    }
    p.non_resource_path == "*"
        || p.non_resource_path == info.path
        || (p.non_resource_path.ends_with('*')
            && info.path.starts_with(p.non_resource_path.trim_end_matches('*')))
}

/// kube's Forbidden message for a denied request (AS responsewriters/errors.go).
pub fn forbidden_message(user: &User, info: &RequestInfo) -> String {
    if !info.is_resource {
        return format!(
            "forbidden: User {:?} cannot {} path {:?}",
            user.name, info.verb, info.path
        );
    }
    let gr = if info.api_group.is_empty() {
        info.resource.clone()
    } else {
        format!("{}.{}", info.resource, info.api_group)
    };
    let object = if info.name.is_empty() { gr } else { format!("{gr} {:?}", info.name) };
    let resource = if info.subresource.is_empty() {
        info.resource.clone()
    } else {
        format!("{}/{}", info.resource, info.subresource)
    };
    let scope = if info.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", info.namespace)
    };
    format!(
        "{object} is forbidden: User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        user.name, info.verb, info.api_group
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    const POLICY: &str = r#"
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "team-a", "resource": "*", "apiGroup": "*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "team-a", "resource": "*", "apiGroup": "*", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "admins", "namespace": "*", "resource": "*", "apiGroup": "*", "nonResourcePath": "*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "*", "nonResourcePath": "/apis*", "readonly": true}}
"#;

    #[test]
    fn abac_decisions() {
        let a = Abac::parse(POLICY).unwrap();
        let req = |m: &str, p: &str| RequestInfo::parse(m, p, "");
        let alice = user("alice", &[]);
        let bob = user("bob", &[]);
        let admin = user("carol", &["admins"]);
        assert!(a.allows(&alice, &req("POST", "/apis/g/v1/namespaces/team-a/things")));
        assert!(!a.allows(&alice, &req("GET", "/apis/g/v1/namespaces/team-b/things")));
        // Lists across namespaces need a policy for every namespace.
        assert!(!a.allows(&alice, &req("GET", "/apis/g/v1/things")));
        assert!(a.allows(&bob, &req("GET", "/apis/g/v1/namespaces/team-a/things/x")));
        assert!(!a.allows(&bob, &req("DELETE", "/apis/g/v1/namespaces/team-a/things/x")));
        assert!(a.allows(&admin, &req("GET", "/apis/g/v1/things")));
        assert!(a.allows(&alice, &req("GET", "/apis/g/v1")));
        assert!(!a.allows(&alice, &req("GET", "/openapi/v2")));
        assert!(Abac::parse("{\"kind\": \"Nope\", \"spec\": {}}").is_err());
    }

    #[test]
    fn forbidden_messages() {
        let u = user("bob", &[]);
        let m = forbidden_message(
            &u,
            &RequestInfo::parse(
                "DELETE",
                "/apis/kubevirt.io/v1/namespaces/a/virtualmachines/vm1",
                "",
            ),
        );
        assert_eq!(m, "virtualmachines.kubevirt.io \"vm1\" is forbidden: User \"bob\" cannot delete resource \"virtualmachines\" in API group \"kubevirt.io\" in the namespace \"a\"");
        let m = forbidden_message(
            &u,
            &RequestInfo::parse("GET", "/apis/kubevirt.io/v1/virtualmachines", ""),
        );
        assert!(m.ends_with("cannot list resource \"virtualmachines\" in API group \"kubevirt.io\" at the cluster scope"), "{m}");
    }
}
