//! kube's DefaultStorageClass admission plugin, for the kind whose `x-virt-resource.defaultClass`
//! names the relation (K8S plugin/pkg/admission/storage/storageclass/setdefault/admission.go,
//! with pkg/volume/util/storageclass.go `GetDefaultClass`): a new object without a class (its
//! field unset, and without the legacy annotation) gets the default one, the newest of the
//! classes annotated `"true"` (ties by name). An explicit `""` is a class: left alone. It is
//! mutating admission, run on create before the strategy (and only on create, as kube's plugin
//! handles `admission.Create` alone).

use serde_json::{Map, Value};

use super::Registry;
use crate::generated::RESOURCES;
use crate::object::error::ApiError;
use crate::object::At;
use crate::registry::keys::collection_prefix;
use crate::resource::{DefaultClass, ResourceInfo};
use crate::store::ListRequest;

impl Registry {
    /// The class a new object of `res` gets when it names none: `None` when `res` has no such
    /// relation or no class is marked default.
    pub(crate) async fn default_class(
        &self,
        res: &ResourceInfo,
    ) -> Result<Option<String>, ApiError> {
        let Some(rel) = &res.default_class else { return Ok(None) };
        let classes = RESOURCES.iter().find(|r| {
            r.group == rel.group && r.plural == rel.plural && r.version == r.storage_version
        });
        let Some(classes) = classes else { return Ok(None) };
        let all =
            ListRequest { prefix: collection_prefix(classes, None), ..ListRequest::default() };
        let items = self.store.list_raw(all).await?.items;
        let objects: Vec<Value> =
            items.iter().filter_map(|(_, bytes)| serde_json::from_slice(bytes).ok()).collect();
        Ok(newest_default(rel, &objects))
    }
}

/// `GetDefaultClass`: of the objects annotated `"true"` under one of the relation's
/// annotations, the newest by creationTimestamp, ties broken by the smaller name.
pub(crate) fn newest_default(rel: &DefaultClass, classes: &[Value]) -> Option<String> {
    let meta = |c: &Value, f: &str| c.at(&format!("/metadata/{f}")).cloned();
    let mut defaults: Vec<(String, String)> = classes
        .iter()
        .filter(|c| {
            let annotations = meta(c, "annotations").unwrap_or(Value::Null);
            rel.annotations
                .iter()
                .any(|a| annotations.get(a).and_then(Value::as_str) == Some("true"))
        })
        .map(|c| {
            let s = |f| meta(c, f).and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            (s("creationTimestamp"), s("name"))
        })
        .collect();
    // RFC 3339 times of one form order as strings do.
    defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    defaults.into_iter().next().map(|(_, name)| name)
}

/// Sets the relation's field of a new `obj` to `class` unless the object names one already
/// (`PersistentVolumeClaimHasClass`: the field set, even to "", or the legacy annotation).
pub(crate) fn fill(res: &ResourceInfo, obj: &mut Value, class: Option<&str>) {
    let (Some(rel), Some(class)) = (&res.default_class, class) else { return };
    let annotated = !rel.skip_annotation.is_empty()
        && obj.at("/metadata/annotations").and_then(|a| a.get(rel.skip_annotation)).is_some();
    let segs: Vec<&str> = rel.field.split('.').collect();
    let current = segs.iter().try_fold(&*obj, |v, s| v.get(*s));
    if annotated || current.is_some_and(|v| !v.is_null()) {
        return;
    }
    let Some((last, parents)) = segs.split_last() else { return };
    let mut at = obj;
    for seg in parents {
        let Some(map) = at.as_object_mut() else { return };
        let child = map.entry(seg.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if child.is_null() {
            *child = Value::Object(Map::new());
        }
        at = child;
    }
    if let Some(map) = at.as_object_mut() {
        map.insert(last.to_string(), Value::String(class.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REL: DefaultClass = DefaultClass {
        field: "spec.className",
        group: "g.io",
        plural: "classes",
        annotations: &["g.io/default", "beta.g.io/default"],
        skip_annotation: "beta.g.io/class",
    };

    fn class(name: &str, at: &str, annotation: &str, value: &str) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": at,
                            "annotations": {annotation: value}}})
    }

    #[test]
    fn the_newest_default_wins_and_ties_go_to_the_smaller_name() {
        let t1 = "2026-01-01T00:00:01Z";
        let t2 = "2026-01-01T00:00:02Z";
        let none = [class("a", t2, "g.io/default", "false"), class("b", t2, "other", "true")];
        assert_eq!(newest_default(&REL, &none), None);
        let classes = [
            class("old", t1, "g.io/default", "true"),
            class("z", t2, "beta.g.io/default", "true"),
            class("m", t2, "g.io/default", "true"),
        ];
        assert_eq!(newest_default(&REL, &classes).as_deref(), Some("m"));
        assert_eq!(newest_default(&REL, &classes[..1]).as_deref(), Some("old"));
    }

    #[test]
    fn only_a_claim_without_a_class_gets_the_default() {
        let res = ResourceInfo { default_class: Some(REL), ..ResourceInfo::EXAMPLE };
        let mut bare = json!({"metadata": {"name": "c"}});
        fill(&res, &mut bare, Some("fast"));
        assert_eq!(bare["spec"], json!({"className": "fast"}));
        let mut empty = json!({"metadata": {}, "spec": {"className": ""}});
        fill(&res, &mut empty, Some("fast"));
        assert_eq!(empty["spec"]["className"], "", "an explicit \"\" is a choice");
        let mut annotated = json!({"metadata": {"annotations": {"beta.g.io/class": "x"}}});
        fill(&res, &mut annotated, Some("fast"));
        assert!(annotated.get("spec").is_none());
        let mut null = json!({"spec": {"className": null}});
        fill(&res, &mut null, Some("fast"));
        assert_eq!(null["spec"]["className"], "fast");
        fill(&ResourceInfo::EXAMPLE, &mut bare, Some("other"));
        assert_eq!(bare["spec"]["className"], "fast", "only the kind with the relation");
    }
}
