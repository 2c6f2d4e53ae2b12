//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod auth;
mod bad_input;
mod common;
mod conformance;
mod crud;
mod discovery;
mod gc;
mod health;
mod lists;
mod openapi;
mod seed_ops;
mod subresources;
mod tls;
mod token;
mod watch;
