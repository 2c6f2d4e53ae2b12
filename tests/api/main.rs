//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod actions;
mod apply;
mod auth;
mod bad_input;
mod chunking;
mod common;
mod compaction;
mod conformance;
mod crash;
mod crud;
mod discovery;
mod events;
mod explain;
mod fixture_build;
mod gc;
mod health;
mod kubectl;
mod lists;
mod logging;
mod namespaces;
mod openapi;
mod secrets;
mod seed_ops;
mod simulate;
mod storage_files;
mod strategic_patch;
mod subresources;
mod table;
mod tls;
mod token;
mod validation;
mod validator;
mod watch;
mod watch_semantics;
