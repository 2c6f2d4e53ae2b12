//! The `virt-apiserver` binary: parses flags, opens the store, binds and serves.

use std::io::Write;
use std::net::TcpListener;

use clap::Parser;
use virt_apiserver::authn::TokenFile;
use virt_apiserver::authz::Abac;
use virt_apiserver::filters::Filters;
use virt_apiserver::server::{self, AppState};
use virt_apiserver::store::{Store, StoreConfig};

/// A Kubernetes-style API server for the KubeVirt family of resources, on embedded SQLite.
#[derive(Parser, Debug)]
#[command(name = "virt-apiserver", version, about)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// SQLite database file; `:memory:` keeps nothing after exit.
    #[arg(long, default_value = "./virt-apiserver.db")]
    database: String,
    /// Run the garbage collector (ownerReferences, orphan and foreground deletion).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    enable_garbage_collector: bool,
    /// Seconds between garbage-collection passes when no write asks for one.
    #[arg(long, default_value_t = 30)]
    gc_interval: u64,
    /// Bearer tokens, in kube-apiserver's CSV format: token,user,uid,"group1,group2".
    #[arg(long)]
    token_auth_file: Option<String>,
    /// `AlwaysAllow` (default) or `ABAC` (needs --authorization-policy-file).
    #[arg(long, default_value = "AlwaysAllow")]
    authorization_mode: String,
    /// ABAC policies, one JSON policy per line, as kube-apiserver reads them.
    #[arg(long)]
    authorization_policy_file: Option<String>,
    /// Most read-only requests in flight per user (watches excepted).
    #[arg(long, default_value_t = virt_apiserver::filters::DEFAULT_MAX_READONLY)]
    max_requests_inflight: usize,
    /// Most mutating requests in flight per user.
    #[arg(long, default_value_t = virt_apiserver::filters::DEFAULT_MAX_MUTATING)]
    max_mutating_requests_inflight: usize,
    /// Serve on a non-loopback address without authentication (anyone who reaches it may write).
    #[arg(long)]
    insecure_allow_unauthenticated_remote: bool,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

/// Builds the filter chain's configuration from the flags, refusing unsafe combinations.
fn filters(args: &Args, addr: &std::net::SocketAddr) -> Filters {
    let tokens =
        args.token_auth_file.as_deref().map(|p| TokenFile::load(p).unwrap_or_else(|e| fail(e)));
    let abac = match args.authorization_mode.as_str() {
        "AlwaysAllow" => None,
        "ABAC" => {
            let Some(path) = args.authorization_policy_file.as_deref() else {
                fail("--authorization-mode=ABAC needs --authorization-policy-file")
            };
            Some(Abac::load(path).unwrap_or_else(|e| fail(e)))
        }
        other => fail(format!("unknown --authorization-mode {other:?}: use AlwaysAllow or ABAC")),
    };
    if tokens.is_none() {
        if !addr.ip().is_loopback() && !args.insecure_allow_unauthenticated_remote {
            fail(format!(
                "refusing to serve {addr} without authentication: give --token-auth-file, listen on loopback, or pass --insecure-allow-unauthenticated-remote"
            ));
        }
        eprintln!(
            "warning: no authentication configured; every request is allowed as system:anonymous"
        );
    }
    Filters::new(tokens, abac, args.max_requests_inflight, args.max_mutating_requests_inflight)
}

fn main() -> std::io::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    let store = match Store::open(StoreConfig { path: args.database.clone() }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot open database {}: {e:?}", args.database);
            std::process::exit(1);
        }
    };
    let listener = TcpListener::bind(&args.listen)?;
    let addr = listener.local_addr()?;
    let filters = filters(&args, &addr);
    actix_web::rt::System::new().block_on(async move {
        let state = AppState { store };
        let server = server::run(listener, state.clone(), filters)?;
        // Tests and scripts read the bound address from this first line.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{addr}")?;
        out.flush()?;
        drop(out);
        // Background work starts only once the server is listening.
        if args.enable_garbage_collector {
            virt_apiserver::gc::spawn(
                state,
                std::time::Duration::from_secs(args.gc_interval.max(1)),
            );
        }
        server.await
    })
}
