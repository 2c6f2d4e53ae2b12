//! What a kind's containers write to their logs (`logs` in the lifecycle file): per
//! container, the lines its process wrote, each there once its `when` holds of the object and
//! its related objects, at the time `at` reads, in the form `line` renders. A log is derived
//! from the state the lines describe, not kept: the kubelet's log reader asks for it.

use serde::Deserialize;
use serde_json::Value;

use crate::{Ctx, Pred, Template};

/// One container's log (a container no entry names writes nothing).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerLog {
    pub container: String,
    pub lines: Vec<LogLine>,
}

/// One line of a container's log.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogLine {
    /// Whether the line was written (what it tells of happened).
    pub when: Pred,
    /// When it was written: an RFC 3339 time (text).
    pub at: Template,
    /// The line: text, or an object the reader encodes as one JSON line.
    pub line: Template,
}

/// The lines `container` wrote, in file order, each with the time `at` gives it (those whose
/// time reads empty are left out: nothing says when they were written).
pub fn lines(logs: &[ContainerLog], container: &str, ctx: &Ctx<'_>) -> Vec<(String, Value)> {
    let Some(log) = logs.iter().find(|l| l.container == container) else {
        return Vec::new();
    };
    log.lines
        .iter()
        .filter(|l| ctx.matches(&l.when))
        .map(|l| (ctx.text(&l.at), ctx.render(&l.line)))
        .filter(|(at, _)| !at.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rng;
    use serde_json::json;

    #[test]
    fn a_containers_lines_are_those_whose_when_holds() {
        let lc = crate::parse(
            r#"
kinds:
  - resource: {group: "", kind: Pod}
    logs:
      - container: main
        lines:
          - {when: {exists: .status.startTime}, at: "{{ .status.startTime }}", line: {msg: started, pod: "{{ .metadata.name }}"}}
          - {when: {exists: .status.endTime}, at: "{{ .status.endTime }}", line: "ended"}
          - {when: {exists: .status.startTime}, at: "{{ .status.never }}", line: "no time"}
"#,
        )
        .unwrap();
        let kind = &lc.kinds[0];
        let pod =
            json!({"metadata": {"name": "p"}, "status": {"startTime": "2026-01-01T00:00:00Z"}});
        let ctx = Ctx::new(kind, &pod, String::new(), 1, Rng::new(0));
        assert_eq!(
            lines(&kind.logs, "main", &ctx),
            [("2026-01-01T00:00:00Z".to_string(), json!({"msg": "started", "pod": "p"}))]
        );
        assert_eq!(lines(&kind.logs, "other", &ctx), []);
    }
}
