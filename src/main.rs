//! The `virt-apiserver` binary: parses flags, opens the store, binds and serves.

use std::io::Write;
use std::net::TcpListener;

use clap::Parser;
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
    actix_web::rt::System::new().block_on(async move {
        let state = AppState { store };
        let server = server::run(listener, state.clone())?;
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
