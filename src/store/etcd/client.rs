//! The gRPC connection to etcd and the translation of its failures into `StoreError`.
//!
//! One balanced channel over every endpoint serves the unary calls (each bounded by
//! `REQUEST_TIMEOUT` on our side) and the watch streams. Responses may be large (a catching-up
//! watch batches up to 1000 revisions), so tonic's 4 MiB decode limit is lifted.

use std::time::Duration;

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use super::pb::kv_client::KvClient;
use super::pb::lease_client::LeaseClient;
use super::pb::watch_client::WatchClient;
use crate::store::StoreError;

/// How long one unary call may take before it is `Unavailable` (its outcome unknown).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Larger than any response etcd sends with its default limits.
const MAX_MESSAGE: usize = 1 << 30;

/// Where etcd is and how to reach it (kube-apiserver's `--etcd-*` flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs, `http://host:port` or `https://host:port`.
    pub servers: Vec<String>,
    /// The key prefix every key lives under (`--etcd-prefix`, default `/registry`).
    pub prefix: String,
    /// PEM files: the CA that signed the servers' certificates, and the client's own pair.
    pub cafile: Option<String>,
    pub certfile: Option<String>,
    pub keyfile: Option<String>,
}

/// The generated clients over one channel; cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub kv: KvClient<Channel>,
    pub watch: WatchClient<Channel>,
    /// Leader election's lease (`election`).
    pub lease: LeaseClient<Channel>,
}

impl Client {
    /// A lazily connecting channel over every server; must run inside a tokio runtime.
    pub fn new(cfg: &EtcdConfig) -> Result<Client, StoreError> {
        if cfg.servers.is_empty() {
            return Err(StoreError::Unavailable("no etcd server given".into()));
        }
        let tls = tls(cfg)?;
        let mut endpoints = Vec::new();
        for url in &cfg.servers {
            let bad = |e: &dyn std::fmt::Display| {
                StoreError::Unavailable(format!("etcd server {url:?}: {e}"))
            };
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| bad(&e))?
                .connect_timeout(CONNECT_TIMEOUT)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .keep_alive_while_idle(true);
            if let Some(tls) = &tls {
                endpoint = endpoint.tls_config(tls.clone()).map_err(|e| bad(&e))?;
            }
            endpoints.push(endpoint);
        }
        let channel = Channel::balance_list(endpoints.into_iter());
        Ok(Client {
            kv: KvClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
            watch: WatchClient::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE),
            lease: LeaseClient::new(channel),
        })
    }
}

fn tls(cfg: &EtcdConfig) -> Result<Option<ClientTlsConfig>, StoreError> {
    let read = |path: &str| {
        std::fs::read(path).map_err(|e| StoreError::Unavailable(format!("{path}: {e}")))
    };
    let mut tls = ClientTlsConfig::new();
    let mut any = false;
    if let Some(ca) = &cfg.cafile {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        any = true;
    }
    match (&cfg.certfile, &cfg.keyfile) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            any = true;
        }
        (None, None) => {}
        _ => {
            return Err(StoreError::Unavailable(
                "--etcd-certfile and --etcd-keyfile go together".into(),
            ))
        }
    }
    let https = cfg.servers.iter().any(|s| s.starts_with("https://"));
    // Without a CA file no root is trusted: `--etcd-cafile` is needed for https.
    Ok((any || https).then_some(tls))
}

/// A unary call bounded in time: a timeout is `Unavailable`, whatever became of the request.
pub async fn call<T>(
    what: &str,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, Status> {
    match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
        Ok(answer) => answer.map(tonic::Response::into_inner),
        Err(_) => Err(Status::deadline_exceeded(format!("etcd {what}: no answer in time"))),
    }
}

/// What an etcd failure means to the store, past the cases a caller reads itself (compacted and
/// future revisions, see `is_compacted`, `is_future`).
pub fn store_error(status: &Status) -> StoreError {
    let msg = format!("etcd: {}", status.message());
    match status.code() {
        _ if status.message().contains("request is too large")
            || status.message().contains("larger than max") =>
        {
            StoreError::TooLarge(msg)
        }
        Code::ResourceExhausted if status.message().contains("database space exceeded") => {
            StoreError::NoSpace(msg)
        }
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Cancelled
        | Code::Aborted
        | Code::ResourceExhausted
        | Code::Unknown => StoreError::Unavailable(msg),
        _ => StoreError::Internal(msg),
    }
}

/// etcd's `ErrCompacted`: the revision asked for is below the compacted one.
pub fn is_compacted(status: &Status) -> bool {
    status.code() == Code::OutOfRange && status.message().contains("compacted")
}

/// etcd's `ErrFutureRev`: the revision asked for is above the current one.
pub fn is_future(status: &Status) -> bool {
    status.code() == Code::OutOfRange && status.message().contains("future revision")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_classified() {
        let too_large = Status::invalid_argument("etcdserver: request is too large");
        assert!(matches!(store_error(&too_large), StoreError::TooLarge(_)));
        let full = Status::resource_exhausted("etcdserver: mvcc: database space exceeded");
        assert!(matches!(store_error(&full), StoreError::NoSpace(_)));
        let down = Status::unavailable("tcp connect error");
        assert!(matches!(store_error(&down), StoreError::Unavailable(_)));
        assert!(is_compacted(&Status::out_of_range(
            "etcdserver: mvcc: required revision has been compacted"
        )));
        assert!(is_future(&Status::out_of_range(
            "etcdserver: mvcc: required revision is a future revision"
        )));
    }
}
