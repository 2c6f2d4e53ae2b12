//! kube's own background work inside the server, as kube-controller-manager and client-go do it:
//! the garbage collector, the namespace controller, the endpoints and endpoint-slice
//! controllers, the PersistentVolume binder (`volumes`), the pvc- and pv-protection controllers (`protection`),
//! the pod garbage collector's orphaned pods (`podgc`), the events' recorder and expiry, the
//! server's own `default/kubernetes` Service (`apiserver_service`), the simulated cluster's
//! kube-scheduler (`scheduler`), and `leading` (the singletons of each leadership term). It
//! writes through the registry like any client, so every change it makes is an ordinary write
//! with a revision and a watch event.

pub mod apiserver_service;
pub mod endpoints;
pub mod event_ttl;
pub mod gc;
pub mod leading;
pub mod namespaces;
pub mod podgc;
pub mod protection;
pub mod recorder;
pub mod scheduler;
pub mod volumes;

use std::time::Duration;

use crate::store::Subscription;

/// Runs a level-triggered controller that reads everything it decides from (a few kinds, few
/// objects): `pass` now, then after each batch of changes (or a loss, which a full pass
/// covers). A pass that failed somewhere (it answers `false`) runs again after a growing
/// pause even when nothing changes, as kube's workqueue requeues a failed sync with backoff
/// (client-go util/workqueue default_rate_limiters.go), so one lost write is not lost for good.
pub(crate) async fn level_triggered(mut events: Subscription, mut pass: impl AsyncFnMut() -> bool) {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);
    let mut backoff = FIRST;
    loop {
        if pass().await {
            backoff = FIRST;
            if events.batch().await.is_none() {
                return;
            }
            continue;
        }
        if let Ok(None) = tokio::time::timeout(backoff, events.batch()).await {
            return;
        }
        backoff = (backoff * 2).min(MAX);
    }
}
