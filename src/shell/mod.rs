//! The shell, kube's Options → Config → Run: flags parse into `Options`, which validate into a
//! `Config` (every problem reported at once), and `run` starts a complete server from it: the
//! store, the HTTP server, the background singletons, the shutdown. The binary only calls it.

pub mod commands;
pub mod config;
pub mod fixtures;
pub mod portforward;
pub mod run;
pub mod tls;
pub mod vnc;
