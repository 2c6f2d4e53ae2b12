//! The objects a lifecycle kind relates to (`related` in the lifecycle file: by name, by a
//! field, its controller, the objects it controls, the objects naming it, those of a list of
//! names), both ways, one relation form at a time: forward (`related`: from an object, the
//! objects a stage or an action reads) and in reverse (`Indexes::relating`: from a changed
//! object, the objects whose relation finds it, which the simulation then evaluates again).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lifecycle::{By, Ctx, Kind, Lifecycles, Path, ResourceRef, Rng};
use serde_json::Value;

use super::reverse::{self, Reverse};
use crate::generated::RESOURCES;
use crate::object::managed_fields::without_managed_fields;
use crate::object::meta::controller_ref;
use crate::object::meta_str;
use crate::registry::keys::{collection_prefix, object_key};
use crate::registry::Registry;
use crate::resource::ResourceInfo;
use crate::store::ListRequest;

/// A lifecycle file's kind as the server serves it, in its storage version.
pub fn served(r: &ResourceRef) -> Option<&'static ResourceInfo> {
    RESOURCES.iter().find(|res| {
        res.group == r.group && res.kind == r.kind && res.version == res.storage_version
    })
}

/// Forward: the related objects of `obj` that exist, by name (a list relation always, maybe
/// empty); `ctx` reads `field` paths, namespaces and `where` filters. With the simulation's
/// `indexes` (and the lifecycle kind's place in them), `owned` reads its index instead of
/// scanning the namespace.
pub async fn related(
    registry: &Registry,
    (kind, indexes): (&Kind, Option<(&Indexes, usize)>),
    res: &ResourceInfo,
    obj: &Value,
    ctx: &Ctx<'_>,
) -> BTreeMap<String, Arc<Value>> {
    let store = registry.store();
    let mut out = BTreeMap::new();
    let ns = if res.namespaced { meta_str(obj, "namespace") } else { "" };
    for (name, rel) in &kind.related {
        let Some(rel_res) = served(&rel.resource) else { continue };
        let named_ns =
            rel.namespace.as_ref().and_then(|e| e.eval(obj, ctx).as_str().map(str::to_string));
        let ns = match &named_ns {
            _ if !rel_res.namespaced => "",
            Some(n) => n.as_str(),
            None => ns,
        };
        let (key, uid) = match &rel.by {
            By::Name => (object_key(rel_res, ns, meta_str(obj, "name")), None),
            By::Field(path) => match path.eval(obj, ctx).as_str() {
                Some(n) if !n.is_empty() => (object_key(rel_res, ns, n), None),
                _ => continue,
            },
            By::Owned => {
                let uid = meta_str(obj, "uid");
                let mine = |item: &Value| {
                    controller_ref(item).and_then(|r| r.get("uid")?.as_str()) == Some(uid)
                };
                let indexed = indexes.and_then(|(ix, k)| {
                    ix.owned(k, name, uid, &collection_prefix(rel_res, Some(ns)))
                });
                let list = match indexed {
                    Some(keys) => {
                        let mut items = Vec::new();
                        for key in keys {
                            let Ok(Some(found)) = store.get(&key).await else { continue };
                            // The index may trail the store: the stored object decides.
                            let keep = rel.where_.as_ref();
                            if mine(&found)
                                && keep.is_none_or(|w| lifecycle::eval::matches(w, &found, ctx))
                            {
                                items.push(found);
                            }
                        }
                        list_of(indexes, name, res, obj, items)
                    }
                    None => Arc::new(Value::Array(
                        scan(registry, rel_res, ns, uid, rel, ctx, mine).await,
                    )),
                };
                out.insert(name.clone(), list);
                continue;
            }
            By::Referencing(path) => {
                let own = meta_str(obj, "name");
                let names_it = |item: &Value| path.eval(item, ctx).as_str() == Some(own);
                let items = scan(registry, rel_res, ns, own, rel, ctx, names_it).await;
                out.insert(name.clone(), Arc::new(Value::Array(items)));
                continue;
            }
            By::Names(names) => {
                let names = names.eval(obj, ctx);
                let mut items = Vec::new();
                for n in names.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    let Ok(Some(found)) = store.get(&object_key(rel_res, ns, n)).await else {
                        continue;
                    };
                    if rel.where_.as_ref().is_none_or(|w| lifecycle::eval::matches(w, &found, ctx))
                    {
                        items.push(found);
                    }
                }
                out.insert(name.clone(), list_of(indexes, name, res, obj, items));
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
        if let Ok(Some(found)) = store.get(&key).await {
            if uid.is_none_or(|u| u == meta_str(&found, "uid")) {
                out.insert(name.clone(), found);
            }
        }
    }
    out
}

/// A list relation's value from its objects (the store's decoded copies): the one built for
/// the same objects last time when the simulation's `indexes` hold it, so that evaluating an
/// object again copies none of its unchanged related objects.
fn list_of(
    indexes: Option<(&Indexes, usize)>,
    rel: &str,
    res: &ResourceInfo,
    obj: &Value,
    items: Vec<Arc<Value>>,
) -> Arc<Value> {
    let build = |items: &[Arc<Value>]| {
        // No lifecycle reads a listed object's managedFields.
        Arc::new(Value::Array(items.iter().map(|i| without_managed_fields(i)).collect()))
    };
    let Some((ix, k)) = indexes else { return build(&items) };
    let key = object_key(res, meta_str(obj, "namespace"), meta_str(obj, "name"));
    let mut lists = ix.lists.borrow_mut();
    let held = lists.entry(key).or_default();
    let same = |l: &List| {
        l.items.len() == items.len() && l.items.iter().zip(&items).all(|(a, b)| Arc::ptr_eq(a, b))
    };
    // The same objects under another relation (a VMI's pods and its launcher, say) share it.
    let value = match held.iter().find(|l| same(l)) {
        Some(l) => l.value.clone(),
        None => build(&items),
    };
    match held.iter_mut().find(|l| l.k == k && l.rel == rel) {
        Some(l) => {
            l.value = value.clone();
            l.items = items;
        }
        None => held.push(List { k, rel: rel.to_string(), items, value: value.clone() }),
    }
    value
}

/// The objects of `res` in `ns` that `keep` picks and the relation's `where` admits, read by a
/// scan of the namespace that decodes only objects whose bytes contain `needle`.
async fn scan(
    registry: &Registry,
    res: &ResourceInfo,
    ns: &str,
    needle: &str,
    rel: &lifecycle::Related,
    ctx: &Ctx<'_>,
    keep: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let all = ListRequest { prefix: collection_prefix(res, Some(ns)), ..ListRequest::default() };
    let Ok(list) = registry.store().list_raw(all).await else { return Vec::new() };
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

/// The reverse lookups of a program's relations by controller and by field: the objects of a
/// kind by the value their relation reads (the uid of their controller, the name a field
/// holds), so a change finds the objects that relate to it without a scan of their namespace.
/// Kept from the events the simulation follows (`index`), rebuilt from lists when it starts or
/// lags (`clear`, then `index` of every listed object).
pub struct Indexes {
    indexes: Vec<Index>,
    /// The list relations last built, by the key of the object relating: the objects (the
    /// store's decoded copies, whose identity is their revision) and the list made of them.
    lists: RefCell<HashMap<String, Vec<List>>>,
}

struct List {
    k: usize,
    rel: String,
    items: Vec<Arc<Value>>,
    value: Arc<Value>,
}

/// One relation's reverse lookup, or an `owned` relation's forward one.
struct Index {
    /// The kind (its place in the caller's list of kinds) and the key prefix of the collection
    /// indexed: the kind's own, or for `owned` the related kind's, by controller.
    k: usize,
    prefix: String,
    rel: String,
    /// `by: {field}`'s path; `None` for `by: controller` and `owned`.
    field: Option<Path>,
    keys: RefCell<Reverse>,
}

impl Indexes {
    /// The lookups `kinds` need: each a lifecycle kind of `program` with its served kind.
    pub fn new(program: &Lifecycles, kinds: &[(usize, &'static ResourceInfo)]) -> Indexes {
        let mut indexes = Vec::new();
        for (k, (i, res)) in kinds.iter().enumerate() {
            for (name, rel) in &program.kinds[*i].related {
                let (field, prefix) = match &rel.by {
                    By::Controller => (None, collection_prefix(res, None)),
                    By::Field(path) => (Some(path.clone()), collection_prefix(res, None)),
                    // The objects it controls, by their controller's uid.
                    By::Owned => match served(&rel.resource) {
                        Some(rel_res) => (None, collection_prefix(rel_res, None)),
                        None => continue,
                    },
                    By::Name | By::Names(_) | By::Referencing(_) => continue,
                };
                indexes.push(Index {
                    k,
                    prefix,
                    rel: name.clone(),
                    field,
                    keys: RefCell::default(),
                });
            }
        }
        Indexes { indexes, lists: RefCell::default() }
    }

    /// The object at `key` is gone: its lists go too.
    pub fn forget(&self, key: &str) {
        self.lists.borrow_mut().remove(key);
    }

    /// The collections whose objects the lookups hold.
    pub fn prefixes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for ix in &self.indexes {
            if !out.contains(&ix.prefix) {
                out.push(ix.prefix.clone());
            }
        }
        out
    }

    pub fn clear(&self) {
        self.indexes.iter().for_each(|ix| ix.keys.borrow_mut().clear());
        self.lists.borrow_mut().clear();
    }

    /// The keys the lookups hold.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.indexes.iter().map(|ix| ix.keys.borrow().len()).sum()
    }

    /// Records the object at `key` as it now is (`None`: gone); `kind_of(k)` is lifecycle kind
    /// `k`, whose `ctx` reads field paths.
    pub fn index<'k>(&self, key: &str, obj: Option<&Value>, kind_of: impl Fn(usize) -> &'k Kind) {
        for ix in self.indexes.iter().filter(|ix| key.starts_with(ix.prefix.as_str())) {
            let value = obj.and_then(|o| match &ix.field {
                None => reverse::controller(o).map(str::to_string),
                Some(path) => {
                    // As `related` reads it: no related objects in the context.
                    let ctx = Ctx::new(kind_of(ix.k), o, String::new(), 1, Rng::new(0));
                    let value = path.eval(o, &ctx);
                    value.as_str().filter(|n| !n.is_empty()).map(str::to_string)
                }
            });
            ix.keys.borrow_mut().set(key, value.as_deref());
        }
    }

    /// Forward, for lifecycle kind `k`'s `owned` relation `rel`: the keys under `prefix` of the
    /// objects the owner of `uid` controls (`None`: no such index).
    pub fn owned(&self, k: usize, rel: &str, uid: &str, prefix: &str) -> Option<Vec<String>> {
        let ix = self.indexes.iter().find(|ix| ix.k == k && ix.rel == rel)?;
        Some(ix.keys.borrow().keys(uid, prefix))
    }

    /// Reverse: the keys of the objects of lifecycle kind `k` (`kind`, served as `res`) whose
    /// relations find the object `changed` (at `key`, of `changed_res`), as it now is.
    pub async fn relating(
        &self,
        registry: &Registry,
        (k, kind, res): (usize, &Kind, &ResourceInfo),
        changed_res: (&str, &str),
        (ns, name): (&str, &str),
        changed: &Value,
    ) -> Vec<String> {
        let (group, plural) = changed_res;
        let mut out = Vec::new();
        for (rel_name, rel) in &kind.related {
            let Some(rel_res) = served(&rel.resource) else { continue };
            if rel_res.group != group || rel_res.plural != plural {
                continue;
            }
            // Where objects of the kind naming it may be.
            let scope = (res.namespaced && rel.namespace.is_none()).then_some(ns);
            match &rel.by {
                By::Name => out.push(object_key(res, ns, name)),
                // The owner, if it is of this kind.
                By::Owned => {
                    let owner = controller_ref(changed)
                        .filter(|r| r.get("kind").and_then(Value::as_str) == Some(res.kind));
                    if let Some(owner) = owner.and_then(|o| o.get("name")?.as_str()) {
                        out.push(object_key(res, ns, owner));
                    }
                }
                // The objects whose field names it, and the objects it controls.
                By::Field(_) | By::Controller => {
                    let value = match rel.by {
                        By::Controller => meta_str(changed, "uid"),
                        _ => name,
                    };
                    let prefix = collection_prefix(res, scope);
                    let ix = self.indexes.iter().find(|ix| ix.k == k && ix.rel == *rel_name);
                    if let Some(ix) = ix {
                        out.extend(ix.keys.borrow().keys(value, &prefix));
                    }
                }
                // Any object of the namespace may list it among its names.
                By::Names(_) => {
                    let all = ListRequest {
                        prefix: collection_prefix(res, scope),
                        ..ListRequest::default()
                    };
                    let Ok(list) = registry.store().list_raw(all).await else { continue };
                    out.extend(list.items.into_iter().map(|(key, _)| key));
                }
                // The object it names.
                By::Referencing(path) => {
                    let ctx = Ctx::new(kind, changed, String::new(), 1, Rng::new(0));
                    if let Value::String(n) = path.eval(changed, &ctx) {
                        out.push(object_key(res, ns, &n));
                    }
                }
            }
        }
        out
    }
}
