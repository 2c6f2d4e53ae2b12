//! Background work inside the server: the garbage collector. It writes through the registry like
//! any client, so every change it makes is an ordinary write with a revision and a watch event.

pub mod gc;
