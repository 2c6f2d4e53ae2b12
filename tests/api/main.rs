//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod clients;
mod common;
mod documents;
mod faults;
mod guests;
mod harness;
mod machinery;
mod operations;
mod simulation;
mod storage;
mod watches;
mod world;
