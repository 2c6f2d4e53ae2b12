//! kube's Pod `log` subresource (K8S release-1.32 `pkg/registry/core/pod/rest/log.go` LogREST.Get,
//! `pkg/registry/core/pod/strategy.go` LogLocation, `pkg/apis/core/validation/validation.go`
//! ValidatePodLogOptions): the options checked, the container chosen, and the lines of a log
//! source handed in from above, filtered as the kubelet filters a container's log
//! (K8S `pkg/kubelet/kuberuntime/logs/logs.go`).

use serde_json::Value;

use super::log_source::LogOptions;
use super::{Registry, Target};
use crate::object::error::{ApiError, Cause};
use crate::object::meta::parse_rfc3339;
use crate::object::At;
use crate::registry::keys::object_key;
use crate::resource::ResourceInfo;

impl Registry {
    /// `GET …/{name}/log`: the log text, or `None` when the object has no node yet (kube's
    /// LogLocation gives no location, and its streamer answers 204 No Content).
    pub async fn logs(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        opts: &LogOptions,
    ) -> Result<Option<String>, ApiError> {
        let name = target.name();
        let causes = validate(opts);
        if !causes.is_empty() {
            // errors.NewInvalid(api.Kind("PodLogOptions"), name, errs): core group, no plural.
            return Err(ApiError::Invalid {
                group: String::new(),
                details_kind: "PodLogOptions".into(),
                qualified: "PodLogOptions".into(),
                name: name.into(),
                causes,
            });
        }
        let key = object_key(res, target.ns(), name);
        let pod = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
        let container = choose_container(&pod, name, &opts.container)?;
        let node = pod.at("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if node.is_empty() {
            return Ok(None);
        }
        let lines = self.log_source.lines(res, &pod, &container).await;
        Ok(Some(render(&lines, opts, std::time::SystemTime::now())))
    }
}

/// ValidatePodLogOptions (1.32, split streams off).
fn validate(opts: &LogOptions) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(n) = opts.tail_lines.filter(|n| *n < 0) {
        causes.push(Cause::invalid(
            "tailLines",
            &n.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(n) = opts.limit_bytes.filter(|n| *n < 1) {
        causes.push(Cause::invalid("limitBytes", &n.to_string(), "must be greater than 0"));
    }
    match (opts.since_seconds, &opts.since_time) {
        (Some(_), Some(_)) => causes.push(Cause::forbidden(
            "",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        (Some(n), None) if n < 1 => {
            causes.push(Cause::invalid("sinceSeconds", &n.to_string(), "must be greater than 0"))
        }
        _ => {}
    }
    causes
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    let items = pod.at(&format!("/spec/{list}")).and_then(Value::as_array);
    let names = items.into_iter().flatten().filter_map(|c| c["name"].as_str());
    names.map(str::to_string).collect()
}

/// LogLocation's choice of container, in its words: the only container when none is named.
fn choose_container(pod: &Value, name: &str, asked: &str) -> Result<String, ApiError> {
    let containers = names(pod, "containers");
    if asked.is_empty() {
        return match containers.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            many => {
                // getContainerNames joins with spaces, inside the brackets the format adds.
                let mut msg = format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    many.join(" ")
                );
                let init = names(pod, "initContainers");
                if !init.is_empty() {
                    msg += &format!(" or one of the init containers: [{}]", init.join(" "));
                }
                Err(ApiError::bad_request(msg))
            }
        };
    }
    // podHasContainerWithName: every kind of container.
    let all = ["containers", "initContainers", "ephemeralContainers"];
    if all.iter().any(|l| names(pod, l).iter().any(|n| n == asked)) {
        Ok(asked.to_string())
    } else {
        Err(ApiError::bad_request(format!("container {asked} is not valid for pod {name}")))
    }
}

/// Seconds and nanoseconds of an RFC 3339 (nano) UTC time.
fn instant(t: &str) -> Option<(i64, u32)> {
    let secs = parse_rfc3339(t)?;
    let nanos = match t.get(19..).and_then(|r| r.strip_prefix('.')) {
        Some(frac) => {
            let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
            format!("{digits:0<9}").get(..9)?.parse().ok()?
        }
        None => 0,
    };
    Some((secs, nanos))
}

/// The kubelet's reading of a log with these options: the last `tailLines` lines, those from
/// `sinceTime` (or `sinceSeconds` ago) on, each prefixed with its time and a space under
/// `timestamps`, cut after `limitBytes` bytes (mid-line, as its limited writer cuts).
pub fn render(lines: &[(String, String)], opts: &LogOptions, now: std::time::SystemTime) -> String {
    let since = match (&opts.since_time, opts.since_seconds) {
        (Some(t), _) => instant(t),
        (None, Some(s)) => {
            let now = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Some((now.as_secs() as i64 - s, now.subsec_nanos()))
        }
        (None, None) => None,
    };
    let tail = opts.tail_lines.map_or(lines.len(), |n| (n.max(0) as usize).min(lines.len()));
    let mut out = String::new();
    for (time, line) in &lines[lines.len() - tail..] {
        if let Some(since) = since {
            if instant(time).is_some_and(|t| t < since) {
                continue;
            }
        }
        if opts.timestamps {
            out.push_str(time);
            out.push(' ');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(limit) = opts.limit_bytes.and_then(|n| usize::try_from(n).ok()) {
        if out.len() > limit {
            let mut cut = limit;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    fn lines() -> Vec<(String, String)> {
        [
            ("2026-01-01T00:00:00.100000000Z", "one"),
            ("2026-01-01T00:00:01.500000000Z", "two"),
            ("2026-01-01T00:00:02Z", "three"),
        ]
        .iter()
        .map(|(t, l)| (t.to_string(), l.to_string()))
        .collect()
    }

    #[test]
    fn the_options_filter_as_the_kubelet_does() {
        let now =
            UNIX_EPOCH + Duration::from_secs(parse_rfc3339("2026-01-01T00:00:03Z").unwrap() as u64);
        let all = LogOptions::default();
        assert_eq!(render(&lines(), &all, now), "one\ntwo\nthree\n");
        let stamped = LogOptions { timestamps: true, tail_lines: Some(1), ..all.clone() };
        assert_eq!(render(&lines(), &stamped, now), "2026-01-01T00:00:02Z three\n");
        let none = LogOptions { tail_lines: Some(0), ..all.clone() };
        assert_eq!(render(&lines(), &none, now), "");
        // From the second, nanoseconds counted: "one" at .1 is before 00:00:01.
        let since = LogOptions { since_time: Some("2026-01-01T00:00:01Z".into()), ..all.clone() };
        assert_eq!(render(&lines(), &since, now), "two\nthree\n");
        let ago = LogOptions { since_seconds: Some(2), ..all.clone() };
        assert_eq!(render(&lines(), &ago, now), "two\nthree\n");
        let cut = LogOptions { limit_bytes: Some(6), ..all.clone() };
        assert_eq!(render(&lines(), &cut, now), "one\ntw");
        let tail_then_since = LogOptions {
            tail_lines: Some(2),
            since_time: Some("2026-01-01T00:00:02Z".into()),
            ..all
        };
        assert_eq!(render(&lines(), &tail_then_since, now), "three\n");
    }

    #[test]
    fn options_are_validated_in_kubes_words() {
        let bad = LogOptions {
            tail_lines: Some(-1),
            limit_bytes: Some(0),
            since_seconds: Some(1),
            since_time: Some("2026-01-01T00:00:00Z".into()),
            ..LogOptions::default()
        };
        let msgs: Vec<String> =
            validate(&bad).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            msgs,
            [
                "tailLines: Invalid value: -1: must be greater than or equal to 0",
                "limitBytes: Invalid value: 0: must be greater than 0",
                ": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            ]
        );
    }

    #[test]
    fn a_container_is_chosen_as_log_location_chooses() {
        let pod = json!({"spec": {
            "containers": [{"name": "compute"}, {"name": "volumecontainerdisk"}],
            "initContainers": [{"name": "container-disk-binary"}],
        }});
        let err = choose_container(&pod, "p", "").unwrap_err();
        assert_eq!(
            err,
            ApiError::bad_request(
                "a container name must be specified for pod p, choose one of: [compute \
                 volumecontainerdisk] or one of the init containers: [container-disk-binary]"
            )
        );
        assert_eq!(
            choose_container(&pod, "p", "container-disk-binary").unwrap(),
            "container-disk-binary"
        );
        assert_eq!(
            choose_container(&pod, "p", "x").unwrap_err(),
            ApiError::bad_request("container x is not valid for pod p")
        );
        let one = json!({"spec": {"containers": [{"name": "c"}]}});
        assert_eq!(choose_container(&one, "p", "").unwrap(), "c");
    }
}
