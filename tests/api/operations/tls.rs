//! TLS: HTTPS with certificates generated at test time (rcgen), client-certificate
//! authentication (CN = user, O = groups), and kubectl connecting with a kubeconfig printed by
//! `virt-apiserver kubeconfig`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rcgen::ExtendedKeyUsagePurpose;
use serde_json::json;

use crate::common::{binary, ca, leaf, pki, Pki, ServerOptions, TestServer};

fn start(pki: &Pki) -> TestServer {
    let args = [
        ("--tls-cert-file", "server.pem"),
        ("--tls-private-key-file", "server-key.pem"),
        ("--client-ca-file", "ca.pem"),
        ("--token-auth-file", "tokens.csv"),
        ("--authorization-policy-file", "policy.jsonl"),
    ]
    .iter()
    .flat_map(|(flag, file)| [flag.to_string(), pki.arg(file)])
    .chain(["--authorization-mode".to_string(), "ABAC".to_string()])
    .collect();
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });
    // The teams' namespaces, made by the admin as a cluster's are.
    let admin = agent(pki, None);
    for ns in ["team-a", "team-b"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let url = format!("{}/api/v1/namespaces", s.base);
        let (code, st) = call(&admin, "POST", &url, Some("tok-admin"), Some(&body)).unwrap();
        assert_eq!(code, 201, "create namespace {ns}: {st}");
    }
    s
}

/// An HTTPS client trusting the test CA, optionally presenting a client certificate.
fn agent(pki: &Pki, client: Option<&str>) -> ureq::Agent {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(pki.path("ca.pem")).unwrap()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(who) => {
            let cert = CertificateDer::from_pem_file(pki.path(&format!("{who}.pem"))).unwrap();
            let key = PrivateKeyDer::from_pem_file(pki.path(&format!("{who}-key.pem"))).unwrap();
            builder.with_client_auth_cert(vec![cert], key).unwrap()
        }
    };
    ureq::AgentBuilder::new().tls_config(Arc::new(config)).timeout(Duration::from_secs(30)).build()
}

/// One request; `Err` carries transport failures (TLS refused and the like).
fn call(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> Result<(u16, serde_json::Value), String> {
    let mut req = agent.request(method, url);
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let result = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(&b.to_string()),
        None => req.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    let status = resp.status();
    let mut text = String::new();
    resp.into_reader().read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok((status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))))
}

fn vm(ns: &str, name: &str) -> serde_json::Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
           "metadata": {"name": name, "namespace": ns}, "spec": {}})
}

fn vms(ns: &str) -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines")
}

#[test]
fn https_with_tokens_and_client_certificates() {
    let pki = pki();
    let s = start(&pki);
    assert!(s.base.starts_with("https://127.0.0.1:"), "first line names https: {}", s.base);
    let anon = agent(&pki, None);
    let url = |p: &str| format!("{}{p}", s.base);
    // Health needs no credentials; everything else does.
    assert_eq!(call(&anon, "GET", &url("/healthz"), None, None).unwrap().0, 200);
    let (code, st) = call(&anon, "GET", &url(&vms("team-a")), None, None).unwrap();
    assert_eq!((code, st["reason"].as_str()), (401, Some("Unauthorized")), "{st}");
    // A token over TLS.
    let (code, st) =
        call(&anon, "POST", &url(&vms("team-b")), Some("tok-admin"), Some(&vm("team-b", "t")))
            .unwrap();
    assert_eq!(code, 201, "{st}");
    // A client certificate: CN=alice is the user, O=team a group the policy knows.
    let alice = agent(&pki, Some("alice"));
    let (code, st) =
        call(&alice, "POST", &url(&vms("team-a")), None, Some(&vm("team-a", "c"))).unwrap();
    assert_eq!(code, 201, "{st}");
    let (code, _) = call(&alice, "GET", &url(&format!("{}/c", vms("team-a"))), None, None).unwrap();
    assert_eq!(code, 200);
    // The certificate's user is alice, limited to team-a; it wins over a token, as in kube's
    // union authenticator.
    let all = url("/apis/kubevirt.io/v1/virtualmachines");
    let (code, st) = call(&alice, "GET", &all, Some("tok-admin"), None).unwrap();
    assert_eq!(code, 403, "{st}");
    assert!(st["message"].as_str().unwrap().contains("User \"alice\" cannot list"), "{st}");
    assert_eq!(call(&anon, "GET", &all, Some("tok-admin"), None).unwrap().0, 200);
}

#[test]
fn a_certificate_from_another_ca_is_refused() {
    let pki = pki();
    let s = start(&pki);
    let bob = agent(&pki, Some("bob"));
    match call(&bob, "GET", &format!("{}{}", s.base, vms("team-a")), None, None) {
        // rustls ends the handshake on an unknown issuer; a 401 would do as well.
        Err(_) => {}
        Ok((code, body)) => assert_eq!(code, 401, "{body}"),
    }
    // The server keeps serving others.
    let alice = agent(&pki, Some("alice"));
    assert_eq!(
        call(&alice, "GET", &format!("{}{}", s.base, vms("team-a")), None, None).unwrap().0,
        200
    );
}

#[test]
fn plain_http_to_the_tls_port_gets_no_answer() {
    let pki = pki();
    let s = start(&pki);
    let plain = s.base.replace("https://", "http://");
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
    match agent.get(&format!("{plain}/healthz")).call() {
        Ok(r) => panic!("plain HTTP was served: {}", r.status()),
        Err(ureq::Error::Status(code, _)) => panic!("plain HTTP was answered {code}"),
        Err(_) => {}
    }
}

#[test]
fn certificate_subjects_name_users() {
    let (issuer, _) = ca("x");
    // rcgen keeps one value per attribute type, so one O here; the server reads every O.
    let (pem, _) = leaf(&issuer, &[], "carol", &["a"], ExtendedKeyUsagePurpose::ClientAuth);
    use rustls_pki_types::pem::PemObject;
    let der = rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    let u = virt_apiserver::tls::user_from_certificate(&der).unwrap();
    assert_eq!(u.name, "carol");
    assert_eq!(u.groups, ["a", "system:authenticated"]);
}

/// Where kubectl is: `$KUBECTL`, else `kubectl` on PATH; missing kubectl fails the test.
fn kubectl() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return PathBuf::from(p);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|d| d.join("kubectl")).find(|p| p.is_file())
        })
        .unwrap_or_else(|| panic!("kubectl not found ($KUBECTL or PATH): the TLS tests need it"))
}

/// `virt-apiserver kubeconfig ARGS` written to `dir/name`.
fn kubeconfig(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = Command::new(binary()).arg("kubeconfig").args(args).output().unwrap();
    assert!(out.status.success(), "kubeconfig: {}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(name);
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

fn kubectl_get(config: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(kubectl())
        .arg("--kubeconfig")
        .arg(config)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .expect("run kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_connects_over_tls_with_a_generated_kubeconfig() {
    let pki = pki();
    let s = start(&pki);
    let alice = agent(&pki, Some("alice"));
    let (code, st) = call(
        &alice,
        "POST",
        &format!("{}{}", s.base, vms("team-a")),
        None,
        Some(&vm("team-a", "kvm")),
    )
    .unwrap();
    assert_eq!(code, 201, "{st}");
    let dir = tempfile::tempdir().unwrap();
    let ca = pki.arg("ca.pem");
    let with_token = kubeconfig(
        dir.path(),
        "token",
        &[
            "--server",
            &s.base,
            "--user",
            "admin",
            "--token",
            "tok-admin",
            "--certificate-authority",
            &ca,
        ],
    );
    let (ok, out, err) = kubectl_get(&with_token, &dir.path().join("cache1"), &["get", "vm", "-A"]);
    assert!(ok, "kubectl with a token: {err}");
    assert!(out.contains("kvm") && out.contains("team-a"), "{out}");

    let (cert, key) = (pki.arg("alice.pem"), pki.arg("alice-key.pem"));
    let with_cert = kubeconfig(
        dir.path(),
        "cert",
        &[
            "--server",
            &s.base,
            "--user",
            "alice",
            "--certificate-authority",
            &ca,
            "--client-certificate",
            &cert,
            "--client-key",
            &key,
        ],
    );
    let (ok, out, err) =
        kubectl_get(&with_cert, &dir.path().join("cache2"), &["get", "vm", "-n", "team-a"]);
    assert!(ok, "kubectl with a client certificate: {err}");
    assert!(out.contains("kvm"), "{out}");
    // The policy keeps the certificate's user (group team) out of team-b: kubectl shows the 403.
    let (ok, _, err) =
        kubectl_get(&with_cert, &dir.path().join("cache2"), &["get", "vm", "-n", "team-b"]);
    assert!(!ok);
    assert!(err.contains("forbidden") && err.contains("User \"alice\""), "{err}");
}

/// The `vnc` bridge over HTTPS: the CA verifies the server, the token authenticates, and
/// virt-api's check answers (no such VMI), said on stderr as virtctl says it; a bad token is 401.
#[test]
fn the_vnc_bridge_speaks_tls_with_a_token() {
    use std::io::BufRead;
    use std::process::Stdio;
    let pki = pki();
    let s = start(&pki);
    let bridge = |token: &str| {
        let mut child = Command::new(binary())
            .args(["vnc", "--server", &s.base, "--token", token, "-n", "team-a", "nope"])
            .args(["--certificate-authority", &pki.arg("ca.pem")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: serde_json::Value = serde_json::from_str(&line).unwrap();
        let mut tcp =
            std::net::TcpStream::connect(("127.0.0.1", port["port"].as_u64().unwrap() as u16))
                .unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // The viewer is dropped once the websocket is refused.
        assert_eq!(tcp.read(&mut [0u8; 12]).unwrap(), 0);
        child.kill().unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stderr).unwrap()
    };
    assert_eq!(
        bridge("tok-admin"),
        "can't access VMI nope: virtualmachineinstance.kubevirt.io \"nope\" not found\n"
    );
    assert_eq!(bridge("tok-wrong"), "can't access VMI nope: Unauthorized\n");
}
