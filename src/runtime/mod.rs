//! Background work inside the server: the garbage collector and the namespace controller. It writes through the registry like
//! any client, so every change it makes is an ordinary write with a revision and a watch event.

pub mod gc;
pub mod namespaces;
