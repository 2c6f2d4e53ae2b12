//! The subcommands: tools that run to their end instead of the server.

use std::path::PathBuf;

use crate::http::kubeconfig::{self, KubeconfigArgs};
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
