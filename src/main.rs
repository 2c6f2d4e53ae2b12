//! The `virt-apiserver` binary: parses flags, opens the store, binds and serves.

use std::io::Write;
use std::net::TcpListener;

use clap::Parser;
use virt_apiserver::authn::TokenFile;
use virt_apiserver::authz::Abac;
use virt_apiserver::filters::Filters;
use virt_apiserver::kubeconfig::KubeconfigArgs;
use virt_apiserver::server::{self, AppState, ServeOptions};
use virt_apiserver::store::{Store, StoreConfig};
use virt_apiserver::tls::TlsFiles;

/// A Kubernetes-style API server for the KubeVirt family of resources, on embedded SQLite.
#[derive(Parser, Debug)]
#[command(name = "virt-apiserver", version, about)]
struct Args {
    /// Without a subcommand the server runs.
    #[command(subcommand)]
    command: Option<Subcommand>,
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

    // HTTPS and client certificates.
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-private-key-file.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<String>,
    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<String>,
    /// CA bundle (PEM): client certificates it signs authenticate, CN as user and O as groups.
    #[arg(long, requires = "tls_cert_file")]
    client_ca_file: Option<String>,
    /// Test hook: GET of this path panics in its handler (proves panics become 500 Status).
    #[arg(long, hide = true)]
    debug_panic_path: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// Print a kubeconfig for one user to stdout (embedding the given PEM files).
    Kubeconfig(KubeconfigArgs),
}

/// The TLS configuration the flags ask for, if any.
fn tls(args: &Args) -> Option<std::sync::Arc<rustls::ServerConfig>> {
    let (cert_file, key_file) = (args.tls_cert_file.clone()?, args.tls_private_key_file.clone()?);
    let files = TlsFiles { cert_file, key_file, client_ca_file: args.client_ca_file.clone() };
    Some(virt_apiserver::tls::server_config(&files).unwrap_or_else(|e| fail(e)))
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
    let mut filters =
        Filters::new(tokens, abac, args.max_requests_inflight, args.max_mutating_requests_inflight);
    if args.client_ca_file.is_some() {
        filters = filters.with_client_certificates();
    }
    if !filters.authenticates() {
        if !addr.ip().is_loopback() && !args.insecure_allow_unauthenticated_remote {
            fail(format!(
                "refusing to serve {addr} without authentication: give --token-auth-file or --client-ca-file, listen on loopback, or pass --insecure-allow-unauthenticated-remote"
            ));
        }
        let scope = if addr.ip().is_loopback() { "loopback only" } else { "NOT loopback" };
        eprintln!(
            "warning: no authentication configured: serving {addr} ({scope}); every request is allowed as system:anonymous"
        );
    }
    filters
}

fn main() -> std::io::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    if let Some(Subcommand::Kubeconfig(k)) = &args.command {
        let yaml = virt_apiserver::kubeconfig::render(k).unwrap_or_else(|e| fail(e));
        print!("{yaml}");
        return Ok(());
    }
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
    let opts = ServeOptions { tls: tls(&args), debug_panic_path: args.debug_panic_path.clone() };
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    actix_web::rt::System::new().block_on(async move {
        let state = AppState { store };
        let server = server::run_with(listener, state.clone(), filters, opts)?;
        // Tests and scripts read the bound address from this first line.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {scheme}://{addr}")?;
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
