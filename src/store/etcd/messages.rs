//! etcd's messages as every part of the backend builds and reads them: a put, a get, the
//! create-if-absent transaction and the comparison a fenced write adds; and from the answers, a
//! header's revision, the key an Else branch's Get found, whether a fenced transaction failed for
//! its fence, a revision stored as a value, and why a watch ended.

use super::pb;
use super::pb::compare::{CompareResult, CompareTarget, TargetUnion};
use super::pb::request_op::Request;
use super::pb::response_op::Response;
use super::pb::{
    Compare, KeyValue as PbKv, PutRequest, RangeRequest, RequestOp, TxnRequest, TxnResponse,
};
use crate::store::backend::Fence;

pub fn put(key: &[u8], value: &[u8]) -> RequestOp {
    let put = PutRequest { key: key.to_vec(), value: value.to_vec(), ..Default::default() };
    RequestOp { request: Some(Request::RequestPut(put)) }
}

pub fn get(key: &[u8]) -> RequestOp {
    let range = RangeRequest { key: key.to_vec(), ..Default::default() };
    RequestOp { request: Some(Request::RequestRange(range)) }
}

/// A transaction that does `put` if `key` does not exist, else reads it.
pub fn if_absent(key: &[u8], put: RequestOp) -> TxnRequest {
    TxnRequest {
        compare: vec![Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Create as i32,
            key: key.to_vec(),
            target_union: Some(TargetUnion::CreateRevision(0)),
            ..Default::default()
        }],
        success: vec![put],
        failure: vec![get(key)],
    }
}

/// The comparison a fenced write's transaction adds (`election`'s fencing).
pub fn fence_compare(fence: &Fence) -> Compare {
    Compare {
        result: CompareResult::Equal as i32,
        target: CompareTarget::Create as i32,
        key: fence.key.as_bytes().to_vec(),
        target_union: Some(TargetUnion::CreateRevision(fence.rev as i64)),
        ..Default::default()
    }
}

/// The key the Else branch's Get found, if any.
pub fn first_kv(resp: &TxnResponse) -> Option<&PbKv> {
    match resp.responses.first()?.response.as_ref()? {
        Response::ResponseRange(r) => r.kvs.first(),
        _ => None,
    }
}

/// Whether a failed fenced transaction failed for its fence: its Else branch's second Get (of
/// the fence's key) finds no key of the fence's revision.
pub fn fenced_out(resp: &TxnResponse, fence: &Fence) -> bool {
    let kv = match resp.responses.get(1).and_then(|r| r.response.as_ref()) {
        Some(Response::ResponseRange(r)) => r.kvs.first(),
        _ => None,
    };
    kv.is_none_or(|kv| kv.create_revision as u64 != fence.rev)
}

pub fn header_revision(header: Option<&pb::ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.revision.max(0) as u64)
}

pub fn parse_revision(value: &[u8]) -> u64 {
    std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Why a watch stream ended.
pub enum WatchEnd {
    /// Its start is below etcd's compacted revision.
    Compacted(u64),
    Failed(String),
}

pub fn canceled(resp: &pb::WatchResponse) -> WatchEnd {
    if resp.compact_revision > 0 {
        WatchEnd::Compacted(resp.compact_revision as u64)
    } else {
        WatchEnd::Failed(format!("etcd canceled the watch: {}", resp.cancel_reason))
    }
}
