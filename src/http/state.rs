//! What every handler shares: the server's state, apart from the server so the filters and the
//! endpoints name it without naming the server that runs them.

use std::sync::Arc;
use std::time::Duration;

use crate::behaviour::actions::Actions;
use crate::behaviour::Behaviour;
use crate::http::faults::Faults;
use crate::http::shutdown::Phases;
use crate::registry::Registry;
use crate::store::{Saved, Store};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The verbs every endpoint calls, with virt-api's webhooks in their admission.
    pub registry: Registry,
    /// virt-api's action API over that registry.
    pub actions: Actions,
    /// The store under the registry: watches, probes and metrics read it directly.
    pub store: Store,
    pub watch: WatchConfig,
    /// The shutdown phase: `/readyz` and open watches follow it.
    pub phases: Phases,
    /// The Faults the filter chain applies (none when the document has no Fault kind).
    pub faults: Option<Arc<Faults>>,
    /// What `POST /reset` puts the store back to: the state once the start-up objects and the
    /// fixtures were written (`None`: reset is refused, the server not started by the shell).
    pub fixtures: Option<Arc<Saved>>,
}

impl AppState {
    /// The state with default watch settings, serving `behaviour` over `registry` (a registry
    /// over `store`).
    pub fn new(store: Store, behaviour: &Behaviour, registry: Registry) -> AppState {
        let registry = behaviour.admitting(registry);
        AppState {
            actions: behaviour.actions(registry.clone()),
            faults: Faults::new(registry.clone(), 0),
            registry,
            store,
            watch: WatchConfig::default(),
            phases: Phases::default(),
            fixtures: None,
        }
    }
}

/// How watch streams behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchConfig {
    /// Between periodic BOOKMARK events (kube's cacher: 1 minute).
    pub bookmark_interval: Duration,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig { bookmark_interval: Duration::from_secs(60) }
    }
}
