//! The fault engine: the Faults (the kind whose `kubeRole` is `fault`) the filter chain applies
//! to the requests they match. It keeps them current from the store: the hub's filter marks a
//! change to any Fault as it is published, before its writer is answered, and the next request
//! reads them again, so a request after `kubectl apply` of a Fault already meets it. Faults
//! apply in name order, the first that fires wins; `after`, `times` and the seeded
//! `probability` count per process. What fired is written back to each Fault's `status`
//! through the registry, at most once a second, and counted in `/metrics`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lifecycle::Rng;
use serde_json::{Map, Value};

use crate::generated::{kind_of_role, RESOURCES};
use crate::object::duration;
use crate::object::error::{ApiError, Cause, Injected};
use crate::object::fault::{self, Request, Spec, CAUSE_TYPES, REASONS};
use crate::object::meta::now_rfc3339;
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::validation::{FieldValidation, Via};
use crate::object::At;
use crate::registry::Registry;
use crate::registry::{ListOptions, Target, WriteOptions};
use crate::resource::{KubeRole, ResourceInfo};
use crate::store::Subscription;

/// The field manager of the status writes.
const MANAGER: &str = "virt-apiserver-faults";

/// What a fired fault does to its request.
#[derive(Debug)]
pub enum Fired {
    /// Answer with this error instead.
    Answer(ApiError),
    /// Wait this long, then answer as without the fault.
    Delay(Duration),
    /// Close the connection with no answer.
    Drop,
    /// Let the watch start, then cut it (`WatchCut`, handed to the watch in the request's
    /// extensions).
    CutWatch(WatchCut),
    /// Answer a get or list from this many revisions back (`StaleRead`, handed to the read in
    /// the request's extensions).
    Stale(StaleRead),
}

/// Where a Fault cuts a watch stream: after this many events (bookmarks not counted), and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchCut {
    pub after_events: u64,
    pub how: CutHow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutHow {
    /// The response ends as at the watch's timeout.
    End,
    /// An ERROR event carrying a 410 Status, then the end.
    ErrorEvent,
    /// The connection ends with the response unfinished (HTTP/1.1's last chunk never sent), as
    /// a client sees a GOAWAY on a server that serves only HTTP/1.1.
    Abort,
}

/// A read a Fault sends into the past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleRead {
    pub revisions_behind: u64,
}

impl WatchCut {
    /// The 410 a cut answers or sends, as kube's watch cache words an expired version
    /// (K8S staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go).
    pub fn expired() -> ApiError {
        ApiError::Expired { message: "too old resource version".into(), continue_token: None }
    }
}

/// The Faults in force and what they counted.
pub struct Faults {
    res: &'static ResourceInfo,
    registry: Registry,
    seed: u64,
    /// Bumped as a change to a Fault is published.
    changed: Arc<AtomicU64>,
    /// Held for its filter, which queues nothing.
    _changes: Subscription,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The `changed` count the faults were read at.
    read_at: Option<u64>,
    faults: Arc<Vec<Loaded>>,
    /// By uid: a Fault replaced under its name counts afresh.
    counts: HashMap<String, Counts>,
    /// Firings by Fault name, for `/metrics`.
    fired_total: BTreeMap<String, u64>,
}

struct Loaded {
    name: String,
    uid: String,
    spec: Spec,
}

#[derive(Default, Clone)]
struct Counts {
    name: String,
    matched: u64,
    fired: u64,
    last_fired: Option<String>,
    /// What the last status write said: (matched, fired).
    written: (u64, u64),
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults").field("kind", &self.res.kind).finish()
    }
}

impl Faults {
    /// The engine over `registry`'s Faults, drawing probabilities and jitter from `seed`;
    /// `None` when the document has no Fault kind.
    pub fn new(registry: Registry, seed: u64) -> Option<Arc<Faults>> {
        let res = kind_of_role(KubeRole::Fault)?;
        let changed = Arc::new(AtomicU64::new(0));
        let prefix = crate::registry::keys::collection_prefix(res, None);
        let bump = changed.clone();
        // Never queued: the filter only marks the change, on the committing thread.
        let changes = registry.store().subscribe(move |ev| {
            if ev.key.starts_with(prefix.as_str()) {
                bump.fetch_add(1, Ordering::SeqCst);
            }
            false
        });
        let state = Mutex::new(State::default());
        Some(Arc::new(Faults { res, registry, seed, changed, _changes: changes, state }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a request on `group`/`resource` is on the Faults themselves (never faulted).
    pub fn is_own(&self, group: &str, resource: &str) -> bool {
        group == self.res.group && resource == self.res.plural
    }

    /// The Faults as stored now, read again after a change.
    async fn current(&self) -> Result<Arc<Vec<Loaded>>, ApiError> {
        let changed = self.changed.load(Ordering::SeqCst);
        {
            let st = self.lock();
            if st.read_at == Some(changed) {
                return Ok(st.faults.clone());
            }
        }
        let page = self.registry.list(self.res, None, &ListOptions::default()).await?;
        let mut faults: Vec<Loaded> = page
            .objects()?
            .iter()
            .filter_map(|o| {
                let spec = Spec::of(o)?;
                Some(Loaded {
                    name: meta_str(o, "name").into(),
                    uid: meta_str(o, "uid").into(),
                    spec,
                })
            })
            .collect();
        faults.sort_by(|a, b| a.name.cmp(&b.name));
        let faults = Arc::new(faults);
        let mut st = self.lock();
        st.counts.retain(|uid, _| faults.iter().any(|f| &f.uid == uid));
        st.faults = faults.clone();
        st.read_at = Some(changed);
        Ok(faults)
    }

    /// Whether some Fault that matches `req` selects by labels: the caller then reads the
    /// object's labels for `fire`.
    pub async fn wants_labels(&self, req: &Request<'_>) -> bool {
        let faults = self.current().await.unwrap_or_default();
        faults.iter().any(|f| f.spec.matches.label_selector.is_some() && f.spec.matches(req))
    }

    /// The first Fault, in name order, that fires on `req` (whose object has `labels`), and
    /// what it does; each firing logged with the request's `audit_id`.
    pub async fn fire(
        &self,
        req: &Request<'_>,
        method: &str,
        labels: Option<&Map<String, Value>>,
        audit_id: &str,
    ) -> Option<Fired> {
        let faults = match self.current().await {
            Ok(f) => f,
            Err(e) => {
                log::warn!("cannot read the faults: {e}");
                return None;
            }
        };
        let now = crate::object::table::now();
        let mut st = self.lock();
        for f in faults.iter() {
            let spec = &f.spec;
            if !spec.acts_on(req.verb)
                || !spec.matches(req)
                || !spec.selects(labels)
                || !spec.in_window(now)
            {
                continue;
            }
            let counts = st.counts.entry(f.uid.clone()).or_default();
            counts.name = f.name.clone();
            counts.matched += 1;
            if counts.matched <= spec.after || spec.times.is_some_and(|t| counts.fired >= t) {
                continue;
            }
            if let Some(p) = spec.probability {
                let n = counts.matched.to_string();
                let draw = Rng::derived(self.seed, &["fault", &f.name, &n]).next_u64();
                if (draw as f64) / (u64::MAX as f64) >= p {
                    continue;
                }
            }
            counts.fired += 1;
            counts.last_fired = Some(now_rfc3339());
            let fired = counts.fired;
            *st.fired_total.entry(f.name.clone()).or_default() += 1;
            // Shown at the default level: a test's log says which of its requests were faulted.
            log::warn!(
                "fault {:?} fired on {} {}/{} {:?} (Audit-Id {audit_id})",
                f.name,
                req.verb,
                req.group,
                req.resource,
                req.name
            );
            return Some(self.action(f, req, method, fired));
        }
        None
    }

    fn action(&self, f: &Loaded, req: &Request<'_>, method: &str, fired: u64) -> Fired {
        let a = &f.spec.action;
        if let Some(s) = &a.status {
            return Fired::Answer(status_error(s, req, method));
        }
        if let Some(d) = &a.delay {
            let base = duration::parse(&d.duration).unwrap_or_default();
            let jitter = d.jitter.as_deref().and_then(|j| duration::parse(j).ok());
            let extra = jitter.map_or(0, |j| {
                let n = fired.to_string();
                let ms = j.as_millis() as u64;
                Rng::derived(self.seed, &["fault-jitter", &f.name, &n]).below(ms + 1)
            });
            return Fired::Delay(base + Duration::from_millis(extra));
        }
        if let Some(w) = &a.watch {
            return match w.cut.as_str() {
                "expired" => Fired::Answer(WatchCut::expired()),
                cut => Fired::CutWatch(WatchCut {
                    after_events: w.after_events,
                    how: match cut {
                        "errorEvent" => CutHow::ErrorEvent,
                        "goaway" => CutHow::Abort,
                        _ => CutHow::End,
                    },
                }),
            };
        }
        if let Some(st) = &a.stale {
            return Fired::Stale(StaleRead { revisions_behind: st.revisions_behind.max(1) as u64 });
        }
        Fired::Drop
    }

    /// Each Fault's firings, for `/metrics`.
    pub fn fired_total(&self) -> Vec<(String, u64)> {
        self.lock().fired_total.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Writes what changed into the Faults' `status` once a second, through the registry.
    pub fn spawn_status_writer(self: &Arc<Faults>) {
        let this = self.clone();
        tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                this.write_status().await;
            }
        });
    }

    async fn write_status(&self) {
        let due: Vec<(String, Counts)> = {
            let st = self.lock();
            st.counts
                .iter()
                .filter(|(_, c)| c.written != (c.matched, c.fired))
                .map(|(u, c)| (u.clone(), c.clone()))
                .collect()
        };
        for (uid, c) in due {
            let edit = |o: &mut Value| -> Option<()> {
                if meta_str(o, "uid") != uid {
                    return None;
                }
                let mut status = Map::new();
                status.insert("matched".into(), c.matched.into());
                status.insert("fired".into(), c.fired.into());
                if let Some(t) = &c.last_fired {
                    status.insert("lastFiredTime".into(), t.clone().into());
                }
                o.as_object_mut()?.insert("status".into(), Value::Object(status));
                Some(())
            };
            let target = ("", c.name.as_str(), Part::Status);
            match self.registry.update_with(self.res, target, MANAGER, edit).await {
                Ok(_) | Err(ApiError::NotFound { .. }) => {
                    if let Some(k) = self.lock().counts.get_mut(&uid) {
                        k.written = (c.matched, c.fired);
                    }
                }
                Err(e) => log::warn!("cannot write the status of fault {:?}: {e}", c.name),
            }
        }
    }
}

/// The Status a `status` action answers: its reason, or the code's own as apimachinery's
/// `NewGenericServerResponse` gives it, and then its message with the request named
/// (K8S staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go).
fn status_error(s: &fault::StatusAction, req: &Request<'_>, method: &str) -> ApiError {
    let code = u16::try_from(s.code).unwrap_or(500);
    let (generic, generic_message) = fault::generic_reason(code, req.verb);
    let reason = REASONS.iter().find(|r| **r == s.reason).copied().unwrap_or(generic);
    let qualified = if req.group.is_empty() {
        req.resource.to_string()
    } else {
        format!("{}.{}", req.resource, req.group)
    };
    let message = if !s.message.is_empty() {
        s.message.clone()
    } else if req.name.is_empty() {
        format!("{generic_message} ({} {qualified})", method.to_ascii_lowercase())
    } else {
        format!("{generic_message} ({} {qualified} {})", method.to_ascii_lowercase(), req.name)
    };
    let causes = s
        .causes
        .iter()
        .map(|c| Cause {
            reason: CAUSE_TYPES.iter().find(|t| **t == c.reason).copied().unwrap_or(""),
            message: c.message.clone(),
            field: c.field.clone(),
        })
        .collect();
    ApiError::Injected(Box::new(Injected {
        code,
        reason,
        message,
        group: req.group.to_string(),
        resource: req.resource.to_string(),
        name: req.name.to_string(),
        retry_after_seconds: u32::try_from(s.retry_after_seconds).unwrap_or(0),
        causes,
    }))
}

/// The labels of the object a request names: the body's for a create or an update (JSON or
/// YAML), the stored object's for the other verbs on a named object.
pub async fn labels_of(
    registry: &Registry,
    req: &Request<'_>,
    body: Option<&[u8]>,
) -> Option<Map<String, Value>> {
    let obj: Value = match (req.verb, body) {
        ("create" | "update", Some(b)) => {
            serde_json::from_slice(b).ok().or_else(|| serde_yaml::from_slice(b).ok())?
        }
        _ if !req.name.is_empty() => {
            let res = RESOURCES.iter().find(|r| {
                r.group == req.group && r.plural == req.resource && r.version == r.storage_version
            })?;
            (*registry.get(res, req.namespace, req.name).await.ok()?).clone()
        }
        _ => return None,
    };
    Some(obj.at("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default())
}

/// Reads `--faults FILE`: YAML (one or more documents) or a JSON list, each document labelled
/// `FILE document N` (from 1) for the errors that name it.
pub fn read_file(path: &str) -> Result<Vec<(String, Value)>, String> {
    use serde::Deserialize as _;
    let text = std::fs::read_to_string(path).map_err(|e| format!("--faults {path}: {e}"))?;
    let docs: Vec<Value> = if text.trim_start().starts_with('[') {
        serde_json::from_str(&text).map_err(|e| format!("--faults {path}: {e}"))?
    } else {
        let mut out = Vec::new();
        for (i, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let v = Value::deserialize(doc)
                .map_err(|e| format!("--faults {path} document {}: {e}", i + 1))?;
            out.push(v);
        }
        out
    };
    Ok(docs
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_null())
        .map(|(i, v)| (format!("--faults {path} document {}", i + 1), v))
        .collect())
}

/// Creates the Faults `--faults` read, through the registry as a client's create goes; one that
/// exists already gets the file's spec. The first refusal is the start's, naming its document.
pub async fn load(registry: &Registry, docs: &[(String, Value)]) -> Result<(), String> {
    if docs.is_empty() {
        return Ok(());
    }
    let res = kind_of_role(KubeRole::Fault).ok_or("--faults: this document has no Fault kind")?;
    for (label, obj) in docs {
        let target = Target::new(None, None);
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Strict,
            manager: MANAGER.into(),
        };
        let created = registry.create(res, &target, obj.clone(), Via::Body(&[]), &opts).await;
        let result = match created {
            Err(ApiError::AlreadyExists { .. }) => {
                let name = obj.at("/metadata/name").and_then(Value::as_str).unwrap_or("");
                let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
                let edit = |o: &mut Value| {
                    o.as_object_mut()?.insert("spec".into(), spec.clone());
                    Some(())
                };
                registry.update_with(res, ("", name, Part::Main), MANAGER, edit).await
            }
            other => other,
        };
        result.map_err(|e| format!("{label}: {e}"))?;
    }
    Ok(())
}
