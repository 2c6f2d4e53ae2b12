//! The simulated runtime (`--simulate`): KubeVirt's controllers as data. It runs the stages of
//! the lifecycles (the built-in `openapi/lifecycles.yaml`, extended or replaced by
//! `--simulate-config`; format and language in the `lifecycle` crate) against stored objects.
//!
//! It keeps no state that matters: on start, and whenever the event hub says it lagged (a reset
//! too, which also makes it register its cluster again), it
//! evaluates every stored object of the kinds with stages, so a restart resumes each lifecycle
//! from what is stored. Each committed change of such a kind (or of a kind their stages relate
//! to) re-evaluates the objects it concerns; a matching stage is scheduled after its delay
//! (`--simulate-speed` scales it), its selector checked again when it fires, and its steps
//! written through the registry as its field manager, each on the condition that the object is
//! still at the revision the stage read (a stale plan stops and the object is evaluated again).
//! Jitter, names, addresses and nodes come from a generator seeded by `--simulate-seed`, the
//! stage and the object, so two runs with one seed repeat them; a certificate `caCert()` makes
//! does not repeat (its key comes from the system's random source). What it holds of an object (its
//! stages scheduled, their timers, how often each fired) goes with the object, so its memory is
//! bounded by what exists, however many objects came and went.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use lifecycle::{Ctx, Kind, Lifecycles, ResourceRef, Rng};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::related::{self, Indexes};
use super::write::{self, Applied, Guard, Planned, Writer};
use crate::controllers::recorder::Recorder;
use crate::object::meta::now_rfc3339;
use crate::registry::keys::{self, collection_prefix};
use crate::registry::Registry;
use crate::resource::ResourceInfo;
use crate::store::{Event, EventType, ListRequest};

/// How the simulation runs.
#[derive(Debug, Clone)]
pub struct Config {
    pub lifecycles: Lifecycles,
    /// A factor on every delay (0: each stage as soon as it matches).
    pub speed: f64,
    pub seed: u64,
    pub nodes: usize,
}

/// The served kind (storage version) a lifecycle names.
fn resource(r: &ResourceRef) -> Option<&'static ResourceInfo> {
    super::related::served(r)
}

/// Starts the engine on the current (single-threaded) runtime.
pub fn spawn(registry: Registry, cfg: Config) {
    let (engine, rx) = Engine::new(registry, cfg);
    tokio::task::spawn_local(run(engine, rx));
}

enum Msg {
    Evaluate(usize, String),
    Fire(usize, usize, String),
}

/// A stage of a lifecycle kind: (kind, stage).
type StageId = (usize, usize);

/// What the engine holds of one object.
#[derive(Default)]
struct Held {
    /// Stages scheduled and not yet done, each with its timer while it waits (cancelled when
    /// the object goes first). A stage never runs twice at once for one object.
    pending: HashMap<StageId, AbortHandle>,
    /// Of those, the ones running, and the ones whose object changed meanwhile (evaluated
    /// again once the run ends).
    running: HashSet<StageId>,
    again: HashSet<StageId>,
    /// How often each stage fired for the object, mixed into its generator: the object's
    /// sequence of values repeats with the seed, so it is kept as long as the object lives.
    fired: HashMap<StageId, u64>,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.pending.is_empty()
            && self.running.is_empty()
            && self.again.is_empty()
            && self.fired.is_empty()
    }

    /// Forgets the object, but for the stages running on it (their run ends on its own and
    /// finds it gone): cancels the timers of the others.
    fn forget(&mut self) {
        let running = &self.running;
        self.pending.retain(|id, timer| {
            let keep = running.contains(id);
            if !keep {
                timer.abort();
            }
            keep
        });
        self.again.clear();
        self.fired.clear();
    }
}

struct Engine {
    registry: Registry,
    cfg: Config,
    /// Lifecycle kinds (index into `cfg.lifecycles.kinds`) with their served kind.
    kinds: Vec<(usize, &'static ResourceInfo)>,
    /// The key prefixes of the kinds the engine reacts to: its own and those they relate to.
    watched: Vec<String>,
    /// The reverse lookups of the relations by controller and by field.
    indexes: Indexes,
    /// Per kind (as `kinds`), per stage: the stages that supersede it.
    superseders: Vec<Vec<Vec<usize>>>,
    /// What the engine holds of each object, by key; an object's entry goes with the object
    /// (its delete event, or a rescan that no longer finds it), so the engine's memory is
    /// bounded by what exists, not by what ever did.
    objects: RefCell<HashMap<String, Held>>,
    /// One per field manager of the lifecycles (their correlators are bounded LRUs).
    recorders: RefCell<BTreeMap<String, Recorder>>,
    tx: mpsc::UnboundedSender<Msg>,
}

async fn run(engine: Rc<Engine>, mut rx: mpsc::UnboundedReceiver<Msg>) {
    // The engine's own filter, not the process's: an engine runs per leadership term, and a
    // replica may lead again. It runs on the committing thread for every commit.
    let watched = engine.watched.clone();
    let mut events = engine
        .registry
        .store()
        .subscribe(move |ev| watched.iter().any(|p| ev.key.starts_with(p.as_str())));
    engine.rescan().await;
    engine.register_cluster().await;
    loop {
        tokio::select! {
            batch = events.batch() => match batch {
                Some(batch) => {
                    engine.changed(&batch.events).await;
                    if batch.lagged {
                        engine.rescan().await;
                        // A reset (`POST /reset`) may have taken the cluster's nodes with it.
                        engine.register_cluster().await;
                    }
                }
                None => return,
            },
            msg = rx.recv() => match msg {
                Some(Msg::Evaluate(k, key)) => engine.evaluate(k, &key).await,
                Some(Msg::Fire(k, s, key)) => {
                    let engine = engine.clone();
                    tokio::task::spawn_local(async move { engine.fire(k, s, key).await });
                }
                None => return,
            },
        }
    }
}

impl Engine {
    /// The engine of `cfg`'s lifecycles, and the receiver of its own messages for `run`.
    fn new(registry: Registry, cfg: Config) -> (Rc<Engine>, mpsc::UnboundedReceiver<Msg>) {
        let mut kinds = Vec::new();
        for (i, k) in cfg.lifecycles.kinds.iter().enumerate() {
            if let Some(res) = resource(&k.resource) {
                kinds.push((i, res));
            }
        }
        let mut watched: Vec<String> = Vec::new();
        for (i, res) in &kinds {
            watched.push(collection_prefix(res, None));
            for r in cfg.lifecycles.kinds[*i].related.values() {
                if let Some(res) = resource(&r.resource) {
                    watched.push(collection_prefix(res, None));
                }
            }
        }
        let indexes = Indexes::new(&cfg.lifecycles, &kinds);
        let superseders = kinds
            .iter()
            .map(|(i, _)| {
                let stages = &cfg.lifecycles.kinds[*i].stages;
                let by = |s: &lifecycle::Stage| {
                    (0..stages.len()).filter(|&t| stages[t].supersedes.contains(&s.name)).collect()
                };
                stages.iter().map(by).collect()
            })
            .collect();
        watched.sort();
        watched.dedup();
        let (tx, rx) = mpsc::unbounded_channel();
        let engine = Engine {
            registry,
            cfg,
            kinds,
            watched,
            indexes,
            superseders,
            objects: RefCell::default(),
            recorders: RefCell::default(),
            tx,
        };
        (Rc::new(engine), rx)
    }

    /// The simulated cluster's own objects (`cluster.perNode`, `cluster.objects`), each created
    /// unless it exists and then its status written, as a kubelet registers its node and
    /// reports it.
    async fn register_cluster(&self) {
        let (now, nodes) = (now_rfc3339(), self.cfg.nodes);
        for (i, o) in self.cfg.lifecycles.cluster.objects.iter().enumerate() {
            let Some(res) = resource(&o.resource) else { continue };
            let kind = Kind { resource: o.resource.clone(), ..Kind::default() };
            let rng = Rng::derived(self.cfg.seed, &["cluster-object", &i.to_string()]);
            let mut object =
                Ctx::new(&kind, &Value::Null, now.clone(), nodes, rng).render(&o.template);
            lifecycle::eval::strip_nulls(&mut object);
            if let Err(e) = self.register(res, object, &o.manager).await {
                log::warn!("registering the simulated cluster's {}: {e}", res.kind);
            }
        }
        for o in &self.cfg.lifecycles.cluster.per_node {
            let Some(res) = resource(&o.resource) else { continue };
            let kind = Kind { resource: o.resource.clone(), ..Kind::default() };
            for i in 0..nodes {
                let rng = Rng::derived(self.cfg.seed, &["cluster", &i.to_string()]);
                let mut ctx = Ctx::new(&kind, &Value::Null, now.clone(), nodes, rng);
                ctx.named.insert("node".into(), Arc::new(lifecycle::expr::node_name(i).into()));
                ctx.named.insert("nodeIP".into(), Arc::new(lifecycle::node_ip(i).into()));
                let mut object = ctx.render(&o.template);
                lifecycle::eval::strip_nulls(&mut object);
                if let Err(e) = self.register(res, object, &o.manager).await {
                    log::warn!("registering the simulated cluster's {}: {e}", res.kind);
                }
            }
        }
    }

    /// Creates `object` unless it exists, then writes its status through the status
    /// subresource (which a create leaves out).
    async fn register(
        &self,
        res: &'static ResourceInfo,
        mut object: Value,
        manager: &str,
    ) -> Result<(), crate::object::error::ApiError> {
        use crate::object::error::ApiError;
        use crate::object::subresource::Part;
        use crate::object::validation::{FieldValidation, Via};
        use crate::registry::{Target, WriteOptions};
        let status = match res.status_subresource {
            true => object.as_object_mut().and_then(|m| m.remove("status")),
            false => None,
        };
        let name = crate::object::meta_str(&object, "name").to_string();
        let ns = crate::object::meta_str(&object, "namespace").to_string();
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Strict,
            manager: manager.to_string(),
        };
        let at = Target::new((!ns.is_empty()).then(|| ns.clone()), None);
        match self.registry.create(res, &at, object, Via::Body(&[]), &opts).await {
            Ok(_) => {}
            // Registered in an earlier term: left as it is.
            Err(ApiError::AlreadyExists { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
        let Some(status) = status else { return Ok(()) };
        let part = (ns.as_str(), name.as_str(), Part::Status);
        self.registry
            .update_with(res, part, manager, |obj| {
                obj.as_object_mut()?.insert("status".into(), status.clone());
                Some(())
            })
            .await
            .map(drop)
    }

    fn kind(&self, k: usize) -> (&Kind, &'static ResourceInfo) {
        let (i, res) = self.kinds[k];
        (&self.cfg.lifecycles.kinds[i], res)
    }

    /// Records the object at `key` as it now is (`None`: gone) in the reverse lookups.
    fn index(&self, key: &str, obj: Option<&Value>) {
        self.indexes.index(key, obj, |k| self.kind(k).0);
    }

    /// `f` on what the engine holds of the object at `key`; an entry left empty goes.
    fn held<R>(&self, key: &str, f: impl FnOnce(&mut Held) -> R) -> R {
        let mut objects = self.objects.borrow_mut();
        let Some(held) = objects.get_mut(key) else {
            let mut held = Held::default();
            let r = f(&mut held);
            if !held.is_empty() {
                objects.insert(key.to_string(), held);
            }
            return r;
        };
        let r = f(held);
        if held.is_empty() {
            objects.remove(key);
        }
        r
    }

    /// The object at `key` is gone: what the engine held of it goes too, but for the stages
    /// running on it (`fire` drops the rest when they end).
    fn forget(&self, key: &str) {
        self.indexes.forget(key);
        let mut objects = self.objects.borrow_mut();
        if let Some(held) = objects.get_mut(key) {
            held.forget();
            if held.is_empty() {
                objects.remove(key);
            }
        }
    }

    /// Every stored object of every kind with stages, after the indexes are built anew; what
    /// the engine held of objects no longer stored (their deletes fell in a lag) goes.
    async fn rescan(&self) {
        self.indexes.clear();
        for prefix in self.indexes.prefixes() {
            let all = ListRequest { prefix: prefix.clone(), ..ListRequest::default() };
            match self.registry.store().list_raw(all).await {
                Ok(list) => {
                    for (key, bytes) in list.items {
                        if let Ok(obj) = serde_json::from_slice::<Value>(&bytes) {
                            self.index(&key, Some(&obj));
                        }
                    }
                }
                Err(e) => log::warn!("simulation: listing {prefix} failed: {e}"),
            }
        }
        // What was held before the lists were read: only that can be of an object they miss
        // for being gone.
        let before: Vec<String> = self.objects.borrow().keys().cloned().collect();
        let mut stored = HashSet::new();
        let mut listed = true;
        for k in 0..self.kinds.len() {
            let res = self.kinds[k].1;
            let all =
                ListRequest { prefix: collection_prefix(res, None), ..ListRequest::default() };
            match self.registry.store().list_raw(all).await {
                Ok(list) => {
                    for (key, _) in list.items {
                        self.evaluate(k, &key).await;
                        stored.insert(key);
                    }
                }
                Err(e) => {
                    log::warn!("simulation: listing {} failed: {e}", res.plural);
                    listed = false;
                }
            }
        }
        // Only after complete lists; and an object created since its list was read is kept.
        for key in before.iter().filter(|k| listed && !stored.contains(*k)) {
            if self.registry.store().get_raw(key).is_none() {
                self.forget(key);
            }
        }
    }

    /// Committed changes, in order: their own objects, and the objects whose stages relate to
    /// them, each evaluated once from the state the changes leave (a burst of writes to one
    /// object, or to the pods of one VMI, is one evaluation).
    async fn changed(&self, events: &[Arc<Event>]) {
        let mut todo: Vec<(usize, String)> = Vec::new();
        let mut seen: HashSet<(usize, String)> = HashSet::new();
        let mut add = |k: usize, key: String| {
            if seen.insert((k, key.clone())) {
                todo.push((k, key));
            }
        };
        for ev in events {
            let Some((group, plural, ns, name)) = keys::split(&ev.key) else { continue };
            let deleted = ev.kind == EventType::Deleted;
            self.index(&ev.key, (!deleted).then_some(&*ev.object));
            if deleted {
                self.forget(&ev.key);
            }
            for k in 0..self.kinds.len() {
                let (kind, res) = self.kind(k);
                if res.group == group && res.plural == plural {
                    add(k, ev.key.clone());
                }
                let keys = self
                    .indexes
                    .relating(
                        &self.registry,
                        (k, kind, res),
                        (group, plural),
                        (ns, name),
                        &ev.object,
                    )
                    .await;
                for key in keys {
                    add(k, key);
                }
            }
        }
        for (k, key) in todo {
            self.evaluate(k, &key).await;
        }
    }

    /// The related objects of `obj` that exist (`related::related`).
    async fn related(&self, k: usize, obj: &Value) -> BTreeMap<String, Arc<Value>> {
        let (kind, res) = self.kind(k);
        // Reads `field` paths and `where` filters; no related objects in it.
        let ctx = Ctx::new(kind, obj, now_rfc3339(), self.cfg.nodes, Rng::new(self.cfg.seed));
        related::related(&self.registry, (kind, Some((&self.indexes, k))), res, obj, &ctx).await
    }

    fn rng(&self, k: usize, s: usize, key: &str, purpose: &str) -> Rng {
        let (kind, _) = self.kind(k);
        let objects = self.objects.borrow();
        let count = objects.get(key).and_then(|h| h.fired.get(&(k, s))).copied().unwrap_or(0);
        let stage = &kind.stages[s].name;
        Rng::derived(self.cfg.seed, &[stage, key, &count.to_string(), purpose])
    }

    /// Schedules every stage of object `key` whose selector holds and is not already scheduled.
    async fn evaluate(&self, k: usize, key: &str) {
        let (kind, _) = self.kind(k);
        let Ok(Some(obj)) = self.registry.store().get(key).await else { return };
        let mut ctx = Ctx::new(kind, &obj, now_rfc3339(), self.cfg.nodes, Rng::new(self.cfg.seed));
        ctx.named = self.related(k, &obj).await;
        // `holds` for every stage, each selector matched at most once.
        let mut selected: Vec<Option<bool>> = vec![None; kind.stages.len()];
        let mut selects =
            |t: usize| *selected[t].get_or_insert_with(|| ctx.matches(&kind.stages[t].selector));
        for (s, stage) in kind.stages.iter().enumerate() {
            let id = (k, s);
            let scheduled = self.held(key, |h| {
                if h.running.contains(&id) {
                    h.again.insert(id);
                }
                h.pending.contains_key(&id)
            });
            if scheduled || !selects(s) || self.superseders[k][s].iter().any(|&t| selects(t)) {
                continue;
            }
            let mut rng = self.rng(k, s, key, "delay");
            let ms = stage.delay.ms + rng.below(stage.delay.jitter_ms);
            let mut delay = Duration::from_secs_f64(ms as f64 / 1000.0 * self.cfg.speed.max(0.0));
            if let Some(wait) = ctx.until(&stage.delay).and_then(until_from_now) {
                delay = delay.max(wait);
            }
            let (tx, of) = (self.tx.clone(), key.to_string());
            let timer = tokio::task::spawn_local(async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let _ = tx.send(Msg::Fire(k, s, of));
            });
            self.held(key, |h| h.pending.insert(id, timer.abort_handle()));
        }
    }

    fn recorder(&self, manager: &str) -> Recorder {
        let mut recorders = self.recorders.borrow_mut();
        recorders
            .entry(manager.to_string())
            .or_insert_with(|| {
                let component = self.cfg.lifecycles.managers.get(manager);
                let component = component.map_or(manager, |m| m.component.as_str());
                Recorder::new(self.registry.clone(), manager, component, "")
            })
            .clone()
    }

    /// Runs stage `s` on object `key` if its selector still holds.
    async fn fire(&self, k: usize, s: usize, key: String) {
        let id = (k, s);
        // Forgotten while its timer's message was queued: the object is gone.
        if !self.held(&key, |h| h.pending.contains_key(&id) && h.running.insert(id)) {
            return;
        }
        self.run_stage(k, s, &key).await;
        let again = self.held(&key, |h| {
            h.running.remove(&id);
            h.pending.remove(&id);
            h.again.remove(&id)
        });
        if self.registry.store().get_raw(&key).is_none() {
            // Gone while it ran: its delete may have come before the run counted it, or marked
            // it to be evaluated again.
            self.held(&key, |h| {
                if h.running.is_empty() {
                    h.forget();
                }
            });
        } else if again {
            let _ = self.tx.send(Msg::Evaluate(k, key));
        }
    }

    async fn run_stage(&self, k: usize, s: usize, key: &str) {
        let id = (k, s);
        let (kind, res) = self.kind(k);
        let stage = &kind.stages[s];
        let Ok(Some(obj)) = self.registry.store().get(key).await else { return };
        let rng = self.rng(k, s, key, "values");
        let mut ctx = Ctx::new(kind, &obj, now_rfc3339(), self.cfg.nodes, rng);
        ctx.named = self.related(k, &obj).await;
        // Here only: lets and steps render once per firing (the checker keeps caCert() to them).
        ctx.ca_cert = Some(ca_cert);
        if !holds(kind, s, &ctx) {
            return;
        }
        // The time waited for moved later since the stage was scheduled: schedule it again.
        if ctx.until(&stage.delay).and_then(until_from_now).is_some() {
            self.held(key, |h| h.again.insert(id));
            return;
        }
        self.held(key, |h| *h.fired.entry(id).or_default() += 1);
        let plan = plan_stage(kind, res, s, &mut ctx);
        // The revision each written object must still be at: the one this plan read.
        let mut revisions: HashMap<String, u64> = HashMap::new();
        let recorder = self.recorder(&stage.manager);
        let writer =
            Writer { registry: &self.registry, manager: &stage.manager, recorder: &recorder };
        for planned in &plan {
            let key_of = planned.key();
            let expected = *revisions.entry(key_of.clone()).or_insert(planned.revision);
            match writer.apply(planned, Guard::Revision(expected)).await {
                Ok(Applied::Rev(rev)) => {
                    revisions.insert(key_of, rev);
                }
                Ok(Applied::Nothing) => {}
                // The state moved on: decide again from the new one, drawing the same values (a
                // stage that lost a race to a write beside it is the same decision retried, so
                // a seed still repeats what it drew).
                Ok(Applied::Stale) => {
                    self.held(key, |h| {
                        h.again.insert(id);
                        if let Some(n) = h.fired.get_mut(&id) {
                            *n = n.saturating_sub(1);
                        }
                    });
                    return;
                }
                // Not retried at once: the object's next change evaluates it again.
                Err(e) => {
                    log::warn!("simulation: stage {} on {key}: {e}", stage.name);
                    return;
                }
            }
        }
    }
}

/// Whether stage `s` of `kind` fires for the object `ctx` reads (with its related objects): its
/// selector holds, and no stage superseding it does. Pure.
pub fn holds(kind: &Kind, s: usize, ctx: &Ctx<'_>) -> bool {
    ctx.matches(&kind.stages[s].selector) && !superseded(kind, s, ctx)
}

/// What stage `s` of `kind` (served as `res`) writes when it fires for the object `ctx` reads:
/// its `let`s bound in `ctx`, then its steps planned, in order. Pure, as KWOK's stages are:
/// from objects to planned writes, which the engine then applies.
pub fn plan_stage(
    kind: &Kind,
    res: &'static ResourceInfo,
    s: usize,
    ctx: &mut Ctx<'_>,
) -> Vec<Planned> {
    let stage = &kind.stages[s];
    ctx.bind(&stage.lets);
    let obj = ctx.object;
    stage.steps.iter().filter_map(|step| write::plan(kind, res, obj, step, ctx)).collect()
}

/// How long until Unix second `at` (`None` once it has come). Times are written at seconds, so
/// the wait runs to the end of that second.
fn until_from_now(at: i64) -> Option<Duration> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    let at = Duration::from_secs(u64::try_from(at).ok()?);
    at.checked_sub(now).filter(|d| !d.is_zero())
}

/// `caCert()`: a self-signed CA certificate, PEM, as virt-operator makes the export CA
/// (KubeVirt `pkg/certificates/triple/cert/cert.go`, `NewSelfSignedCACert`: CA:true; usages
/// certSign, digitalSignature, keyEncipherment; valid from now). Its key is ECDSA P-256 where
/// KubeVirt's is RSA 2048 (ring generates no RSA keys), fresh from the system's random source:
/// ring takes no seeded generator, so `--simulate-seed` does not repeat it. The serial number
/// is rcgen's, from the key. Trimmed, as `links.go` trims the CA bundle it writes.
fn ca_cert(common_name: &str, not_before: i64, not_after: i64) -> Option<String> {
    let at = |secs: i64| {
        let secs = u64::try_from(secs).ok()?;
        Some(rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(secs))
    };
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
        rcgen::KeyUsagePurpose::KeyEncipherment,
    ];
    params.not_before = at(not_before)?;
    params.not_after = at(not_after)?;
    let made = rcgen::KeyPair::generate().and_then(|key| params.self_signed(&key));
    match made {
        Ok(cert) => Some(cert.pem().trim_end().to_string()),
        Err(e) => {
            log::warn!("simulation: making a CA certificate for {common_name:?} failed: {e}");
            None
        }
    }
}

/// Whether another stage of the kind that supersedes stage `s` holds of the object.
fn superseded(kind: &Kind, s: usize, ctx: &Ctx<'_>) -> bool {
    let name = &kind.stages[s].name;
    kind.stages.iter().any(|t| t.supersedes.contains(name) && ctx.matches(&t.selector))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Arc;

    use serde_json::json;
    use tokio::task::LocalSet;

    use super::*;
    use crate::behaviour::write::Edit;
    use crate::object::subresource::Part;
    use crate::object::validation::{FieldValidation, Via};
    use crate::registry::keys::object_key;
    use crate::registry::{DeleteOptions, ListOptions, Target, WriteOptions};
    use crate::store::{Store, StoreConfig};

    const NS: &str = "sim";

    /// The built-in program's kind served as `plural`, and the index of its stage `stage`.
    fn stage_of(lc: &Lifecycles, plural: &str, stage: &str) -> (usize, usize) {
        let res = served(plural);
        let k = lc
            .kinds
            .iter()
            .position(|k| resource(&k.resource).is_some_and(|r| std::ptr::eq(r, res)));
        let k = k.unwrap();
        (k, lc.kinds[k].stages.iter().position(|s| s.name == stage).unwrap())
    }

    /// A stage as a pure function, as KWOK's stages are tested: objects in, planned writes out.
    #[test]
    fn a_stage_plans_its_writes_from_the_objects_it_reads() {
        let lc = super::super::load(None).unwrap();
        let vms = served("virtualmachines");
        let vm = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
            "metadata": {"name": "vm1", "namespace": NS, "uid": "u-1", "generation": 3,
                         "resourceVersion": "41"},
            "spec": {"runStrategy": "Always", "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"domain": {"devices": {}}}}}});
        let (k, init) = stage_of(&lc, "virtualmachines", "vm-initialize");
        let kind = &lc.kinds[k];
        let mut ctx = Ctx::new(kind, &vm, "2026-01-01T00:00:00Z".into(), 2, Rng::new(7));
        assert!(holds(kind, init, &ctx));
        let plan = plan_stage(kind, vms, init, &mut ctx);
        let Edit::Finalizers { add, remove } = &plan[0].edit else { panic!("{plan:?}") };
        assert_eq!(
            (add.as_slice(), remove.len()),
            (&["kubevirt.io/virtualMachineControllerFinalize".to_string()][..], 0)
        );
        assert_eq!((plan[0].name.as_str(), plan[0].revision), ("vm1", 41));
        assert!(matches!(&plan[1].edit, Edit::Merge { part: Part::Main, .. }));

        // Initialized and wanting a VMI, with none related: vm-start creates it, and says so.
        let mut vm = vm.clone();
        vm["metadata"]["finalizers"] = json!(["kubevirt.io/virtualMachineControllerFinalize"]);
        let (_, start) = stage_of(&lc, "virtualmachines", "vm-start");
        let mut ctx = Ctx::new(kind, &vm, "2026-01-01T00:00:00Z".into(), 2, Rng::new(7));
        assert!(!holds(kind, init, &ctx));
        assert!(holds(kind, start, &ctx));
        let plan = plan_stage(kind, vms, start, &mut ctx);
        let Edit::Create { res, object } = &plan[0].edit else { panic!("{plan:?}") };
        assert_eq!(res.plural, "virtualmachineinstances");
        assert_eq!(object["metadata"]["name"], "vm1");
        assert_eq!(object["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(object["metadata"]["annotations"]["kubevirt.io/vm-generation"], "3");
        assert_eq!(object["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(object["status"]["phase"], "Pending");
        let Edit::Event { reason, message, .. } = &plan[1].edit else { panic!("{plan:?}") };
        assert_eq!(reason, "SuccessfulCreate");
        assert!(message.ends_with("instance vm1"), "{message}");

        // With its VMI there, vm-start does not fire.
        let mut ctx = Ctx::new(kind, &vm, "2026-01-01T00:00:00Z".into(), 2, Rng::new(7));
        ctx.named.insert("vmi".into(), Arc::new(json!({"metadata": {"name": "vm1"}})));
        assert!(!holds(kind, start, &ctx));
    }

    impl Engine {
        /// The objects it holds something of, and the keys in its reverse indexes.
        fn sizes(&self) -> (usize, usize) {
            let indexed = self.indexes.len();
            (self.objects.borrow().len(), indexed)
        }
    }

    /// An engine over an in-memory store, whose namespaces need not be created first.
    fn engine(speed: f64) -> (Rc<Engine>, mpsc::UnboundedReceiver<Msg>) {
        let store = Store::open(StoreConfig::new(crate::store::sqlite::MEMORY)).unwrap();
        let registry = Registry::new(store).with_implicit_namespaces(true);
        Engine::new(
            registry,
            // Room for the tests' hundreds of launcher pods (110 a node).
            Config { lifecycles: super::super::load(None).unwrap(), speed, seed: 7, nodes: 8 },
        )
    }

    fn served(plural: &str) -> &'static ResourceInfo {
        let stored = |r: &&ResourceInfo| r.plural == plural && r.version == r.storage_version;
        crate::generated::RESOURCES.iter().find(stored).unwrap()
    }

    async fn create_vm(registry: &Registry, name: &str) {
        let vm = json!({
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
            "metadata": {"name": name},
            "spec": {"runStrategy": "Always", "template": {"spec": {
                "domain": {"devices": {}, "resources": {"requests": {"memory": "64M"}}}}}}
        });
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Strict,
            manager: "test".into(),
        };
        let target = Target::new(Some(NS.into()), None);
        let res = served("virtualmachines");
        registry.create(res, &target, vm, Via::Body(&[]), &opts).await.unwrap();
    }

    async fn list(registry: &Registry, plural: &str) -> Vec<Arc<Value>> {
        let page = registry.list(served(plural), Some(NS), &ListOptions::default()).await;
        page.unwrap().objects().unwrap()
    }

    /// Waits for `done` for up to `secs` seconds.
    async fn within<F: Future<Output = bool>>(secs: u64, what: &str, mut done: impl FnMut() -> F) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        while !done().await {
            assert!(tokio::time::Instant::now() < deadline, "{what} within {secs} s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Hundreds of VMs run, are deleted and go: the engine then holds nothing of them (it
    /// counted each stage's firings per object, and indexed each VMI by its VM).
    #[tokio::test]
    async fn what_the_engine_holds_goes_with_the_objects() {
        const N: usize = 300;
        let (engine, rx) = engine(0.0);
        let registry = engine.registry.clone();
        LocalSet::new()
            .run_until(async move {
                tokio::task::spawn_local(run(engine.clone(), rx));
                // The simulated cluster's scheduler places the launcher pods.
                crate::controllers::scheduler::spawn(registry.clone(), 7);
                for i in 0..N {
                    create_vm(&registry, &format!("vm-{i}")).await;
                }
                within(300, "every VM running", || async {
                    let vms = list(&registry, "virtualmachines").await;
                    vms.iter().filter(|v| v["status"]["printableStatus"] == "Running").count() == N
                })
                .await;
                let (held, indexed) = engine.sizes();
                assert!(held >= 2 * N && indexed >= N, "VMs and VMIs held: {held}, {indexed}");
                let res = served("virtualmachines");
                for i in 0..N {
                    let name = format!("vm-{i}");
                    registry.delete(res, NS, &name, &DeleteOptions::default()).await.unwrap();
                }
                within(300, "every VM and VMI gone", || async {
                    list(&registry, "virtualmachines").await.is_empty()
                        && list(&registry, "virtualmachineinstances").await.is_empty()
                })
                .await;
                within(10, "nothing held", || async { engine.sizes() == (0, 0) }).await;
            })
            .await;
    }

    /// Stages scheduled for objects deleted before they fire go at once, their timers with
    /// them, not when the delay (here tens of seconds) ends.
    #[tokio::test]
    async fn a_deleted_objects_timers_are_cancelled() {
        const N: usize = 50;
        let (engine, rx) = engine(1000.0);
        let registry = engine.registry.clone();
        LocalSet::new()
            .run_until(async move {
                tokio::task::spawn_local(run(engine.clone(), rx));
                for i in 0..N {
                    create_vm(&registry, &format!("vm-{i}")).await;
                }
                within(30, "a stage scheduled for each VM", || async { engine.sizes().0 == N })
                    .await;
                let res = served("virtualmachines");
                for i in 0..N {
                    let name = format!("vm-{i}");
                    registry.delete(res, NS, &name, &DeleteOptions::default()).await.unwrap();
                }
                within(5, "nothing held", || async { engine.sizes() == (0, 0) }).await;
            })
            .await;
    }

    /// A rescan (after a lag, whose deletes the engine never saw) forgets the objects no longer
    /// stored, cancelling their timers, and keeps the counts of live ones, which their values
    /// are drawn from.
    #[tokio::test]
    async fn a_rescan_forgets_what_is_gone_and_keeps_what_lives() {
        let (engine, _rx) = engine(1000.0);
        let registry = engine.registry.clone();
        LocalSet::new()
            .run_until(async move {
                create_vm(&registry, "live").await;
                let live = object_key(served("virtualmachines"), NS, "live");
                let gone = object_key(served("virtualmachines"), NS, "gone");
                let timer = tokio::task::spawn_local(tokio::time::sleep(Duration::from_secs(600)));
                engine.held(&gone, |h| {
                    h.fired.insert((0, 1), 4);
                    h.pending.insert((0, 0), timer.abort_handle());
                });
                engine.held(&live, |h| h.fired.insert((0, 1), 3));
                let before = engine.rng(0, 1, &live, "values").below(1 << 30);
                engine.rescan().await;
                assert!(!engine.objects.borrow().contains_key(&gone));
                assert!(timer.await.unwrap_err().is_cancelled());
                let held = engine.objects.borrow();
                assert_eq!(held[&live].fired, HashMap::from([((0, 1), 3)]));
                assert!(!held[&live].pending.is_empty(), "the live VM's first stage scheduled");
                drop(held);
                assert_eq!(engine.rng(0, 1, &live, "values").below(1 << 30), before);
            })
            .await;
    }

    #[test]
    fn a_time_to_wait_for_is_in_the_future_only() {
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                as i64;
        let wait = until_from_now(now + 60).unwrap();
        assert!(wait > Duration::from_secs(58) && wait <= Duration::from_secs(60), "{wait:?}");
        assert_eq!(until_from_now(now - 1), None);
        assert_eq!(until_from_now(-5), None);
    }

    #[test]
    fn a_ca_certificate_is_a_self_signed_ca_of_its_name_and_validity() {
        let pem = ca_cert("export.kubevirt.io@1767225600", 1_767_225_600, 1_767_232_800).unwrap();
        assert!(pem.ends_with("-----END CERTIFICATE-----"), "{pem:?}");
        let (rest, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        assert!(rest.is_empty());
        let cert = block.parse_x509().unwrap();
        assert!(cert.is_ca());
        assert!(cert.key_usage().unwrap().unwrap().value.key_cert_sign());
        assert_eq!(cert.subject().as_raw(), cert.issuer().as_raw());
        let cn = cert.subject().iter_common_name().next().unwrap().as_str().unwrap();
        assert_eq!(cn, "export.kubevirt.io@1767225600");
        assert_eq!(cert.validity().not_before.timestamp(), 1_767_225_600);
        assert_eq!(cert.validity().not_after.timestamp(), 1_767_232_800);
        // A fresh key each time.
        assert_ne!(ca_cert("x", 0, 1), ca_cert("x", 0, 1));
        assert_eq!(ca_cert("x", -1, 1), None);
    }
}
