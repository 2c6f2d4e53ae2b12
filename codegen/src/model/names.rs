//! Version order and handler names: the two spellings lowering derives rather than reads.

use std::cmp::Ordering;

/// Orders versions as kube-apiserver does (`version.CompareKubeAwareVersionStrings`): GA before
/// beta before alpha, higher major then higher minor first, then non-kube-like strings
/// alphabetically. `Less` means "preferred".
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 || rest.starts_with('0') {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (2, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((stability, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => sa.cmp(&sb).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The snake_case form of an operationId (`listZooExampleIoV1NamespacedAnimal` →
/// `list_zoo_example_io_v1_namespaced_animal`); acronyms stay together
/// (`readAPIKey` → `read_api_key`).
pub fn snake_case(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    let mut out = String::with_capacity(id.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_order_is_kube_priority() {
        let mut v = vec![
            "v1alpha1", "v1beta1", "foo", "v2", "v1", "v1alpha3", "v1beta2", "v2alpha1", "v10",
            "v1alpha2",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            [
                "v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha3", "v1alpha2",
                "v1alpha1", "foo"
            ]
        );
    }

    #[test]
    fn snake_cases_operation_ids() {
        assert_eq!(
            snake_case("listZooExampleIoV1NamespacedAnimalKeeper"),
            "list_zoo_example_io_v1_namespaced_animal_keeper"
        );
        assert_eq!(
            snake_case("readZooExampleIoV1beta1NamespacedAPIKey"),
            "read_zoo_example_io_v1beta1_namespaced_api_key"
        );
        assert_eq!(snake_case("getAPIVersions"), "get_api_versions");
        assert_eq!(snake_case("getCodeVersion"), "get_code_version");
        assert_eq!(snake_case("v3Index"), "v3_index");
    }
}
