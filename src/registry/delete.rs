//! Deletion (B.6): preconditions, propagation finalizers, finalizing instead of removing while
//! finalizers remain, and deletecollection.

use std::sync::Arc;

use serde_json::{json, Value};

use super::options::{DeleteOptions, ListOptions, Propagation};
use super::read::Page;
use super::update::{Next, Shed};
use super::{namespaces, Change, Object, Registry};
use crate::object::error::ApiError;
use crate::object::meta::metadata_mut;
use crate::object::{meta, meta_str, pods, table, At};
use crate::registry::keys::object_key;
use crate::resource::{KubeRole, ResourceInfo};

/// What one delete did.
#[derive(Debug)]
pub enum Deleted {
    /// Removed: its last state.
    Gone(Object),
    /// Kept with a deletionTimestamp because finalizers remain or a grace period runs (a
    /// pod's, until its kubelet deletes it): its state now.
    Finalizing(Object),
}

impl Registry {
    /// Deletes the object `name` in `namespace` as a DELETE request does (also what the garbage
    /// collector and deletecollection call).
    pub async fn delete(
        &self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        self.admit_delete(res, name)?;
        let key = object_key(res, namespace, name);
        // A namespace's own finalizers (`spec.finalizers`) hold it like metadata's (kube's
        // namespace storage `Delete`).
        let namespace_rules = res.namespaces && self.checks_namespaces();
        // Pods delete gracefully (their storage's strategy is a RESTGracefulDeleteStrategy);
        // every other kind the server keeps is deleted at once or finalized.
        let graceful_kind = res.kube_role == Some(KubeRole::Pod);
        let outcome = self
            .guaranteed_update(res, &key, name, opts.dry_run, Shed::Never, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
                check_preconditions(res, name, current, opts, namespace_rules)?;
                let grace = if graceful_kind {
                    before_delete(current, opts.grace_period_seconds, table::now())
                } else {
                    Grace::NotGraceful
                };
                let held = namespace_rules && namespaces::held(current);
                let mut obj = (**current).clone();
                if grace == Grace::Pending {
                    // store.go: a pending graceful deletion changes nothing, finalizers
                    // included; the answer is the object as it is.
                    return Ok(Next::Keep(obj));
                }
                let meta = metadata_mut(&mut obj)?;
                let already_deleting = meta::deleting(meta);
                let mut fins = meta::finalizers(meta);
                if !already_deleting || grace != Grace::NotGraceful {
                    apply_propagation(&mut fins, opts);
                }
                if let Grace::Set { at, period } = grace {
                    // updateForGracefulDeletionAndFinalizers: a period of 0 without
                    // finalizers deletes now; else the object keeps its new deletion
                    // timestamp and period until its kubelet (or the finalizers) end it.
                    if period == 0 && fins.is_empty() {
                        return Ok(Next::Delete { answer: None });
                    }
                    if fins.is_empty() {
                        meta.remove("finalizers");
                    } else {
                        meta.insert("finalizers".into(), json!(fins));
                    }
                    meta.insert("deletionTimestamp".into(), Value::String(meta::rfc3339(at)));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(period));
                    if !already_deleting {
                        bump_generation(meta);
                    }
                    return Ok(Next::Update(obj));
                }
                if fins.is_empty() && !held {
                    return Ok(Next::Delete { answer: None });
                }
                if already_deleting {
                    // A repeated delete changes nothing once finalization has begun; a
                    // namespace still held by `spec.finalizers` is answered as it is
                    // (kube's namespace storage `Delete`: `return namespace, false, nil`).
                    return Ok(Next::Keep(obj));
                }
                if !fins.is_empty() {
                    meta.insert("finalizers".into(), json!(fins));
                }
                meta.insert("deletionTimestamp".into(), Value::String(meta::now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                if namespace_rules {
                    namespaces::start_terminating(&mut obj);
                } else {
                    bump_generation(meta);
                }
                Ok(Next::Update(obj))
            })
            .await?;
        Ok(match outcome.change {
            Change::Deleted => Deleted::Gone(outcome.object),
            _ => Deleted::Finalizing(outcome.object),
        })
    }

    /// Lists with `list` and deletes each item with `opts`; answers the page as it was read.
    pub async fn delete_collection(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<(Page, Vec<Arc<Value>>), ApiError> {
        let page = self.list(res, namespace, list).await?;
        let objects = page.objects()?;
        for obj in &objects {
            let name = meta_str(obj, "name");
            match self.delete(res, meta_str(obj, "namespace"), name, opts).await {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((page, objects))
    }
}

/// rest.BeforeDelete's verdict for a kind that deletes gracefully (K8S staging/src/k8s.io/
/// apiserver/pkg/registry/rest/delete.go).
#[derive(Debug, PartialEq)]
enum Grace {
    /// Not graceful: an object already being deleted with no period (or 0) left, which is
    /// deleted at once or kept for its finalizers as any kind's.
    NotGraceful,
    /// Already being deleted, and the options ask for no shorter period: nothing changes.
    Pending,
    /// `deletionTimestamp` (Unix seconds) and `deletionGracePeriodSeconds` to set.
    Set { at: i64, period: i64 },
}

/// `BeforeDelete` with the pod strategy's `CheckGracefulDelete` (`object::pods::grace_period`):
/// a negative requested period is 1; an object already being deleted may only have its period
/// shortened (its timestamp moved by the difference), else graceful deletion is pending; a
/// new deletion is due at now + period.
fn before_delete(current: &Value, requested: Option<i64>, now: i64) -> Grace {
    let requested = requested.map(|g| if g < 0 { 1 } else { g });
    let deleting = current.at("/metadata/deletionTimestamp").filter(|t| !t.is_null());
    if let Some(at) = deleting {
        let existing = current.at("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
        let existing = match existing.map(|g| if g < 0 { 1 } else { g }) {
            None | Some(0) => return Grace::NotGraceful,
            Some(g) => g,
        };
        return match requested {
            Some(period) if period < existing => {
                let at = at.as_str().and_then(meta::parse_rfc3339).unwrap_or(now);
                Grace::Set { at: at - existing + period, period }
            }
            _ => Grace::Pending,
        };
    }
    let period = pods::grace_period(current, requested);
    Grace::Set { at: now + period, period }
}

/// rest.BeforeDelete bumps a generation the object has; kinds without one get none.
fn bump_generation(meta: &mut serde_json::Map<String, Value>) {
    if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
        meta.insert("generation".into(), json!(g + 1));
    }
}

/// The delete's preconditions. A namespace's are checked by its own storage first, in its own
/// words (`pkg/registry/core/namespace/storage/storage.go`, `Delete`); every other kind's by
/// `rest.BeforeDelete`.
fn check_preconditions(
    res: &ResourceInfo,
    name: &str,
    current: &Value,
    opts: &DeleteOptions,
    namespace_rules: bool,
) -> Result<(), ApiError> {
    let conflict = |what: &str, wanted: &str, have: &str| {
        let why = match (namespace_rules, what) {
            (true, _) => format!(
                "Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {have}"
            ),
            (false, "UID") => format!(
                "the UID in the precondition ({wanted}) does not match the UID in record ({have}). The object might have been deleted and then recreated"
            ),
            (false, _) => format!(
                "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({have}). The object might have been modified"
            ),
        };
        let resource = if namespace_rules { res.group_resource() } else { res.group_kind() };
        ApiError::Conflict {
            group: res.group.into(),
            plural: res.plural.into(),
            name: name.into(),
            message: format!("Operation cannot be fulfilled on {resource} {name:?}: {why}"),
        }
    };
    if let Some(uid) = &opts.precondition_uid {
        let have = meta_str(current, "uid");
        if uid != have {
            return Err(conflict("UID", uid, have));
        }
    }
    if let Some(rv) = &opts.precondition_rv {
        let have = meta_str(current, "resourceVersion");
        if rv != have {
            return Err(conflict("ResourceVersion", rv, have));
        }
    }
    Ok(())
}

/// The propagation finalizers a delete adds or removes (store.go
/// `deletionFinalizersForGarbageCollection`).
fn apply_propagation(fins: &mut Vec<String>, opts: &DeleteOptions) {
    let set = |fins: &mut Vec<String>, f: &str, on: bool| {
        let has = fins.iter().any(|x| x == f);
        if on && !has {
            fins.push(f.to_string());
        } else if !on && has {
            fins.retain(|x| x != f);
        }
    };
    match (opts.propagation, opts.orphan_dependents) {
        (Some(Propagation::Orphan), _) | (None, Some(true)) => {
            set(fins, meta::ORPHAN_FINALIZER, true);
            set(fins, meta::FOREGROUND_FINALIZER, false);
        }
        (Some(Propagation::Foreground), _) => {
            set(fins, meta::FOREGROUND_FINALIZER, true);
            set(fins, meta::ORPHAN_FINALIZER, false);
        }
        (Some(Propagation::Background), _) => {
            set(fins, meta::ORPHAN_FINALIZER, false);
            set(fins, meta::FOREGROUND_FINALIZER, false);
        }
        (None, Some(false)) => set(fins, meta::ORPHAN_FINALIZER, false),
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::options::Propagation;

    fn opts(p: Option<Propagation>, o: Option<bool>) -> DeleteOptions {
        DeleteOptions { propagation: p, orphan_dependents: o, ..DeleteOptions::default() }
    }

    #[test]
    fn propagation_finalizers() {
        let mut f = vec!["x.io/keep".to_string()];
        apply_propagation(&mut f, &opts(Some(Propagation::Orphan), None));
        assert_eq!(f, ["x.io/keep", "orphan"]);
        apply_propagation(&mut f, &opts(Some(Propagation::Foreground), None));
        assert_eq!(f, ["x.io/keep", "foregroundDeletion"]);
        apply_propagation(&mut f, &opts(Some(Propagation::Background), None));
        assert_eq!(f, ["x.io/keep"]);
        apply_propagation(&mut f, &opts(None, Some(true)));
        assert_eq!(f, ["x.io/keep", "orphan"]);
        apply_propagation(&mut f, &opts(None, Some(false)));
        assert_eq!(f, ["x.io/keep"]);
    }

    /// rest.BeforeDelete over a pod (K8S staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go).
    #[test]
    fn before_delete_of_a_pod() {
        let pod = json!({"metadata": {"name": "p"},
                         "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}});
        assert_eq!(before_delete(&pod, None, 100), Grace::Set { at: 130, period: 30 });
        assert_eq!(before_delete(&pod, Some(5), 100), Grace::Set { at: 105, period: 5 });
        assert_eq!(before_delete(&pod, Some(-2), 100), Grace::Set { at: 101, period: 1 });
        let mut deleting = pod.clone();
        deleting["metadata"]["deletionTimestamp"] = json!(meta::rfc3339(130));
        deleting["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        // Only a shorter period changes it, moving the timestamp by the difference.
        assert_eq!(before_delete(&deleting, Some(10), 105), Grace::Set { at: 110, period: 10 });
        assert_eq!(before_delete(&deleting, Some(30), 105), Grace::Pending);
        assert_eq!(before_delete(&deleting, Some(60), 105), Grace::Pending);
        assert_eq!(before_delete(&deleting, None, 105), Grace::Pending);
        // A deletion already at 0 is not graceful: deleted now (or finalized).
        deleting["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert_eq!(before_delete(&deleting, Some(5), 105), Grace::NotGraceful);
    }
}
