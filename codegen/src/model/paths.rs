//! Taking the document's paths apart: their `{parameters}` and the shape of resource paths.

/// The `{param}` names of a path, in order; `Err` for unbalanced braces.
pub fn path_params(path: &str) -> Result<Vec<String>, String> {
    let mut params = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err("`}` without `{`".into());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("`{` without `}`")?;
        let name = &after[..close];
        if name.is_empty() || name.contains('{') {
            return Err(format!("bad parameter `{{{name}}}`"));
        }
        params.push(name.to_string());
        rest = &after[close + 1..];
    }
    Ok(params)
}

/// A resource path taken apart:
/// `/apis/<group>/<version>/[watch/][namespaces/{namespace}/]<plural>[/{name}[/<subresource>]]`,
/// or `/api/<version>/…` for the legacy core group (`group` is `""`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ResourcePath<'a> {
    pub(super) group: &'a str,
    pub(super) version: &'a str,
    pub(super) watch: bool,
    pub(super) namespaced: bool,
    pub(super) plural: &'a str,
    pub(super) named: bool,
    /// The segment after `{name}`, not yet checked against the known subresources.
    pub(super) subresource: Option<&'a str>,
}

pub(super) const RESOURCE_PATH_SHAPE: &str =
    "/apis/<group>/<version>/[watch/][namespaces/{namespace}/]<plural>[/{name}[/<subresource>]] (/api/<version>/… for the core group)";

pub(super) fn parse_resource_path(path: &str) -> Option<ResourcePath<'_>> {
    let (core, tail) = match path.strip_prefix("/apis/") {
        Some(tail) => (false, tail),
        None => (true, path.strip_prefix("/api/")?),
    };
    let segs: Vec<&str> = tail.split('/').collect();
    let (group, version, mut rest) = match (core, segs.as_slice()) {
        (false, [g, v, rest @ ..]) if !rest.is_empty() => (*g, *v, rest),
        (true, [v, rest @ ..]) if !rest.is_empty() => ("", *v, rest),
        _ => return None,
    };
    let watch = rest.first() == Some(&"watch");
    if watch {
        rest = &rest[1..];
    }
    // `namespaces/{name}/<subresource>` is the Namespace kind's own path, not a namespace's.
    let namespaced = rest.len() >= 3 && rest[0] == "namespaces" && rest[1] != "{name}";
    if namespaced {
        if rest[1] != "{namespace}" {
            return None;
        }
        rest = &rest[2..];
    }
    let (plural, named, subresource) = match rest {
        [p] => (*p, false, None),
        [p, "{name}"] => (*p, true, None),
        // Subresources have no watch paths.
        [p, "{name}", s] if !watch => (*p, true, Some(*s)),
        _ => return None,
    };
    let literal = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !(core || literal(group))
        || !literal(version)
        || !literal(plural)
        || !subresource.is_none_or(literal)
    {
        return None;
    }
    Some(ResourcePath { group, version, watch, namespaced, plural, named, subresource })
}

/// An `x-virt-action` path: `/apis/<group>/<version>/namespaces/{namespace}/` then
/// `<plural>/{name}/<action>` (an action may have two segments: `vnc/screenshot`) or, for an
/// action on no object (`expand-vm-spec`, whose kind `x-virt-subresource-of` names), `<action>`.
/// An object's action may end in parameters (`portforward/{port}/{protocol}`), which its
/// handler is given.
pub(super) struct ActionPath<'a> {
    pub(super) group: &'a str,
    pub(super) version: &'a str,
    /// `None` for an action on no object.
    pub(super) plural: Option<&'a str>,
    pub(super) action: String,
    /// The trailing path parameters' names.
    pub(super) params: Vec<&'a str>,
}

pub(super) fn parse_action_path(path: &str) -> Option<ActionPath<'_>> {
    let tail = path.strip_prefix("/apis/")?;
    let segs: Vec<&str> = tail.split('/').collect();
    let [group, version, "namespaces", "{namespace}", rest @ ..] = segs.as_slice() else {
        return None;
    };
    let literal = |s: &&str| {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    fn param<'s>(s: &&'s str) -> Option<&'s str> {
        s.strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase()))
    }
    let (plural, action, params) = match rest {
        [p, "{name}", tail @ ..] => {
            let literals = tail.iter().take_while(|s| param(s).is_none()).count();
            let (a, ps) = tail.split_at(literals);
            if !(1..=2).contains(&a.len()) || ps.len() > 2 {
                return None;
            }
            let params = ps.iter().map(param).collect::<Option<Vec<_>>>()?;
            (Some(*p), a, params)
        }
        [_] => (None, rest, Vec::new()),
        _ => return None,
    };
    if !action.iter().all(literal) || !plural.iter().all(literal) {
        return None;
    }
    Some(ActionPath { group, version, plural, action: action.join("/"), params })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_params_in_order() {
        assert_eq!(path_params("/a/{namespace}/b/{name}").unwrap(), ["namespace", "name"]);
        assert!(path_params("/a/{x").is_err());
        assert!(path_params("/a/x}").is_err());
    }

    #[test]
    fn resource_path_shapes() {
        let p = parse_resource_path("/apis/g.io/v1/watch/namespaces/{namespace}/things/{name}")
            .unwrap();
        assert_eq!(
            p,
            ResourcePath {
                group: "g.io",
                version: "v1",
                watch: true,
                namespaced: true,
                plural: "things",
                named: true,
                subresource: None,
            }
        );
        let p = parse_resource_path("/apis/g.io/v1/things").unwrap();
        assert!(!p.watch && !p.namespaced && !p.named);
        let p = parse_resource_path("/apis/g.io/v1/namespaces/{namespace}/things/{name}/scale")
            .unwrap();
        assert!(p.namespaced && p.named && p.subresource == Some("scale"));
        assert!(parse_resource_path("/apis/g.io/v1/watch/things/{name}/status").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/things/{name}/status/x").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/things/{name}/{x}").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/namespaces/{ns}/things").is_none());
        assert!(parse_resource_path("/apix/v1/things").is_none());
        let core = parse_resource_path("/api/v1/namespaces/{namespace}/configmaps/{name}").unwrap();
        assert_eq!((core.group, core.version, core.plural), ("", "v1", "configmaps"));
        assert!(core.namespaced && core.named);
        let ns = parse_resource_path("/api/v1/namespaces/{name}/finalize").unwrap();
        assert_eq!((ns.group, ns.plural, ns.subresource), ("", "namespaces", Some("finalize")));
        assert!(!ns.namespaced);
        assert!(parse_resource_path("/api/v1").is_none());
    }
}
