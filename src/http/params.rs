//! Query parameters and options bodies: booleans as kube parses them, list options, delete
//! options, write options and continue tokens.

use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpRequest;
use serde_json::Value;

use crate::object::error::{ApiError, Cause};
use crate::object::managed_fields;
use crate::object::selector::{FieldSelector, LabelSelector};
pub use crate::object::validation::FieldValidation;
use crate::object::At;
pub use crate::registry::{ContinueToken, DeleteOptions, ListOptions, Propagation, RvMatch};
use crate::resource::ResourceInfo;

/// Longest `timeoutSeconds` honoured (ten years): far enough to mean "never", near enough that
/// a deadline computed from it cannot overflow.
const MAX_TIMEOUT_SECONDS: u64 = 10 * 365 * 24 * 3600;

/// The decoded query string; repeated keys keep every value.
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(req: &HttpRequest) -> Result<Query, ApiError> {
        Query::from_query(req.query_string())
    }

    pub fn from_query(qs: &str) -> Result<Query, ApiError> {
        actix_web::web::Query::<Vec<(String, String)>>::from_query(qs)
            .map(|q| Query(q.into_inner()))
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// kube's boolean: absent, `0` or `false` (any case) are false; anything else is true.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(parse_bool)
    }

    /// A boolean that may be absent.
    pub fn opt_flag(&self, key: &str) -> Option<bool> {
        self.get(key).map(parse_bool)
    }

    /// `PodLogOptions` from the query (K8S `pkg/apis/core/v1/conversion.go`'s query
    /// conversion); checked by the registry.
    pub fn log_options(&self) -> Result<crate::registry::LogOptions, ApiError> {
        Ok(crate::registry::LogOptions {
            container: self.get("container").unwrap_or("").to_string(),
            follow: self.flag("follow"),
            previous: self.flag("previous"),
            since_seconds: self.int("sinceSeconds")?,
            since_time: self.get("sinceTime").filter(|t| !t.is_empty()).map(str::to_string),
            timestamps: self.flag("timestamps"),
            tail_lines: self.int("tailLines")?,
            limit_bytes: self.int("limitBytes")?,
            insecure_skip_tls_verify_backend: self.flag("insecureSkipTLSVerifyBackend"),
        })
    }

    fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!("invalid value for {key}: {v:?} is not an integer"))
            }),
        }
    }

    /// The options every write takes, `dryRun` and `fieldValidation`, validated as kube's
    /// `Validate{Create,Update,Patch}Options` do: bad values are one 422 on
    /// `<kind>.meta.k8s.io` (`CreateOptions`, `UpdateOptions` or `PatchOptions`).
    pub fn write_options(&self, kind: &str) -> Result<(bool, FieldValidation), ApiError> {
        let dry = self.all("dryRun");
        let mut causes: Vec<Cause> = dry_run_cause(&dry).into_iter().collect();
        let validation = match self.get("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                causes.push(Cause::not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                ));
                FieldValidation::Warn
            }
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid_options(kind, causes));
        }
        Ok((!dry.is_empty(), validation))
    }
}

fn parse_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// kube's `ValidateDryRun`: every value must be `All`; the whole list is the bad value, printed
/// as Go's `%#v` of a `[]string`.
fn dry_run_cause(values: &[&str]) -> Option<Cause> {
    if values.iter().all(|v| *v == "All") {
        return None;
    }
    let list: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    Some(Cause {
        reason: "FieldValueNotSupported",
        message: format!(
            "Unsupported value: []string{{{}}}: supported values: \"All\"",
            list.join(", ")
        ),
        field: "dryRun".into(),
    })
}

impl ListOptions {
    /// Parses and validates in kube's order: selectors (400), then `ValidateListOptions` (422,
    /// every cause at once), then what kube's storage checks (400: resource version, continue).
    pub fn parse(q: &Query, res: &ResourceInfo) -> Result<ListOptions, ApiError> {
        let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))
            .map_err(ApiError::BadRequest)?;
        let fields = FieldSelector::parse(
            q.get("fieldSelector").unwrap_or(""),
            res.namespaced,
            res.selectable_fields,
        )
        .map_err(ApiError::BadRequest)?;
        let watch = q.flag("watch");
        let resource_version =
            q.get("resourceVersion").filter(|v| !v.is_empty()).map(str::to_string);
        let rv_match = q.get("resourceVersionMatch").unwrap_or("");
        let send_initial_events = q.opt_flag("sendInitialEvents");
        let continue_raw = q.get("continue").filter(|c| !c.is_empty());
        validate(watch, resource_version.as_deref(), rv_match, send_initial_events, continue_raw)?;

        if let Some(rv) = &resource_version {
            if rv.parse::<u64>().is_err() {
                return Err(ApiError::bad_request(format!("invalid resource version: {rv}")));
            }
        }
        // Decoded like every query parameter, then ignored by a watch (the seed: `limit` and
        // `continue` are not supported there).
        let limit = match q.int("limit")? {
            Some(n) if n > 0 => Some(n as usize),
            _ => None,
        };
        let (limit, continue_token) = if watch {
            (None, None)
        } else {
            let token = continue_raw.map(ContinueToken::decode).transpose()?;
            if token.is_some() && resource_version.as_deref().is_some_and(|v| v != "0") {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            (limit, token)
        };
        let timeout = match q.int("timeoutSeconds")? {
            // Capped: a deadline of i64::MAX seconds would overflow the clock.
            Some(n) if n > 0 => Some(Duration::from_secs((n as u64).min(MAX_TIMEOUT_SECONDS))),
            _ => None,
        };
        Ok(ListOptions {
            labels,
            fields,
            limit,
            continue_token,
            resource_version,
            rv_match: match rv_match {
                "NotOlderThan" => Some(RvMatch::NotOlderThan),
                "Exact" => Some(RvMatch::Exact),
                _ => None,
            },
            timeout,
            watch,
            allow_bookmarks: q.flag("allowWatchBookmarks"),
            send_initial_events,
        })
    }
}

/// kube's `ValidateListOptions` with the WatchList feature on (AM internalversion/validation).
fn validate(
    watch: bool,
    rv: Option<&str>,
    rv_match: &str,
    send_initial_events: Option<bool>,
    continue_token: Option<&str>,
) -> Result<(), ApiError> {
    let field = "resourceVersionMatch";
    let mut causes = Vec::new();
    if watch {
        if send_initial_events.is_some() && rv_match != "NotOlderThan" {
            causes.push(Cause::forbidden(
                field,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !rv_match.is_empty() {
            if send_initial_events.is_none() {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if rv_match != "NotOlderThan" {
                causes.push(Cause::not_supported(field, rv_match, &["NotOlderThan"]));
            }
            if continue_token.is_some() {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if !rv_match.is_empty() {
            if rv.is_none() {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if continue_token.is_some() {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if rv_match != "Exact" && rv_match != "NotOlderThan" {
                causes.push(Cause::not_supported(field, rv_match, &["Exact", "NotOlderThan", ""]));
            }
            if rv_match == "Exact" && rv == Some("0") {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial_events.is_some() {
            causes.push(Cause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_options("ListOptions", causes))
    }
}

/// The JSON type a value has, in Go's words for decode errors.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A DeleteOptions body whose fields have the wrong JSON types is a 400, as kube's decoder
/// answers: ignoring such a field could turn a dry run or a precondition into a real,
/// unconditional delete.
fn check_delete_option_types(b: &Value) -> Result<(), ApiError> {
    const FIELDS: [(&str, &str); 9] = [
        ("/kind", "string"),
        ("/apiVersion", "string"),
        ("/propagationPolicy", "string"),
        ("/orphanDependents", "bool"),
        ("/gracePeriodSeconds", "int64"),
        ("/preconditions", "object"),
        ("/preconditions/uid", "string"),
        ("/preconditions/resourceVersion", "string"),
        ("/dryRun", "[]string"),
    ];
    for (field, want) in FIELDS {
        let Some(v) = b.at(field).filter(|v| !v.is_null()) else { continue };
        let ok = match want {
            "string" => v.is_string(),
            "bool" => v.is_boolean(),
            "int64" => v.is_i64(),
            "object" => v.is_object(),
            _ => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        };
        if !ok {
            return Err(ApiError::bad_request(format!(
                "couldn't decode DeleteOptions: cannot unmarshal {} into field {} of type {want}",
                json_type(v),
                field[1..].replace('/', ".")
            )));
        }
    }
    Ok(())
}

impl DeleteOptions {
    pub fn parse(body: &[u8], q: &Query) -> Result<DeleteOptions, ApiError> {
        let body_json: Option<Value> = if body.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!("couldn't decode DeleteOptions: {e}"))
            })?)
        };
        let (policy, orphan, grace, uid, rv, dry) = match &body_json {
            Some(b) => {
                if !b.is_object() {
                    return Err(ApiError::bad_request("DeleteOptions must be an object"));
                }
                check_delete_option_types(b)?;
                let s = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
                let dry: Vec<String> = match b.get("dryRun") {
                    Some(Value::Array(a)) => {
                        a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect()
                    }
                    _ => vec![],
                };
                (
                    s("propagationPolicy"),
                    b.get("orphanDependents").and_then(Value::as_bool),
                    b.get("gracePeriodSeconds").and_then(Value::as_i64),
                    b.at("/preconditions/uid").and_then(Value::as_str).map(str::to_string),
                    b.at("/preconditions/resourceVersion")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    dry,
                )
            }
            None => (
                q.get("propagationPolicy").map(str::to_string),
                q.opt_flag("orphanDependents"),
                q.int("gracePeriodSeconds")?,
                None,
                None,
                q.all("dryRun").into_iter().map(str::to_string).collect(),
            ),
        };
        let mut causes = Vec::new();
        let propagation = match policy.as_deref() {
            None | Some("") => None,
            Some("Orphan") => Some(Propagation::Orphan),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some(other) => {
                causes.push(Cause::not_supported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
                None
            }
        };
        if orphan.is_some() {
            if let Some(p) = policy.as_deref().filter(|p| !p.is_empty()) {
                causes.push(Cause::invalid(
                    "propagationPolicy",
                    &format!("{p:?}"),
                    "orphanDependents and deletionPropagation cannot be both set",
                ));
            }
        }
        if let Some(g) = grace {
            if g < 0 {
                causes.push(Cause::invalid(
                    "gracePeriodSeconds",
                    &g.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
        }
        let dry_refs: Vec<&str> = dry.iter().map(String::as_str).collect();
        causes.extend(dry_run_cause(&dry_refs));
        let dry_run = !dry_refs.is_empty();
        if !causes.is_empty() {
            return Err(ApiError::invalid_options("DeleteOptions", causes));
        }
        Ok(DeleteOptions {
            propagation,
            orphan_dependents: orphan,
            precondition_uid: uid,
            precondition_rv: rv,
            grace_period_seconds: grace,
            dry_run,
        })
    }
}

/// `force` belongs to apply patches only.
pub fn reject_force(q: &Query) -> Result<(), ApiError> {
    if q.get("force").is_some() {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            vec![Cause::forbidden("force", "may not be specified for non-apply patch")],
        ));
    }
    Ok(())
}

/// The manager of a non-apply write, from `?fieldManager=` or the User-Agent
/// (`managed_fields::manager_of`).
pub fn manager_of(q: &Query, req: &HttpRequest, options_kind: &str) -> Result<String, ApiError> {
    let agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    managed_fields::manager_of(q.get("fieldManager").unwrap_or(""), agent, options_kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_parse_as_kube_does() {
        let q = Query::from_query("a=True&b=1&c=&d=0&e=FALSE&f=false").unwrap();
        assert!(q.flag("a") && q.flag("b") && q.flag("c"));
        assert!(!q.flag("d") && !q.flag("e") && !q.flag("f") && !q.flag("missing"));
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = ContinueToken::encode(42, "ns/name\u{0}");
        assert!(!t.contains('='));
        assert_eq!(
            ContinueToken::decode(&t).unwrap(),
            ContinueToken { rv: 42, start: "ns/name\u{0}".into() }
        );
        assert!(ContinueToken::decode("!!!").is_err());
        let zero = ContinueToken::encode(0, "a");
        assert!(
            matches!(ContinueToken::decode(&zero), Err(ApiError::BadRequest(m)) if m.contains("incorrect encoded start resourceVersion"))
        );
        let climb = ContinueToken::encode(3, "../x");
        assert!(ContinueToken::decode(&climb).is_err());
    }

    #[test]
    fn list_option_combinations() {
        let vm = crate::generated::RESOURCES.iter().find(|r| r.namespaced).unwrap();
        let p = |qs: &str| ListOptions::parse(&Query::from_query(qs).unwrap(), vm);
        assert!(matches!(p("resourceVersionMatch=Exact"), Err(ApiError::Invalid { .. })));
        assert!(matches!(
            p("resourceVersion=0&resourceVersionMatch=Exact"),
            Err(ApiError::Invalid { .. })
        ));
        assert!(p("resourceVersion=5&resourceVersionMatch=NotOlderThan").is_ok());
        assert!(matches!(
            p("resourceVersionMatch=Bogus&resourceVersion=1"),
            Err(ApiError::Invalid { .. })
        ));
        let tok = ContinueToken::encode(3, "a\u{0}");
        assert!(matches!(
            p(&format!("continue={tok}&resourceVersion=3")),
            Err(ApiError::BadRequest(_))
        ));
        assert!(p(&format!("continue={tok}&resourceVersion=0")).is_ok());
        assert!(matches!(p("sendInitialEvents=true"), Err(ApiError::Invalid { .. })));
        assert!(matches!(p("watch=1&sendInitialEvents=true"), Err(ApiError::Invalid { .. })));
        assert!(p("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan").is_ok());
        assert!(matches!(p("labelSelector=a%20b"), Err(ApiError::BadRequest(_))));
        assert!(matches!(p("resourceVersion=abc"), Err(ApiError::BadRequest(_))));
    }

    #[test]
    fn write_options_are_422_on_the_verbs_options_kind() {
        let q = Query::from_query("dryRun=All&fieldValidation=Strict").unwrap();
        assert_eq!(q.write_options("CreateOptions").unwrap(), (true, FieldValidation::Strict));
        let q = Query::from_query("dryRun=All&dryRun=x&fieldValidation=Nope").unwrap();
        let s = q.write_options("PatchOptions").unwrap_err().to_status();
        assert_eq!(
            s.message.unwrap(),
            "PatchOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: []string{\"All\", \"x\"}: supported values: \"All\", fieldValidation: Unsupported value: \"Nope\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
    }

    #[test]
    fn delete_options_validation() {
        let q = Query::from_query("").unwrap();
        let both = br#"{"propagationPolicy":"Foreground","orphanDependents":true}"#;
        let err = DeleteOptions::parse(both, &q).unwrap_err().to_status();
        assert_eq!(err.message.unwrap(), "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set");
        let q = Query::from_query("gracePeriodSeconds=-1").unwrap();
        assert!(DeleteOptions::parse(b"", &q).is_err());
        let q = Query::from_query("propagationPolicy=Orphan&dryRun=All").unwrap();
        let o = DeleteOptions::parse(b"", &q).unwrap();
        assert_eq!(o.propagation, Some(Propagation::Orphan));
        assert!(o.dry_run);
        assert_eq!(o.grace_period_seconds, None);
    }

    /// `gracePeriodSeconds` from the query, or from the body kubectl sends (`kubectl delete
    /// --grace-period=5` sends `{"gracePeriodSeconds":5,...}`, K8S staging/src/k8s.io/kubectl/
    /// pkg/cmd/delete/delete.go `deleteResource`).
    #[test]
    fn delete_options_grace_period() {
        let q = Query::from_query("gracePeriodSeconds=7").unwrap();
        assert_eq!(DeleteOptions::parse(b"", &q).unwrap().grace_period_seconds, Some(7));
        let none = Query::from_query("").unwrap();
        let body = br#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5}"#;
        assert_eq!(DeleteOptions::parse(body, &none).unwrap().grace_period_seconds, Some(5));
        let zero = br#"{"gracePeriodSeconds":0,"propagationPolicy":"Background"}"#;
        assert_eq!(DeleteOptions::parse(zero, &none).unwrap().grace_period_seconds, Some(0));
        assert_eq!(DeleteOptions::parse(b"{}", &none).unwrap().grace_period_seconds, None);
    }
}
