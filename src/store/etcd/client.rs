//! The gRPC connection to etcd, its failover between members, and the translation of its
//! failures into `StoreError`.
//!
//! One lazily connecting channel per member; every call goes to the current member, and a
//! member that fails (refused or reset connections, a timeout, etcd's `no leader`) is left for
//! the next one, as clientv3 does. What is retried there follows clientv3's rules: reads,
//! watches and idempotent writes after any failure of the member (`Retry::Always`), but a
//! compare-and-swap transaction only when it surely never reached etcd (`Retry::IfNotSent`: the
//! connection was refused, or the member refused it for want of a leader), since after an unknown
//! outcome its retry would turn the caller's own success into a failed comparison. Every request
//! carries kube's `WithRequireLeader`, so a member cut off from its cluster refuses at once, before
//! doing anything, instead of holding the call. The calls to a member are bounded together by
//! `REQUEST_TIMEOUT`. Responses may be large (a catching-up watch batches up to 1000 revisions),
//! so tonic's 4 MiB decode limit is lifted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::codec::Streaming;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use super::pb::kv_client::KvClient;
use super::pb::lease_client::LeaseClient;
use super::pb::watch_client::WatchClient;
use super::pb::watch_request::RequestUnion;
use super::pb::{
    CompactionRequest, CompactionResponse, LeaseGrantRequest, LeaseGrantResponse,
    LeaseKeepAliveRequest, LeaseKeepAliveResponse, LeaseRevokeRequest, LeaseRevokeResponse,
    PutRequest, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse,
    WatchCreateRequest, WatchRequest, WatchResponse,
};
use crate::store::StoreError;

/// How long a call may take, its retries on other members included, before it is `Unavailable`
/// (its outcome unknown when the last attempt was sent).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Larger than any response etcd sends with its default limits.
const MAX_MESSAGE: usize = 1 << 30;
/// Between rounds over every member (doubled up to `MAX_BACKOFF`): an election takes a second
/// or two, and a call should live through it rather than spin.
const BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

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

/// Whether a call may be sent again after a failure of the member it went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Reads, watches and writes whose repetition changes nothing (clientv3's repeatable RPCs).
    Always,
    /// Compare-and-swap transactions: only when the member surely never took the request.
    IfNotSent,
}

/// The members and which one calls go to; cheap to clone.
#[derive(Clone)]
pub struct Client {
    members: Arc<[Member]>,
    current: Arc<AtomicUsize>,
}

/// The generated clients over one member's channel.
#[derive(Clone)]
struct Member {
    kv: KvClient<Channel>,
    watch: WatchClient<Channel>,
    lease: LeaseClient<Channel>,
}

/// A bidirectional stream open on one member: `requests` keeps it open (and carries more), and
/// a stream that fails leaves its member for the next one.
pub struct Stream<Req, Resp> {
    pub requests: mpsc::Sender<Req>,
    responses: Streaming<Resp>,
    member: usize,
    client: Client,
}

impl<Req, Resp> Stream<Req, Resp> {
    /// The next response; `Ok(None)` when etcd closed the stream.
    pub async fn message(&mut self) -> Result<Option<Resp>, Status> {
        let next = self.responses.message().await;
        if !matches!(next, Ok(Some(_))) {
            self.client.lost(self.member);
        }
        next
    }
}

impl Client {
    /// A lazily connecting channel per server; must run inside a tokio runtime.
    pub fn new(cfg: &EtcdConfig) -> Result<Client, StoreError> {
        if cfg.servers.is_empty() {
            return Err(StoreError::Unavailable("no etcd server given".into()));
        }
        let tls = tls(cfg)?;
        let mut members = Vec::new();
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
            let channel = endpoint.connect_lazy();
            members.push(Member {
                kv: KvClient::new(channel.clone())
                    .max_decoding_message_size(MAX_MESSAGE)
                    .max_encoding_message_size(MAX_MESSAGE),
                watch: WatchClient::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE),
                lease: LeaseClient::new(channel),
            });
        }
        Ok(Client { members: members.into(), current: Arc::new(AtomicUsize::new(0)) })
    }

    pub async fn range(&self, req: RangeRequest) -> Result<RangeResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req.clone());
            async move { m.kv.range(req).await }
        };
        Ok(self.call("range", Retry::Always, call).await?.0)
    }

    pub async fn put(&self, req: PutRequest) -> Result<PutResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req.clone());
            async move { m.kv.put(req).await }
        };
        Ok(self.call("put", Retry::Always, call).await?.0)
    }

    pub async fn txn(&self, req: TxnRequest, retry: Retry) -> Result<TxnResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req.clone());
            async move { m.kv.txn(req).await }
        };
        Ok(self.call("txn", retry, call).await?.0)
    }

    /// Compacting again to a revision is harmless (etcd answers that it is compacted).
    pub async fn compact(&self, req: CompactionRequest) -> Result<CompactionResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req);
            async move { m.kv.compact(req).await }
        };
        Ok(self.call("compact", Retry::Always, call).await?.0)
    }

    /// A grant repeated after an unknown outcome leaves at worst a lease nobody keeps alive,
    /// which expires.
    pub async fn lease_grant(&self, req: LeaseGrantRequest) -> Result<LeaseGrantResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req);
            async move { m.lease.lease_grant(req).await }
        };
        Ok(self.call("lease grant", Retry::Always, call).await?.0)
    }

    pub async fn lease_revoke(
        &self,
        req: LeaseRevokeRequest,
    ) -> Result<LeaseRevokeResponse, Status> {
        let call = |mut m: Member| {
            let req = leader_required(req);
            async move { m.lease.lease_revoke(req).await }
        };
        Ok(self.call("lease revoke", Retry::Always, call).await?.0)
    }

    /// Opens a watch stream with `create` as its first request.
    pub async fn watch(
        &self,
        create: WatchCreateRequest,
    ) -> Result<Stream<WatchRequest, WatchResponse>, Status> {
        let first = WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) };
        self.stream("watch", first, |mut m, req| async move { m.watch.watch(req).await }).await
    }

    /// Opens a keepalive stream for `lease`, its first renewal sent (etcd answers a stream's
    /// headers with its first message).
    pub async fn keep_alive(
        &self,
        lease: i64,
    ) -> Result<Stream<LeaseKeepAliveRequest, LeaseKeepAliveResponse>, Status> {
        let first = LeaseKeepAliveRequest { id: lease };
        let open = |mut m: Member, req| async move { m.lease.lease_keep_alive(req).await };
        self.stream("lease keepalive", first, open).await
    }

    async fn stream<Req, Resp, F, Fut>(
        &self,
        what: &str,
        first: Req,
        mut open: F,
    ) -> Result<Stream<Req, Resp>, Status>
    where
        Req: Clone + Send + 'static,
        F: FnMut(Member, tonic::Request<tokio_stream::wrappers::ReceiverStream<Req>>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<Streaming<Resp>>, Status>>,
    {
        let mut requests = None;
        let attempt = |m: Member| {
            // Each attempt has its own request stream: a failed one consumed its own.
            let (sender, outgoing) = mpsc::channel(1);
            let _ = sender.try_send(first.clone());
            requests = Some(sender);
            open(m, leader_required(tokio_stream::wrappers::ReceiverStream::new(outgoing)))
        };
        let (responses, member) = self.call(what, Retry::Always, attempt).await?;
        let requests = requests.expect("an attempt was made");
        Ok(Stream { requests, responses, member, client: self.clone() })
    }

    /// Calls the current member, moving on to the next on a failure `retry` allows to repeat,
    /// until one answers or `REQUEST_TIMEOUT` has passed; answers which member it was.
    async fn call<T, F, Fut>(
        &self,
        what: &str,
        retry: Retry,
        mut rpc: F,
    ) -> Result<(T, usize), Status>
    where
        F: FnMut(Member) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut backoff = BACKOFF;
        let mut tried = 0;
        loop {
            let at = self.current.load(Ordering::Acquire);
            let answer =
                match tokio::time::timeout_at(deadline, rpc(self.members[at].clone())).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        self.lost(at);
                        return Err(Status::deadline_exceeded(format!(
                            "etcd {what}: no answer in time"
                        )));
                    }
                };
            let failure = match answer {
                Ok(resp) => return Ok((resp.into_inner(), at)),
                Err(failure) => failure,
            };
            if !member_failed(&failure) {
                return Err(failure);
            }
            self.lost(at);
            let again = match retry {
                Retry::Always => true,
                Retry::IfNotSent => not_sent(&failure),
            };
            if !again {
                return Err(failure);
            }
            log::debug!("etcd {what}: member {at} failed ({}); trying the next", failure.message());
            tried += 1;
            if tried % self.members.len() == 0 {
                // Every member failed once: wait (an election, a restart) before the next round.
                if Instant::now() + backoff >= deadline {
                    return Err(failure);
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// The member `at` failed: calls go to the next one, unless another caller moved on already.
    fn lost(&self, at: usize) {
        let next = (at + 1) % self.members.len();
        let _ = self.current.compare_exchange(at, next, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// kube's `WithRequireLeader`: a member without a leader refuses the request before handling it
/// (etcd's gRPC interceptor answers `no leader`), rather than hold it until its own timeout.
fn leader_required<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert("hasleader", tonic::metadata::MetadataValue::from_static("true"));
    req
}

/// etcd's answer to a request that needs a leader, from a member that has none.
const NO_LEADER: &str = "etcdserver: no leader";

/// The failure is the member's (or the way to it), not the request's: another may answer.
pub fn member_failed(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::Aborted | Code::Internal
    ) && !status.message().contains("request is too large")
        && !status.message().contains("larger than max")
}

/// The request surely never reached etcd's handling: no connection was made, or the member
/// refused it for want of a leader (the interceptor runs before the handler).
fn not_sent(status: &Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(status);
    while let Some(err) = source {
        if err.downcast_ref::<tonic::ConnectError>().is_some() {
            return true;
        }
        source = err.source();
    }
    let msg = status.message();
    msg == NO_LEADER
        || msg.contains("tcp connect error")
        || msg.starts_with("Service was not ready")
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

    /// A port nothing listens on (bound, then released).
    fn closed_port() -> String {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        format!("http://127.0.0.1:{port}")
    }

    #[test]
    fn a_refused_connection_was_surely_not_sent() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let cfg = EtcdConfig { servers: vec![closed_port()], ..Default::default() };
            let client = Client::new(&cfg).unwrap();
            let mut member = client.members[0].clone();
            let refused = member.kv.range(RangeRequest::default()).await.unwrap_err();
            assert!(member_failed(&refused), "{refused:?}");
            assert!(not_sent(&refused), "{refused:?}");
        });
        assert!(not_sent(&Status::unavailable(NO_LEADER)));
        let unknown = Status::unavailable("etcdserver: request timed out");
        assert!(member_failed(&unknown) && !not_sent(&unknown));
        assert!(!member_failed(&Status::invalid_argument("etcdserver: request is too large")));
        assert!(!member_failed(&Status::out_of_range(
            "etcdserver: mvcc: required revision has been compacted"
        )));
    }

    /// A dead endpoint is left for the next one: reads, writes that were never sent, and
    /// watches all go to the live member, and later calls start there.
    #[test]
    fn a_dead_member_is_left_for_the_next() {
        // With the contract suite's etcd tests, one at a time: they count revisions.
        let _one_at_a_time = super::super::harness::one_at_a_time();
        let live = super::super::harness::TestEtcd::shared().url.clone();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let cfg = EtcdConfig { servers: vec![closed_port(), live], ..Default::default() };
            let client = Client::new(&cfg).unwrap();
            let key = format!("/failover-{}", std::process::id()).into_bytes();
            let put = PutRequest { key: key.clone(), value: b"v".to_vec(), ..Default::default() };
            let txn = TxnRequest {
                success: vec![super::super::pb::RequestOp {
                    request: Some(super::super::pb::request_op::Request::RequestPut(put)),
                }],
                ..Default::default()
            };
            assert!(client.txn(txn, Retry::IfNotSent).await.unwrap().succeeded);
            assert_eq!(client.current.load(Ordering::Acquire), 1);
            client.current.store(0, Ordering::Release);
            let read = client.range(RangeRequest { key: key.clone(), ..Default::default() });
            assert_eq!(read.await.unwrap().kvs[0].value, b"v");
            client.current.store(0, Ordering::Release);
            let create = WatchCreateRequest { key, ..Default::default() };
            let mut watch = client.watch(create).await.unwrap();
            assert!(watch.message().await.unwrap().unwrap().created);
        });
    }
}
