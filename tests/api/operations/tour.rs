//! The README's 60-second tour, run as written: its server command's flags, then its kubectl
//! commands as one bash script against that server (the README's address and binary path
//! swapped for the test's).

use std::process::Command;

use crate::common::{binary, kubectl_binary, repo_root, ServerOptions, TestServer};

/// The `sh` blocks of the README's tour section, in order.
fn tour_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let tour = readme.split("\n## A 60-second tour\n").nth(1).expect("the tour section");
    let tour = tour.split("\n## ").next().unwrap_or_default();
    tour.split("```sh\n").skip(1).map(|b| b.split("\n```").next().unwrap().to_string()).collect()
}

#[test]
fn the_readmes_tour_runs_as_written() {
    let blocks = tour_blocks();
    assert_eq!(blocks.len(), 2, "a server command, then the client's commands");
    let flags = blocks[0]
        .strip_prefix("cargo run --release --bin virt-apiserver -- ")
        .expect("the server command");
    let mut args: Vec<String> = flags.split_whitespace().map(String::from).collect();
    // The test's server keeps nothing either, on its own port.
    let db = args.iter().position(|a| a == "--database").expect("--database :memory:");
    assert_eq!(args.drain(db..db + 2).nth(1).as_deref(), Some(":memory:"));
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });

    let script = blocks[1]
        .replace("target/release/virt-apiserver", &binary().display().to_string())
        .replace("http://127.0.0.1:8080", &s.base);
    let dir = tempfile::tempdir().unwrap();
    let kubectl_dir = kubectl_binary().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(kubectl_dir)
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", dir.path())
        .env_remove("KUBECONFIG")
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the tour failed:\n{stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("virtualmachine.kubevirt.io/testvm condition met").count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("virt-launcher-testvm-"), "the VM's pod: {stdout}");
    // kubectl's log of the create: a 429, then the retry's 201.
    let create: Vec<&str> =
        stdout.lines().filter(|l| l.contains(" 429 ") || l.contains(" 201 ")).collect();
    assert_eq!(create.len(), 2, "{stdout}");
    assert!(
        create[0].contains(" 429 Too Many Requests") && create[1].contains(" 201 Created"),
        "{stdout}"
    );
    assert!(stdout.contains("configmap/tour created"), "{stdout}");
    let row =
        stdout.lines().find(|l| l.starts_with("throttle-first-create")).expect("the fault's row");
    assert_eq!(row.split_whitespace().nth(3), Some("1"), "fired once: {row}");
}
