//! A test PKI made at test time (rcgen): a CA, a server certificate for 127.0.0.1 and
//! localhost, client certificates, a token file and an ABAC policy, for the TLS, authentication
//! and etcd TLS tests.

use super::*;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

pub const TOKENS: &str = "tok-admin,admin,1000\n";
/// The `team` group (alice's certificate's O) may write in team-a only; admin may do anything.
pub const POLICY: &str = r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"team","namespace":"team-a","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"admin","namespace":"*","resource":"*","apiGroup":"*","nonResourcePath":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
"#;

/// PEM files in a temporary directory: a CA, a server certificate for 127.0.0.1/localhost, a
/// client certificate CN=alice O=team and one for bob signed by another CA.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

pub fn ca(name: &str) -> (Issuer<'static, KeyPair>, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (Issuer::new(params, key), cert.pem())
}

pub fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    sans: &[&str],
    cn: &str,
    orgs: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    for o in orgs {
        params.distinguished_name.push(DnType::OrganizationName, *o);
    }
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// The test PKI (`Pki`); the etcd tests use it too.
pub fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    let (ca_issuer, ca_pem) = ca("virt-apiserver test CA");
    let (server, server_key) = leaf(
        &ca_issuer,
        &["127.0.0.1", "localhost"],
        "virt-apiserver",
        &[],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (alice, alice_key) =
        leaf(&ca_issuer, &[], "alice", &["team"], ExtendedKeyUsagePurpose::ClientAuth);
    let (other_issuer, _) = ca("some other CA");
    let (bob, bob_key) =
        leaf(&other_issuer, &[], "bob", &["team"], ExtendedKeyUsagePurpose::ClientAuth);
    write("ca.pem", &ca_pem);
    write("server.pem", &server);
    write("server-key.pem", &server_key);
    write("alice.pem", &alice);
    write("alice-key.pem", &alice_key);
    write("bob.pem", &bob);
    write("bob-key.pem", &bob_key);
    write("tokens.csv", TOKENS);
    write("policy.jsonl", POLICY);
    Pki { dir }
}
