//! TLS with rustls on the ring provider: the server certificate and key from PEM files, and
//! client certificates verified against `--client-ca-file`, whose subject names the user as
//! kube-apiserver reads it (CN = user name, each O = a group).

use std::any::Any;
use std::sync::Arc;

use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;
use actix_web::rt::net::TcpStream;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::http::authn::User;

/// Where the server's TLS material lives.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    pub cert_file: String,
    pub key_file: String,
    /// CA bundle that signs client certificates; none means no client-certificate authentication.
    pub client_ca_file: Option<String>,
}

/// The user a verified client certificate stands for, kept in the connection's extensions.
#[derive(Debug, Clone)]
pub struct ClientCertUser(pub User);

fn certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{path}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{path}: no CERTIFICATE block"));
    }
    Ok(certs)
}

/// Builds the rustls configuration. A client certificate is asked for but not required, as
/// kube-apiserver does (`VerifyClientCertIfGiven`): requests without one may still carry a
/// token, are answered 401 without, and the health endpoints stay reachable; a certificate that
/// is presented and fails verification ends the handshake.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs(&files.cert_file)?;
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|e| format!("{}: {e}", files.key_file))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &files.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for c in certs(ca)? {
                roots.add(c).map_err(|e| format!("{ca}: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("{ca}: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("{} / {}: {e}", files.cert_file, files.key_file))?;
    Ok(Arc::new(config))
}

/// The user named by a certificate's subject: CN is the name, every O a group. A certificate
/// without a CN names nobody.
pub fn user_from_certificate(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> =
        subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect();
    groups.push("system:authenticated".into());
    Some(User { name, uid: String::new(), groups })
}

/// `HttpServer::on_connect` hook: rustls has verified the peer's chain by now, so the leaf
/// certificate's subject is the connection's user.
pub fn on_connect(conn: &dyn Any, ext: &mut Extensions) {
    let Some(tls) = conn.downcast_ref::<TlsStream<TcpStream>>() else {
        return;
    };
    let (_, session) = tls.get_ref();
    if let Some(user) =
        session.peer_certificates().and_then(|c| c.first()).and_then(|c| user_from_certificate(c))
    {
        ext.insert(ClientCertUser(user));
    }
}
