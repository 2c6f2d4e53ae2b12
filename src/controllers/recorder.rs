//! The event recorder: how background work reports what it did, in the kind the document marks
//! `x-virt-resource.events` (kube's core/v1 Event), as client-go's `EventRecorder` with its
//! `EventCorrelator`: an event is named `<object>.<unix nanos in hex>`, lives in its object's
//! namespace (`default` for a cluster-scoped object), and a repeat of one already recorded raises
//! its `count` and `lastTimestamp` instead of making another; past ten different messages for
//! the same object and reason within ten minutes they are combined into one. Every write goes
//! through the registry, so each is an ordinary write with a watch event.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::generated::RESOURCES;
use crate::object::error::ApiError;
use crate::object::meta::rfc3339;
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::validation::{FieldValidation, Via};
use crate::object::At;
use crate::registry::keys::collection_prefix;
use crate::registry::{Registry, Target, WriteOptions};
use crate::resource::ResourceInfo;
use crate::store::Event;

/// The events' kind in its storage version, if the document has one.
pub fn events_kind() -> Option<&'static ResourceInfo> {
    static KIND: OnceLock<Option<&'static ResourceInfo>> = OnceLock::new();
    *KIND.get_or_init(|| RESOURCES.iter().find(|r| r.events && r.version == r.storage_version))
}

/// A write to an event. Runs on the committing thread: the prefix is made once.
pub(crate) fn is_event(ev: &Event) -> bool {
    static PREFIX: OnceLock<Option<String>> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| events_kind().map(|k| collection_prefix(k, None)));
    prefix.as_deref().is_some_and(|p| ev.key.starts_with(p))
}

/// What an event is about (kube's `ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub api_version: String,
    pub resource_version: String,
    pub field_path: String,
}

impl ObjectRef {
    /// The reference to `obj`, an object of `res`, as client-go's `reference.GetReference`.
    pub fn to(res: &ResourceInfo, obj: &Value) -> ObjectRef {
        ObjectRef {
            kind: res.kind.into(),
            namespace: meta_str(obj, "namespace").into(),
            name: meta_str(obj, "name").into(),
            uid: meta_str(obj, "uid").into(),
            api_version: res.api_version(),
            resource_version: meta_str(obj, "resourceVersion").into(),
            field_path: String::new(),
        }
    }

    /// As JSON, its empty fields left out (Go's `omitempty`).
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in [
            ("kind", &self.kind),
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("uid", &self.uid),
            ("apiVersion", &self.api_version),
            ("resourceVersion", &self.resource_version),
            ("fieldPath", &self.field_path),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), Value::String(v.clone()));
            }
        }
        Value::Object(m)
    }
}

/// An event's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Normal,
    Warning,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Normal => "Normal",
            Severity::Warning => "Warning",
        }
    }
}

/// client-go's correlator: the entries each cache keeps (`maxLruCacheEntries`), how many
/// different messages for one object and reason it keeps apart within the window before
/// combining them (`defaultAggregateMaxEvents`, `defaultAggregateIntervalInSeconds`).
const CACHE_ENTRIES: usize = 4096;
const SIMILAR_MESSAGES: usize = 10;
const SIMILAR_WINDOW: Duration = Duration::from_secs(600);
const COMBINED: &str = "(combined from similar events): ";

/// Records events as `component` (`source.component`, `reportingComponent`) on `host`
/// (`source.host`, `reportingInstance`), writing them as field manager `manager`. Clones share
/// the correlator's memory of what was recorded.
#[derive(Clone, Debug)]
pub struct Recorder {
    registry: Registry,
    manager: String,
    component: String,
    host: String,
    seen: Arc<Mutex<Correlator>>,
}

impl Recorder {
    pub fn new(registry: Registry, manager: &str, component: &str, host: &str) -> Recorder {
        Recorder {
            registry,
            manager: manager.into(),
            component: component.into(),
            host: host.into(),
            seen: Arc::default(),
        }
    }

    /// Records that `reason` (CamelCase) happened to `about`, as `message` says. Does nothing
    /// when the document has no events kind.
    pub async fn record(
        &self,
        about: &ObjectRef,
        severity: Severity,
        reason: &str,
        message: &str,
    ) -> Result<(), ApiError> {
        let Some(kind) = events_kind() else { return Ok(()) };
        let now = SystemTime::now();
        let event = self.make(kind, about, severity, reason, message, now);
        let plan = lock(&self.seen).plan(event, now);
        let (ns, name) = (meta_str(&plan.event, "namespace"), meta_str(&plan.event, "name"));
        let mut stored = None;
        if plan.repeat {
            // client-go patches count, lastTimestamp and message of the event it recorded.
            let edit = |e: &mut Value| {
                for field in ["count", "lastTimestamp", "message"] {
                    e[field] = plan.event[field].clone();
                }
                Some(())
            };
            match self.registry.update_with(kind, (ns, name, Part::Main), &self.manager, edit).await
            {
                Ok(o) => stored = Some(o),
                // Expired or deleted: created again, as client-go does when its patch finds
                // nothing.
                Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let outcome = match stored {
            Some(o) => o,
            None => {
                let opts = WriteOptions {
                    dry_run: false,
                    field_validation: FieldValidation::Strict,
                    manager: self.manager.clone(),
                };
                let target = Target::new(Some(ns.to_string()), None);
                let event = plan.event.clone();
                self.registry.create(kind, &target, event, Via::Body(&[]), &opts).await?
            }
        };
        lock(&self.seen).stored(&plan.key, outcome.object.value());
        Ok(())
    }

    /// A new event, as client-go's `makeEvent`.
    fn make(
        &self,
        kind: &ResourceInfo,
        about: &ObjectRef,
        severity: Severity,
        reason: &str,
        message: &str,
        now: SystemTime,
    ) -> Value {
        let namespace = if about.namespace.is_empty() { "default" } else { &about.namespace };
        let t = rfc3339(unix_secs(now));
        let mut source = json!({"component": self.component});
        if !self.host.is_empty() {
            source["host"] = json!(self.host);
        }
        json!({
            "apiVersion": kind.api_version(),
            "kind": kind.kind,
            "metadata": {"name": event_name(&about.name, now), "namespace": namespace},
            "involvedObject": about.to_json(),
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": t,
            "lastTimestamp": t,
            "count": 1,
            "type": severity.as_str(),
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        })
    }
}

fn lock(m: &Mutex<Correlator>) -> std::sync::MutexGuard<'_, Correlator> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// `<name>.<unix nanos in hex>`, client-go's event name.
fn event_name(object: &str, now: SystemTime) -> String {
    let nanos = now.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{object}.{nanos:x}")
}

pub(crate) fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    v.at(path).and_then(Value::as_str).unwrap_or("")
}

/// What the recorder does for one report: create `event`, or write it over the one it
/// recorded before (`repeat`: same name, count one more). `key` is the correlator's.
#[derive(Debug)]
struct Plan {
    event: Value,
    key: String,
    repeat: bool,
}

/// A bounded map that forgets its least recently used entry when full (client-go's LRU), its
/// entries also ordered by last use, so forgetting one is not a scan of them all.
#[derive(Debug)]
struct Lru<T> {
    entries: HashMap<String, (u64, T)>,
    by_use: std::collections::BTreeMap<u64, String>,
    tick: u64,
}

impl<T> Default for Lru<T> {
    fn default() -> Self {
        Lru { entries: HashMap::new(), by_use: Default::default(), tick: 0 }
    }
}

impl<T> Lru<T> {
    fn get(&mut self, key: &str) -> Option<&mut T> {
        self.tick += 1;
        let tick = self.tick;
        let (used, v) = self.entries.get_mut(key)?;
        if let Some(k) = self.by_use.remove(used) {
            self.by_use.insert(tick, k);
        }
        *used = tick;
        Some(v)
    }

    fn put(&mut self, key: String, value: T) {
        self.tick += 1;
        match self.entries.get(&key).map(|(used, _)| *used) {
            Some(used) => {
                self.by_use.remove(&used);
            }
            None if self.entries.len() >= CACHE_ENTRIES => {
                if let Some((_, oldest)) = self.by_use.pop_first() {
                    self.entries.remove(&oldest);
                }
            }
            None => {}
        }
        self.by_use.insert(self.tick, key.clone());
        self.entries.insert(key, (self.tick, value));
    }
}

/// What client-go's `EventCorrelator` remembers: similar events per object and reason (its
/// aggregator) and the last state of each event it recorded (its logger).
#[derive(Debug, Default)]
struct Correlator {
    similar: Lru<(HashSet<String>, SystemTime)>,
    recorded: Lru<Recorded>,
}

#[derive(Debug, Clone)]
struct Recorded {
    count: i64,
    first: Value,
    name: String,
}

impl Correlator {
    /// client-go's `EventAggregate` then `eventObserve`.
    fn plan(&mut self, mut event: Value, now: SystemTime) -> Plan {
        let field = |p: &str| text(&event, p).to_string();
        let object = [
            "/source/component",
            "/source/host",
            "/involvedObject/kind",
            "/involvedObject/namespace",
            "/involvedObject/name",
        ];
        let mut aggregate: Vec<String> = object.iter().map(|p| field(p)).collect();
        for p in [
            "/involvedObject/uid",
            "/involvedObject/apiVersion",
            "/type",
            "/reason",
            "/reportingComponent",
            "/reportingInstance",
        ] {
            aggregate.push(field(p));
        }
        let aggregate = aggregate.concat();
        let mut exact: Vec<String> = object.iter().map(|p| field(p)).collect();
        for p in [
            "/involvedObject/fieldPath",
            "/involvedObject/uid",
            "/involvedObject/apiVersion",
            "/type",
            "/reason",
            "/message",
        ] {
            exact.push(field(p));
        }
        let mut key = exact.concat();
        let message = field("/message");
        let (mut messages, last) =
            self.similar.get(&aggregate).cloned().unwrap_or((HashSet::new(), UNIX_EPOCH));
        if now.duration_since(last).is_ok_and(|d| d > SIMILAR_WINDOW) {
            messages.clear();
        }
        messages.insert(message.clone());
        if messages.len() >= SIMILAR_MESSAGES {
            // Combined under the aggregate key, so later similar ones repeat the combined one.
            if let Some(any) = messages.iter().next().cloned() {
                messages.remove(&any);
            }
            let t = rfc3339(unix_secs(now));
            let name = event_name(text(&event, "/involvedObject/name"), now);
            event["metadata"]["name"] = json!(name);
            event["message"] = json!(format!("{COMBINED}{message}"));
            event["firstTimestamp"] = json!(t);
            event["lastTimestamp"] = json!(t);
            event["count"] = json!(1);
            key = aggregate.clone();
        }
        self.similar.put(aggregate, (messages, now));
        let repeat = match self.recorded.get(&key).cloned() {
            Some(before) => {
                event["metadata"]["name"] = json!(before.name);
                event["firstTimestamp"] = before.first;
                event["count"] = json!(before.count + 1);
                true
            }
            None => false,
        };
        self.stored(&key, &event);
        Plan { event, key, repeat }
    }

    /// The state the server answered for the event recorded under `key`.
    fn stored(&mut self, key: &str, event: &Value) {
        let count = event.get("count").and_then(Value::as_i64).unwrap_or(1);
        let first = event.get("firstTimestamp").cloned().unwrap_or(Value::Null);
        let name = meta_str(event, "name").to_string();
        self.recorded.put(key.to_string(), Recorded { count, first, name });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::DeleteOptions;
    use crate::store::EventType;

    fn event(reason: &str, message: &str) -> Value {
        json!({
            "metadata": {"name": "vm1.1", "namespace": "ns"},
            "involvedObject": {"kind": "VirtualMachine", "namespace": "ns", "name": "vm1", "uid": "u1"},
            "reason": reason, "message": message, "type": "Normal", "count": 1,
            "source": {"component": "c"}, "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:00:00Z",
        })
    }

    #[test]
    fn the_cache_forgets_its_least_recently_used_entry() {
        let mut lru: Lru<usize> = Lru::default();
        for i in 0..CACHE_ENTRIES {
            lru.put(format!("k{i}"), i);
        }
        // k0 used again: k1 is now the oldest, and goes when another comes.
        assert_eq!(lru.get("k0").copied(), Some(0));
        lru.put("k0".into(), 10);
        lru.put("new".into(), 1);
        assert_eq!(lru.entries.len(), CACHE_ENTRIES);
        assert!(lru.get("k1").is_none());
        assert_eq!(lru.get("k0").copied(), Some(10));
        assert_eq!((lru.get("k2").copied(), lru.get("new").copied()), (Some(2), Some(1)));
        assert_eq!(lru.by_use.len(), lru.entries.len());
    }

    #[test]
    fn a_repeat_counts_on_the_event_recorded_before() {
        let mut c = Correlator::default();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let first = c.plan(event("Started", "m"), t0);
        assert!(!first.repeat);
        let mut later = event("Started", "m");
        later["metadata"]["name"] = json!("vm1.2");
        later["firstTimestamp"] = json!("2024-01-01T00:05:00Z");
        let again = c.plan(later, t0 + Duration::from_secs(300));
        assert!(again.repeat);
        assert_eq!(again.event["metadata"]["name"], "vm1.1", "the first event's name");
        assert_eq!(again.event["count"], 2);
        assert_eq!(again.event["firstTimestamp"], "2024-01-01T00:00:00Z");
        assert_eq!(again.key, first.key);
        let other = c.plan(event("Stopped", "m"), t0);
        assert!(!other.repeat, "another reason is another event");
    }

    #[test]
    fn the_tenth_different_message_is_combined() {
        let mut c = Correlator::default();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for i in 0..9 {
            let p = c.plan(event("Failed", &format!("m{i}")), t0);
            assert!(!p.repeat);
            assert_eq!(p.event["message"], format!("m{i}"));
        }
        let tenth = c.plan(event("Failed", "m9"), t0);
        assert_eq!(tenth.event["message"], "(combined from similar events): m9");
        assert!(!tenth.repeat);
        let eleventh = c.plan(event("Failed", "m10"), t0);
        assert!(eleventh.repeat, "later similar ones count on the combined event");
        assert_eq!(eleventh.event["message"], "(combined from similar events): m10");
        assert_eq!(eleventh.event["count"], 2);
        // After the window the messages are counted afresh.
        let fresh = c.plan(event("Failed", "m11"), t0 + SIMILAR_WINDOW + Duration::from_secs(1));
        assert_eq!(fresh.event["message"], "m11");
    }

    #[test]
    fn names_and_references_as_client_go_makes_them() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        assert_eq!(event_name("vm1", t), "vm1.17979cfe3d85cd15");
        let r = ObjectRef { kind: "Thing".into(), name: "a".into(), ..ObjectRef::default() };
        assert_eq!(r.to_json(), json!({"kind": "Thing", "name": "a"}));
    }

    /// Through a registry over a real store: a repeat is an update of the first event (a
    /// MODIFIED watch event), another reason another event, and a repeat of an event gone
    /// meanwhile is created again.
    #[tokio::test]
    async fn the_recorder_writes_through_the_registry() {
        use crate::registry::ListOptions;
        use crate::store::{Store, StoreConfig};
        let store = Store::open(StoreConfig::new(crate::store::sqlite::MEMORY)).unwrap();
        let registry = Registry::new(store).with_implicit_namespaces(true);
        let kind = events_kind().expect("the document marks an events kind");
        let mut writes = registry.store().subscribe(is_event);
        let rec = Recorder::new(registry.clone(), "test-manager", "test-controller", "node-1");
        let about = ObjectRef {
            kind: "VirtualMachine".into(),
            namespace: "ns".into(),
            name: "vm1".into(),
            uid: "u1".into(),
            api_version: "kubevirt.io/v1".into(),
            resource_version: "7".into(),
            field_path: String::new(),
        };
        rec.record(&about, Severity::Normal, "Started", "started").await.unwrap();
        rec.record(&about, Severity::Normal, "Started", "started").await.unwrap();
        rec.record(&about, Severity::Warning, "Failed", "boom").await.unwrap();
        let mut kinds = Vec::new();
        for _ in 0..3 {
            kinds.push(writes.recv().await.unwrap().kind);
        }
        assert_eq!(kinds, [EventType::Added, EventType::Modified, EventType::Added]);
        let list = |registry: &Registry| {
            let registry = registry.clone();
            async move {
                let page = registry.list(kind, Some("ns"), &ListOptions::default()).await;
                page.unwrap().objects().unwrap()
            }
        };
        let events = list(&registry).await;
        assert_eq!(events.len(), 2);
        let started = events.iter().find(|e| e["reason"] == "Started").unwrap();
        let name = meta_str(started, "name");
        let (object, nanos) = name.split_once('.').unwrap();
        assert_eq!(object, "vm1");
        assert!(nanos.len() == 16 && nanos.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        assert_eq!(started["count"], 2);
        assert_eq!(started["type"], "Normal");
        assert_eq!(started["source"], json!({"component": "test-controller", "host": "node-1"}));
        assert_eq!(started["reportingComponent"], "test-controller");
        assert_eq!(started["reportingInstance"], "node-1");
        assert_eq!(
            started["involvedObject"],
            json!({"kind": "VirtualMachine", "namespace": "ns", "name": "vm1", "uid": "u1",
                   "apiVersion": "kubevirt.io/v1", "resourceVersion": "7"})
        );
        let managed = &started["metadata"]["managedFields"][0]["manager"];
        assert_eq!(managed, "test-manager");
        registry.delete(kind, "ns", name, &DeleteOptions::default()).await.unwrap();
        rec.record(&about, Severity::Normal, "Started", "started").await.unwrap();
        let again = list(&registry).await;
        let again = again.iter().find(|e| e["reason"] == "Started").expect("created again");
        assert_eq!((meta_str(again, "name"), &again["count"]), (name, &json!(3)));
    }
}
