//! Background work inside the server: the garbage collector, the namespace controller, the
//! events' recorder and expiry, and the simulated runtime (`--simulate`). It writes through the registry like any client, so every change
//! it makes is an ordinary write with a revision and a watch event.

pub mod event_ttl;
pub mod gc;
pub mod leading;
pub mod namespaces;
pub mod recorder;
mod reverse;
pub mod simulate;
