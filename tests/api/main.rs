//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod apply;
mod auth;
mod common;
mod conformance;
mod crud;
mod discovery;
mod explain;
mod gc;
mod health;
mod lists;
mod openapi;
mod seed_ops;
mod subresources;
mod token;
mod validation;
mod watch;
