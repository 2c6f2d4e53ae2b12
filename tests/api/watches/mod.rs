//! Watches and lists: watch events and their semantics, chunked lists, list options and
//! compaction's 410s.

mod chunking;
mod compaction;
mod lists;
mod watch;
pub(crate) mod watch_semantics;
