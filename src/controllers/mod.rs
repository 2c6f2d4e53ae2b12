//! kube's own background work inside the server, as kube-controller-manager and client-go do it:
//! the garbage collector, the namespace controller, the endpoints and endpoint-slice
//! controllers, the PersistentVolume binder (`volumes`), the pvc- and pv-protection controllers (`protection`), the events' recorder and expiry, the
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
pub mod protection;
pub mod recorder;
pub mod scheduler;
pub mod volumes;
