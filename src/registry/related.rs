//! The objects a lifecycle kind relates to (`related` in the lifecycle file: by name, by a
//! field, its controller, the objects it controls, the objects naming it, those of a list of
//! names), found as the simulated runtime and the
//! action API both need them.

use std::collections::BTreeMap;

use lifecycle::{By, Ctx, Kind, ResourceRef};
use serde_json::Value;

use super::Registry;
use crate::generated::RESOURCES;
use crate::object::meta::controller_ref;
use crate::object::meta_str;
use crate::registry::keys::{collection_prefix, object_key};
use crate::resource::ResourceInfo;
use crate::store::ListRequest;

/// A lifecycle file's kind as the server serves it, in its storage version.
pub fn served(r: &ResourceRef) -> Option<&'static ResourceInfo> {
    RESOURCES.iter().find(|res| {
        res.group == r.group && res.kind == r.kind && res.version == res.storage_version
    })
}

impl Registry {
    /// The related objects of `obj` that exist, by name (an `owned` list always, maybe empty);
    /// `ctx` reads `field` paths, namespaces and `where` filters.
    pub async fn related(
        &self,
        kind: &Kind,
        res: &ResourceInfo,
        obj: &Value,
        ctx: &Ctx<'_>,
    ) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let ns = if res.namespaced { meta_str(obj, "namespace") } else { "" };
        for (name, rel) in &kind.related {
            let Some(rel_res) = served(&rel.resource) else { continue };
            let named_ns = rel.namespace.as_deref().and_then(|e| {
                let e = lifecycle::expr::parse(e).ok()?;
                lifecycle::expr::eval(&e, obj, ctx).as_str().map(str::to_string)
            });
            let ns = match &named_ns {
                _ if !rel_res.namespaced => "",
                Some(n) => n.as_str(),
                None => ns,
            };
            let (key, uid) = match &rel.by {
                By::Name => (object_key(rel_res, ns, meta_str(obj, "name")), None),
                By::Field(path) => {
                    let value = lifecycle::expr::parse(path)
                        .map_or(Value::Null, |e| lifecycle::expr::eval(&e, obj, ctx));
                    match value.as_str() {
                        Some(n) if !n.is_empty() => (object_key(rel_res, ns, n), None),
                        _ => continue,
                    }
                }
                By::Owned => {
                    let uid = meta_str(obj, "uid");
                    let mine = |item: &Value| {
                        controller_ref(item).and_then(|r| r.get("uid")?.as_str()) == Some(uid)
                    };
                    let items = self.scan(rel_res, ns, uid, rel, ctx, mine).await;
                    out.insert(name.clone(), Value::Array(items));
                    continue;
                }
                By::Referencing(path) => {
                    let own = meta_str(obj, "name");
                    let items = match lifecycle::expr::parse(path) {
                        Ok(field) => {
                            let names_it = |item: &Value| {
                                lifecycle::expr::eval(&field, item, ctx).as_str() == Some(own)
                            };
                            self.scan(rel_res, ns, own, rel, ctx, names_it).await
                        }
                        Err(_) => Vec::new(),
                    };
                    out.insert(name.clone(), Value::Array(items));
                    continue;
                }
                By::Names(names) => {
                    let names = lifecycle::expr::parse(names)
                        .map_or(Value::Null, |e| lifecycle::expr::eval(&e, obj, ctx));
                    let mut items = Vec::new();
                    for n in names.as_array().into_iter().flatten().filter_map(Value::as_str) {
                        let Ok(Some(found)) = self.store().get(&object_key(rel_res, ns, n)).await
                        else {
                            continue;
                        };
                        let found = (*found).clone();
                        if rel
                            .where_
                            .as_ref()
                            .is_none_or(|w| lifecycle::eval::matches(w, &found, ctx))
                        {
                            items.push(found);
                        }
                    }
                    out.insert(name.clone(), Value::Array(items));
                    continue;
                }
                By::Controller => {
                    let owner = controller_ref(obj)
                        .filter(|r| r.get("kind").and_then(Value::as_str) == Some(rel_res.kind));
                    let Some(owner) = owner else { continue };
                    let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or("");
                    (object_key(rel_res, ns, field("name")), Some(field("uid").to_string()))
                }
            };
            if let Ok(Some(found)) = self.store().get(&key).await {
                if uid.is_none_or(|u| u == meta_str(&found, "uid")) {
                    out.insert(name.clone(), (*found).clone());
                }
            }
        }
        out
    }

    /// The objects of `res` in `ns` that `keep` picks and the relation's `where` admits, read by a
    /// scan of the namespace that decodes only objects whose bytes contain `needle`.
    async fn scan(
        &self,
        res: &ResourceInfo,
        ns: &str,
        needle: &str,
        rel: &lifecycle::Related,
        ctx: &Ctx<'_>,
        keep: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let all =
            ListRequest { prefix: collection_prefix(res, Some(ns)), ..ListRequest::default() };
        let Ok(list) = self.store().list_raw(all).await else { return Vec::new() };
        let mut items = Vec::new();
        for (_, bytes) in list.items {
            if memchr::memmem::find(&bytes, needle.as_bytes()).is_none() {
                continue;
            }
            let Ok(item) = serde_json::from_slice::<Value>(&bytes) else { continue };
            if keep(&item)
                && rel.where_.as_ref().is_none_or(|w| lifecycle::eval::matches(w, &item, ctx))
            {
                items.push(item);
            }
        }
        items
    }
}
