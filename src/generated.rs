//! The code `build.rs` generates from the OpenAPI document: per-kind records, the route table and
//! one thin handler per operation. Print it with `cargo run -p codegen --example dump`.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_imports)]

include!(concat!(env!("OUT_DIR"), "/generated.rs"));
