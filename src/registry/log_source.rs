//! Where containers' logs come from, handed to the registry from above (as the kubelet is to
//! kube's), and the options a log is read with (`logs` reads them).

use std::fmt::Debug;

use futures_util::future::LocalBoxFuture;
use serde_json::Value;

use crate::resource::ResourceInfo;

/// `PodLogOptions`, as the query gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOptions {
    pub container: String,
    /// Answered like a read that ends: what the source has now (no stream is kept open).
    pub follow: bool,
    pub previous: bool,
    pub since_seconds: Option<i64>,
    /// RFC 3339, as metav1.Time reads it (seconds).
    pub since_time: Option<String>,
    pub timestamps: bool,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub insecure_skip_tls_verify_backend: bool,
}

/// Where containers' logs come from: the lines a container wrote, oldest first, each with its
/// RFC 3339 (nano) time. Handed to the registry from above, as the kubelet is to kube's (a
/// source may read what else is stored: the objects a log tells of).
pub trait LogSource: Debug + Send + Sync {
    fn lines<'a>(
        &'a self,
        res: &'static ResourceInfo,
        pod: &'a Value,
        container: &'a str,
    ) -> LocalBoxFuture<'a, Vec<(String, String)>>;
}

/// No kubelet: every container's log is empty.
#[derive(Debug, Default)]
pub struct NoLogs;

impl LogSource for NoLogs {
    fn lines<'a>(
        &'a self,
        _: &'static ResourceInfo,
        _: &'a Value,
        _: &'a str,
    ) -> LocalBoxFuture<'a, Vec<(String, String)>> {
        Box::pin(std::future::ready(Vec::new()))
    }
}
