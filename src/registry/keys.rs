//! Storage keys: `<group>/<plural>/<namespace>/<name>` (empty namespace for cluster kinds), shared
//! by all versions of a group. Written and read here only.

use crate::resource::ResourceInfo;

/// The storage key of one object: `<group>/<plural>/<namespace>/<name>`, shared by all versions.
pub fn object_key(res: &ResourceInfo, namespace: &str, name: &str) -> String {
    format!("{}/{}/{}/{}", res.group, res.plural, namespace, name)
}

/// The key prefix of a collection; `None` lists every namespace.
pub fn collection_prefix(res: &ResourceInfo, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{}/{}/{}/", res.group, res.plural, ns),
        None => format!("{}/{}/", res.group, res.plural),
    }
}

/// A key's `(group, plural, namespace, name)`.
pub fn split(key: &str) -> Option<(&str, &str, &str, &str)> {
    let mut parts = key.splitn(4, '/');
    Some((parts.next()?, parts.next()?, parts.next()?, parts.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_back_into_their_parts() {
        assert_eq!(
            split("kubevirt.io/virtualmachines/ns/vm"),
            Some(("kubevirt.io", "virtualmachines", "ns", "vm"))
        );
        assert_eq!(
            split("kubevirt.io/virt//kubevirt"),
            Some(("kubevirt.io", "virt", "", "kubevirt"))
        );
        assert_eq!(split("kubevirt.io/virtualmachines/ns"), None);
    }
}
