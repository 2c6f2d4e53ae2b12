//! What the simulated cluster's containers write to their logs, as the kubelet's log reader
//! answers them (the registry's `LogSource`): the `logs` of the pod's lifecycle kind, lines
//! derived from the pod and the objects related to it (its VMI), evaluated when a log is read.
//! No log is kept: a line is there while the state it tells of is.

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use lifecycle::{Ctx, Lifecycles, ResourceRef, Rng};
use serde_json::Value;

use super::related::related;
use crate::object::meta::{now_rfc3339, parse_rfc3339, rfc3339};
use crate::registry::{LogSource, Registry};
use crate::resource::ResourceInfo;

/// The lifecycles' container logs, read under `--simulate` through `registry` (the objects a
/// pod relates to).
#[derive(Debug)]
pub struct LauncherLogs {
    registry: Registry,
    program: Arc<Lifecycles>,
}

impl LauncherLogs {
    pub fn new(registry: Registry, program: Arc<Lifecycles>) -> LauncherLogs {
        LauncherLogs { registry, program }
    }
}

impl LogSource for LauncherLogs {
    fn lines<'a>(
        &'a self,
        res: &'static ResourceInfo,
        pod: &'a Value,
        container: &'a str,
    ) -> LocalBoxFuture<'a, Vec<(String, String)>> {
        Box::pin(async move {
            let r = ResourceRef { group: res.group.to_string(), kind: res.kind.to_string() };
            let Some(kind) = self.program.kind(&r).filter(|k| !k.logs.is_empty()) else {
                return Vec::new();
            };
            let mut ctx = Ctx::new(kind, pod, now_rfc3339(), 1, Rng::new(0));
            ctx.named = related(&self.registry, (kind, None), res, pod, &ctx).await;
            let mut lines: Vec<(i64, String, String)> =
                lifecycle::logs::lines(&kind.logs, container, &ctx)
                    .into_iter()
                    .filter_map(|(at, line)| {
                        let secs = parse_rfc3339(&at)?;
                        Some((secs, rfc3339(secs), encode(line, secs)))
                    })
                    .collect();
            // Written in time order; lines of one second in the file's order.
            lines.sort_by_key(|(secs, ..)| *secs);
            lines.into_iter().map(|(_, at, line)| (at, line)).collect()
        })
    }
}

/// One line as the logger writes it: text as it is; an object as one JSON line, its keys
/// sorted (go-kit's JSON logger marshals a map), with the `timestamp` KubeVirt's logger adds
/// (KV client-go/log/log.go logTimestampFormat `2006-01-02T15:04:05.000000Z`).
fn encode(line: Value, secs: i64) -> String {
    match line {
        Value::String(text) => text,
        Value::Object(mut fields) => {
            let at = rfc3339(secs);
            let micros = format!("{}.000000Z", at.trim_end_matches('Z'));
            fields.insert("timestamp".into(), Value::String(micros));
            Value::Object(fields).to_string()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_is_one_json_line_with_kubevirts_timestamp() {
        let secs = parse_rfc3339("2026-01-02T03:04:05Z").unwrap();
        let line = json!({"msg": "Marked as ready", "level": "info", "component": "virt-launcher"});
        assert_eq!(
            encode(line, secs),
            r#"{"component":"virt-launcher","level":"info","msg":"Marked as ready","timestamp":"2026-01-02T03:04:05.000000Z"}"#
        );
        assert_eq!(encode(json!("plain text"), secs), "plain text");
    }
}
