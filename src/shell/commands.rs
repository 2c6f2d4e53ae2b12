//! The subcommands: tools that run to their end instead of the server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::http::kubeconfig::{self, KubeconfigArgs};
use crate::object::At;
use crate::store::sqlite::files;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print a kubeconfig for one user to stdout (embedding the given PEM files).
    Kubeconfig(KubeconfigArgs),
    /// Run SQLite's integrity check over every page of the database (read-only; the server may
    /// be running). Exits 1 and lists the damage if there is any.
    Check {
        /// The database file.
        #[arg(long)]
        database: PathBuf,
    },
    /// Copy the database, consistent at one revision, to OUT while the server runs.
    Backup {
        /// The database file.
        #[arg(long)]
        database: PathBuf,
        /// Where the copy goes (replaced if it exists).
        out: PathBuf,
    },
    /// Put a running server's store back to its fixtures (`POST /reset`): objects not in them
    /// deleted, the others written back; older resourceVersions then answer 410 Expired.
    Reset {
        /// The server's URL, e.g. `http://127.0.0.1:8080`.
        #[arg(long)]
        server: String,
        /// A bearer token of a user in system:masters (when the server authenticates).
        #[arg(long)]
        token: Option<String>,
        /// The CA bundle (PEM) that verifies an https server's certificate.
        #[arg(long)]
        certificate_authority: Option<PathBuf>,
    },
    /// Replace the database with the copy IN (the server stopped). Revisions continue above
    /// every revision the replaced database served and older history counts as compacted, so
    /// clients relist.
    Restore {
        /// The database file to replace (or create).
        #[arg(long)]
        database: PathBuf,
        /// A copy `backup` wrote.
        input: PathBuf,
        /// Revisions to skip beyond the newest known one: needed when the replaced database
        /// is gone or unreadable but clients saw its revisions.
        #[arg(long, default_value_t = 0)]
        bump_revision: u64,
    },
    /// Bridge a local TCP port to a VMI's VNC display for any VNC viewer, as
    /// `virtctl vnc --proxy-only` does: prints `{"port":N}`, then serves until killed.
    Vnc(super::vnc::VncArgs),
    /// Bridge stdin and stdout to a VMI's or VM's port, as `virtctl port-forward --stdio`
    /// does: OpenSSH's ProxyCommand for ssh and scp to a simulated guest.
    PortForward(super::portforward::PortForwardArgs),
}

impl Command {
    /// Runs the command to its end: what it prints on stdout, or why it failed.
    pub fn run(&self) -> Result<String, String> {
        match self {
            Command::Kubeconfig(k) => kubeconfig::render(k),
            Command::Check { database } => {
                let ok = files::check(database)?;
                Ok(format!(
                    "{}: ok (schema version {}, revision {}, compacted {})\n",
                    database.display(),
                    ok.schema_version,
                    ok.revision,
                    ok.compacted
                ))
            }
            Command::Backup { database, out } => {
                let done = files::backup(database, out)?;
                Ok(format!(
                    "{}: copied at revision {} to {}\n",
                    database.display(),
                    done.revision,
                    out.display()
                ))
            }
            Command::Reset { server, token, certificate_authority } => {
                reset(server, token.as_deref(), certificate_authority.as_deref())
            }
            Command::Vnc(args) => super::vnc::bridge(args),
            Command::PortForward(args) => super::portforward::bridge(args),
            Command::Restore { database, input, bump_revision } => {
                let done = files::restore(database, input, *bump_revision)?;
                Ok(format!(
                    "{}: restored from {} (revision {}; the replaced database was at {}); history \
                     up to {} counts as compacted\n",
                    database.display(),
                    input.display(),
                    done.backup_revision,
                    done.replaced_revision,
                    done.compacted
                ))
            }
        }
    }
}

/// Sends `POST /reset` to `server`: the Status message and the revision reached, or the
/// server's refusal in its own words.
fn reset(server: &str, token: Option<&str>, ca: Option<&Path>) -> Result<String, String> {
    let mut agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(60));
    if let Some(ca) = ca {
        agent = agent.tls_config(Arc::new(super::tls::client_tls(ca)?));
    }
    let url = format!("{}/reset", server.trim_end_matches('/'));
    let mut request = agent.build().post(&url);
    if let Some(token) = token {
        request = request.set("Authorization", &format!("Bearer {token}"));
    }
    let status: serde_json::Value = match request.call() {
        Ok(answer) => answer.into_json().map_err(|e| format!("{url}: {e}"))?,
        Err(ureq::Error::Status(code, answer)) => {
            let text = answer.into_string().unwrap_or_default();
            let message = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|s| s["message"].as_str().map(str::to_owned))
                .unwrap_or(text);
            return Err(format!("{url}: {code}: {message}"));
        }
        Err(e) => return Err(format!("{url}: {e}")),
    };
    let message = status["message"].as_str().unwrap_or("reset");
    let rev = status.at("/metadata/resourceVersion").and_then(|v| v.as_str()).unwrap_or("");
    Ok(format!("{message} (resourceVersion {rev})\n"))
}
