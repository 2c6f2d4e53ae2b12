//! Store keys as etcd keys, laid out as kube-apiserver stores custom resources:
//! `<root><group>/<plural>/[<namespace>/]<name>`, the legacy core group's kinds without a group
//! segment (`<root>configmaps/<namespace>/<name>`), `<root>` being `--etcd-prefix` with a
//! trailing slash (`/registry/`). So an etcd a kube-apiserver wrote is served as is, and the
//! other way round.
//!
//! The mapping is a bijection on object keys: an etcd key's segment count and whether its first
//! segment is a group (CRD groups hold a dot, core plurals never do) give the store key back.
//! Within one collection's range the tails are the same bytes, so bytewise order is kept there
//! (ranges across groups are not served from etcd). The server's own keys sit under
//! `<root>_virt/`: `_` is in no DNS label, so no group or plural can reach them.

/// The root of one server's keys in etcd.
#[derive(Debug, Clone)]
pub struct Keys {
    root: String,
}

impl Keys {
    /// `prefix` as kube reads `--etcd-prefix`: one leading and one trailing slash.
    pub fn new(prefix: &str) -> Keys {
        let trimmed = prefix.trim_matches('/');
        let root = if trimmed.is_empty() { "/".to_owned() } else { format!("/{trimmed}/") };
        Keys { root }
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// The etcd key of a store key `<group>/<plural>/<namespace>/<name>`.
    pub fn object(&self, key: &str) -> String {
        self.prefix(key)
    }

    /// The etcd prefix of a store key prefix (`<group>/<plural>/`, `<group>/<plural>/<ns>/`,
    /// …): the empty group and an empty namespace segment are left out, as in `object`.
    pub fn prefix(&self, prefix: &str) -> String {
        let parts: Vec<&str> = prefix.split('/').collect();
        let last = parts.len() - 1;
        let mut out = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            if i == last {
                out.push_str(part);
            } else if !(part.is_empty() && (i == 0 || i == 2)) {
                out.push_str(part);
                out.push('/');
            }
        }
        out
    }

    /// The store key of an etcd key under the root; `None` for the server's own keys and
    /// anything that is no object's key.
    pub fn store_key(&self, key: &[u8]) -> Option<String> {
        let tail = std::str::from_utf8(key).ok()?.strip_prefix(self.root.as_str())?;
        let parts: Vec<&str> = tail.split('/').collect();
        if parts.iter().any(|p| p.is_empty() || p.starts_with('_')) {
            return None;
        }
        let grouped = parts[0].contains('.');
        match (parts.len(), grouped) {
            (4, _) => Some(tail.to_owned()),
            (3, true) => Some(format!("{}/{}//{}", parts[0], parts[1], parts[2])),
            (3, false) => Some(format!("/{tail}")),
            (2, false) => Some(format!("/{}//{}", parts[0], parts[1])),
            _ => None,
        }
    }

    /// One of the server's own keys (`_virt/<name>`).
    pub fn meta(&self, name: &str) -> String {
        format!("{}_virt/{name}", self.root)
    }
}

/// `_virt/health` (`Keys::meta`): the key probes write and etcd's current revision is read
/// through (a count-only Range).
pub const HEALTH: &str = "health";
/// `_virt/compacted`: the compacted revision, kube's `compact_rev_key`.
pub const COMPACTED: &str = "compacted";

/// The first key after `key` (kube's `key + "\x00"`).
pub fn after(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

/// The end of the range of keys starting with `prefix` (etcd's `GetPrefixRangeEnd`): its last
/// byte below 0xff incremented, the rest dropped; `\0` (to the end of the key space) if none.
pub fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_map_both_ways() {
        let k = Keys::new("/registry");
        for (store, etcd) in [
            ("kubevirt.io/virtualmachines/ns/vm", "/registry/kubevirt.io/virtualmachines/ns/vm"),
            ("kubevirt.io/kubevirts//kv", "/registry/kubevirt.io/kubevirts/kv"),
            ("/configmaps/ns/cm", "/registry/configmaps/ns/cm"),
            ("/namespaces//default", "/registry/namespaces/default"),
            // An undotted group (only in tests) still maps back when namespaced.
            ("g/p/ns/a", "/registry/g/p/ns/a"),
        ] {
            assert_eq!(k.object(store), etcd);
            assert_eq!(k.store_key(etcd.as_bytes()).as_deref(), Some(store), "{etcd}");
        }
        assert_eq!(k.store_key(b"/registry/_virt/secret/x"), None);
        assert_eq!(k.store_key(b"/other/configmaps/ns/cm"), None);
        assert_eq!(k.store_key(b"/registry/a/b/c/d/e"), None);
        assert_eq!(k.store_key(b"/registry/solo"), None);
    }

    #[test]
    fn prefixes_follow_the_keys() {
        let k = Keys::new("registry/");
        assert_eq!(k.root(), "/registry/");
        assert_eq!(
            k.prefix("kubevirt.io/virtualmachines/"),
            "/registry/kubevirt.io/virtualmachines/"
        );
        assert_eq!(
            k.prefix("kubevirt.io/virtualmachines/ns/"),
            "/registry/kubevirt.io/virtualmachines/ns/"
        );
        assert_eq!(k.prefix("kubevirt.io/kubevirts//"), "/registry/kubevirt.io/kubevirts/");
        assert_eq!(k.prefix("/configmaps/"), "/registry/configmaps/");
        assert_eq!(k.prefix("g/"), "/registry/g/");
        assert_eq!(k.prefix(""), "/registry/");
        assert_eq!(Keys::new("").root(), "/");
    }

    #[test]
    fn range_ends() {
        assert_eq!(range_end(b"/a/"), b"/a0");
        assert_eq!(range_end(b"a\xff"), b"b");
        assert_eq!(range_end(b"\xff"), b"\0");
    }
}
