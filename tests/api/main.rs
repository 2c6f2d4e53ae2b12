//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod chunking;
mod common;
mod compaction;
mod gc;
mod watch_semantics;
