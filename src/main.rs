//! The `virt-apiserver` binary: flags → a validated configuration → the server (the library's
//! `run`), or a subcommand.

use clap::Parser;
use virt_apiserver::{Options, RunError};

// Every request decodes, checks and encodes JSON trees: many small short-lived allocations, which
// glibc's allocator serves at ~25% of a write's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

fn main() -> std::io::Result<()> {
    // mimalloc asks for transparent huge pages and returns idle pages to the kernel; each page
    // touched again is then a fresh 2 MiB page to zero. Under the simulation that zeroing was
    // 13% of the server's CPU (perf, `virt-bench vms`); 4 KiB pages cost a third of it.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let mut options = Options::parse();
    if let Some(command) = options.command.take() {
        print!("{}", command.run().unwrap_or_else(|e| fail(e)));
        return Ok(());
    }
    let config = options.into_config().unwrap_or_else(|problems| {
        for problem in &problems {
            eprintln!("error: {problem}");
        }
        std::process::exit(1)
    });
    match virt_apiserver::run(config) {
        Ok(()) => Ok(()),
        // As `main`'s own `?` reported them.
        Err(RunError::Io(e)) => Err(e),
        Err(e) => fail(e),
    }
}
