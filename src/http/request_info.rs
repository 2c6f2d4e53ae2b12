//! What a request asks for, read from its method and path alone, as kube's `RequestInfoFactory`
//! does: the attributes authorization and request limits judge.

/// The attributes of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the path addresses a resource (`/apis/<g>/<v>/...<plural>...`, or
    /// `/api/<v>/...` in the core group).
    pub is_resource: bool,
    /// kube verb: get, list, watch, create, update, patch, delete, deletecollection; for
    /// non-resource requests the lower-cased HTTP method.
    pub verb: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub path: String,
}

impl RequestInfo {
    /// Read-only verbs (get, list, watch) may pass `readonly` policies.
    pub fn is_read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }

    /// Long-running requests are exempt from in-flight limits.
    pub fn is_long_running(&self) -> bool {
        self.verb == "watch"
    }

    pub fn parse(method: &str, path: &str, query: &str) -> RequestInfo {
        let mut info = RequestInfo {
            is_resource: false,
            verb: method.to_ascii_lowercase(),
            api_group: String::new(),
            api_version: String::new(),
            namespace: String::new(),
            resource: String::new(),
            subresource: String::new(),
            name: String::new(),
            path: path.to_string(),
        };
        let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        // Resources are at `/apis/<group>/<version>/<something>`, and at `/api/<version>/…` in
        // the core group.
        let mut rest = match segs.as_slice() {
            ["apis", g, v, rest @ ..] if !rest.is_empty() => {
                info.api_group = g.to_string();
                info.api_version = v.to_string();
                rest
            }
            ["api", v, rest @ ..] if !rest.is_empty() => {
                info.api_version = v.to_string();
                rest
            }
            _ => return info,
        };
        let mut watch = false;
        if rest.first() == Some(&"watch") {
            watch = true;
            rest = &rest[1..];
        }
        // `namespaces/<n>/<plural>/…` is content of namespace n; `namespaces/<n>` and its
        // `status` and `finalize` subresources are the Namespace itself, in its own namespace
        // (kube's `namespaceSubresources`).
        if rest.len() >= 2 && rest[0] == "namespaces" {
            info.namespace = rest[1].to_string();
            if rest.len() >= 3 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        if let Some(r) = rest.first() {
            info.resource = r.to_string();
        }
        if let Some(n) = rest.get(1) {
            info.name = n.to_string();
        }
        if let Some(s) = rest.get(2) {
            info.subresource = s.to_string();
        }
        if info.resource.is_empty() {
            return info;
        }
        info.is_resource = true;
        let watch_param = query.split('&').any(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            k == "watch" && !(v == "0" || v.eq_ignore_ascii_case("false"))
        });
        let named = !info.name.is_empty();
        info.verb = match method {
            "GET" | "HEAD" if watch || watch_param => "watch",
            "GET" | "HEAD" if named => "get",
            "GET" | "HEAD" => "list",
            "POST" => "create",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" if named => "delete",
            "DELETE" => "deletecollection",
            other => return RequestInfo { verb: other.to_ascii_lowercase(), ..info },
        }
        .to_string();
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_requests() {
        let i = RequestInfo::parse("GET", "/apis/g.io/v1/namespaces/ns/things/a", "");
        assert_eq!(
            (i.verb.as_str(), i.namespace.as_str(), i.resource.as_str(), i.name.as_str()),
            ("get", "ns", "things", "a")
        );
        assert!(i.is_resource);
        let i = RequestInfo::parse("GET", "/apis/g.io/v1/things", "watch=true");
        assert_eq!((i.verb.as_str(), i.namespace.as_str()), ("watch", ""));
        let i = RequestInfo::parse("GET", "/apis/g.io/v1/watch/namespaces/ns/things/a", "");
        assert_eq!((i.verb.as_str(), i.name.as_str()), ("watch", "a"));
        let i = RequestInfo::parse("DELETE", "/apis/g.io/v1/namespaces/ns/things", "");
        assert_eq!(i.verb, "deletecollection");
        let i = RequestInfo::parse("PUT", "/apis/g.io/v1/namespaces/ns/things/a/status", "");
        assert_eq!((i.verb.as_str(), i.subresource.as_str()), ("update", "status"));
        let i = RequestInfo::parse("GET", "/apis/g.io/v1/things", "watch=false");
        assert_eq!(i.verb, "list");
    }

    /// kube's `RequestInfoFactory` for the core group: `/api/<v>`, and a Namespace's own paths
    /// (with `status` and `finalize`) in the namespace they name.
    #[test]
    fn core_group_requests() {
        let i = RequestInfo::parse("POST", "/api/v1/namespaces/ns/configmaps", "");
        assert!(i.is_resource);
        assert_eq!((i.api_group.as_str(), i.api_version.as_str()), ("", "v1"));
        assert_eq!(
            (i.namespace.as_str(), i.resource.as_str(), i.verb.as_str()),
            ("ns", "configmaps", "create")
        );
        let i = RequestInfo::parse("PUT", "/api/v1/namespaces/ns/finalize", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.subresource.as_str()),
            ("namespaces", "ns", "finalize")
        );
        assert_eq!(i.namespace, "ns");
        let i = RequestInfo::parse("DELETE", "/api/v1/namespaces/ns", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.verb.as_str()),
            ("namespaces", "ns", "delete")
        );
    }

    #[test]
    fn non_resource_requests() {
        for p in [
            "/",
            "/apis",
            "/apis/g.io",
            "/apis/g.io/v1",
            "/openapi/v2",
            "/version",
            "/api",
            "/api/v1",
        ] {
            let i = RequestInfo::parse("GET", p, "");
            assert!(!i.is_resource, "{p}");
            assert_eq!(i.verb, "get");
        }
    }
}
