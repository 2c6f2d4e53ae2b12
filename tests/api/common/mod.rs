//! Shared test helpers, one file per concern: start the real binary on an ephemeral port with a
//! temporary database (`server`), talk HTTP to it as a client would (`responses`, `watch`), with
//! the document's kinds and sample objects (`objects`), kubectl (`kubectl`), etcd (`etcd`) and a
//! test PKI (`pki`).
//!
//! The storage axis: `VIRT_TEST_STORAGE=etcd` runs every server that asks for no particular
//! database on the test process's private etcd (`TestEtcd`, started from PATH on first use),
//! each with a key prefix of its own; `ServerOptions::etcd` asks for etcd in any case, `sqlite`
//! for SQLite (a test of the database file itself), and `private_etcd` for an etcd of the
//! server's own (a test that compacts: etcd compacts every prefix at once).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;
use virt_apiserver::resource::ResourceInfo;
pub use virt_apiserver::storage::TestEtcd;
use virt_apiserver::{GROUPS, RESOURCES};

mod etcd;
mod kubectl;
mod objects;
mod pki;
mod responses;
mod server;
mod watch;

pub use etcd::*;
pub use kubectl::*;
pub use objects::*;
pub use pki::*;
pub use responses::*;
pub use server::*;
pub use watch::*;
