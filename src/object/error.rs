//! The one error type of the server and its mapping to a `metav1.Status` body. HTTP-agnostic:
//! the registry returns it, and the HTTP layer sends `to_status` with `code()` (`http::error`).
//!
//! Every failure a handler can answer is an `ApiError` variant; `ApiError::status` is the only place
//! that turns one into a code, a reason and a message, with kube-apiserver's wording (B.1).

use serde::Serialize;

use crate::resource::ResourceInfo;

/// kube-apiserver's optimistic-lock message (store.go `OptimisticLockErrorMsg`).
pub const OPTIMISTIC_LOCK_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// The message of a failing JSON patch operation (kube drops the detail).
pub const PATCH_REJECTED_MSG: &str =
    "the server rejected our request due to an error in our request";

/// One field error: `StatusCause` on the wire, where the type goes under `reason` (omitted when
/// empty, as an internal error's one cause has none: apimachinery `NewInternalError`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Cause {
    /// `FieldValueInvalid`: `field: Invalid value: <value>: <detail>`.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Cause {
        Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
            field: field.into(),
        }
    }
    pub fn required(field: &str, detail: &str) -> Cause {
        let message = if detail.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {detail}")
        };
        Cause { reason: "FieldValueRequired", message, field: field.into() }
    }
    pub fn forbidden(field: &str, detail: &str) -> Cause {
        Cause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }
    pub fn too_long(field: &str, limit: usize) -> Cause {
        Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {limit} bytes"),
            field: field.into(),
        }
    }
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {value:?}: supported values: {}", list.join(", ")),
            field: field.into(),
        }
    }
}

/// A Fault's `status` answer (`ApiError::Injected`): the Status it gives, naming the request's
/// object.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub group: String,
    pub resource: String,
    pub name: String,
    pub retry_after_seconds: u32,
    pub causes: Vec<Cause>,
}

/// Everything a request can fail with.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// 404 Status naming the object: `<gr> "<name>" not found`.
    NotFound {
        group: String,
        plural: String,
        name: String,
    },
    /// 404 `text/plain` for paths nothing serves, as Go's `http.NotFound`.
    PathNotFound,
    /// 409 `AlreadyExists`; `deleting` adds kube's `object is being deleted: ` prefix.
    AlreadyExists {
        group: String,
        plural: String,
        name: String,
        deleting: bool,
    },
    /// 409 `Conflict` with a complete message.
    Conflict {
        group: String,
        plural: String,
        name: String,
        message: String,
    },
    /// 409 `Conflict` of server-side apply: the conflicting fields as `FieldManagerConflict`
    /// causes and no object details (kube's `NewApplyConflict`).
    ApplyConflict {
        message: String,
        causes: Vec<Cause>,
    },
    /// 422 `Invalid`: `<qualified> "<name>" is invalid: <causes>`.
    Invalid {
        group: String,
        details_kind: String,
        qualified: String,
        name: String,
        causes: Vec<Cause>,
    },
    /// 409 `AlreadyExists` after every generated name collided; clients may retry after 1 s.
    NameGenerationExhausted {
        group: String,
        plural: String,
        name: String,
    },
    /// 401: missing or unknown credentials.
    Unauthorized,
    /// 403 with kube's message (naming the user, verb and resource for authorization, or why an
    /// admission rule refused), and the causes an admission rule gives.
    Forbidden {
        message: String,
        name: String,
        group: String,
        resource: String,
        causes: Vec<Cause>,
    },
    /// 429: the user's in-flight request limit is reached; clients retry after a second.
    TooManyRequests,
    /// 422 `Invalid` with only a message, as kube answers a failing JSON patch operation.
    PatchRejected,
    /// 422 `Invalid` of a strategic merge patch kube finds unprocessable (lists of lists,
    /// content outside `$retainKeys`): its generic message, the reason as the one cause.
    PatchUnprocessable(String),
    /// 500 with no reason: an error kube does not classify (most of a strategic merge patch's),
    /// answered with its own message.
    Unknown(String),
    BadRequest(String),
    MethodNotAllowed(String),
    NotAcceptable(String),
    UnsupportedMediaType(String),
    /// 410 `Expired`; an expired continue token carries a fresh one in `metadata.continue`.
    Expired {
        message: String,
        continue_token: Option<String>,
    },
    RequestEntityTooLarge(String),
    /// 504 `Timeout`; the message gets kube's `Timeout: ` prefix.
    Timeout {
        message: String,
        causes: Vec<Cause>,
    },
    /// 503 `ServiceUnavailable`, e.g. the database cannot be written.
    Unavailable(String),
    Internal(String),
    /// A KubeVirt action's refusal, as virt-api's constructors shape it: the message complete,
    /// the reason by code, details naming the object by its singular resource.
    Action {
        code: u16,
        message: String,
        name: String,
        group: String,
        singular: String,
    },
    /// A validating admission webhook's refusal, as kube passes it on
    /// (K8S `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go`
    /// ToStatusErr): the webhook's code (403 below 400) and reason, its message after
    /// `admission webhook "<name>" denied the request`, and its causes as details.
    Denied {
        webhook: String,
        code: u16,
        reason: &'static str,
        message: String,
        causes: Vec<Cause>,
    },
    /// A Fault's `status` action: the Status as given, as apimachinery's
    /// `NewGenericServerResponse` shapes it (details name the request's object; `Retry-After`
    /// with `retryAfterSeconds`).
    Injected(Box<Injected>),
    /// An answer in plain text (virt-api's guest-agent reads fail so).
    PlainText {
        code: u16,
        message: String,
    },
}

impl ApiError {
    pub fn not_found(res: &ResourceInfo, name: &str) -> ApiError {
        ApiError::NotFound { group: res.group.into(), plural: res.plural.into(), name: name.into() }
    }

    pub fn already_exists(res: &ResourceInfo, name: &str, deleting: bool) -> ApiError {
        ApiError::AlreadyExists {
            group: res.group.into(),
            plural: res.plural.into(),
            name: name.into(),
            deleting,
        }
    }

    /// The stale-resourceVersion conflict of an update.
    pub fn optimistic_lock(res: &ResourceInfo, name: &str) -> ApiError {
        ApiError::Conflict {
            group: res.group.into(),
            plural: res.plural.into(),
            name: name.into(),
            message: format!(
                "Operation cannot be fulfilled on {} {name:?}: {OPTIMISTIC_LOCK_MSG}",
                res.group_resource()
            ),
        }
    }

    /// 422 raised by object validation: qualified by `<Kind>.<group>`, details.kind = Kind.
    pub fn invalid(res: &ResourceInfo, name: &str, causes: Vec<Cause>) -> ApiError {
        ApiError::Invalid {
            group: res.group.into(),
            details_kind: res.kind.into(),
            qualified: res.group_kind(),
            name: name.into(),
            causes,
        }
    }

    /// 422 on an options object such as `DeleteOptions.meta.k8s.io ""`.
    pub fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
        ApiError::Invalid {
            group: "meta.k8s.io".into(),
            details_kind: kind.into(),
            qualified: format!("{kind}.meta.k8s.io"),
            name: String::new(),
            causes,
        }
    }

    /// 403 `<resource> "<name>" is forbidden: <why>` (kube's `NewForbidden`).
    pub fn forbidden(res: &ResourceInfo, name: &str, why: &str, causes: Vec<Cause>) -> ApiError {
        ApiError::Forbidden {
            message: format!("{} {name:?} is forbidden: {why}", res.group_resource()),
            name: name.into(),
            group: res.group.into(),
            resource: res.plural.into(),
            causes,
        }
    }

    /// A webhook's refusal: `code` and `message` as its AdmissionResponse's Status gives them
    /// (KubeVirt's eviction admitter: 429 and no reason, KUBE-WORLD §9).
    pub fn webhook_denied(webhook: &str, code: u16, message: &str) -> ApiError {
        let (webhook, message) = (webhook.into(), message.into());
        ApiError::Denied { webhook, code, reason: "", message, causes: vec![] }
    }

    /// A KubeVirt admitter's refusal of fields (pkg/virt-api/webhooks/utils.go
    /// `ToAdmissionResponse`): 422 `Invalid`, the causes' messages joined by `, `, the causes
    /// as details.
    pub fn webhook_invalid(webhook: &str, causes: Vec<Cause>) -> ApiError {
        let message = causes.iter().map(|c| c.message.as_str()).collect::<Vec<_>>().join(", ");
        let webhook = webhook.into();
        ApiError::Denied {
            webhook,
            code: code::UNPROCESSABLE_ENTITY,
            reason: "Invalid",
            message,
            causes,
        }
    }

    pub fn bad_request(msg: impl Into<String>) -> ApiError {
        ApiError::BadRequest(msg.into())
    }

    /// The code, reason, message and details of the Status body.
    fn parts(&self) -> (u16, &'static str, String, Option<Details>) {
        use ApiError::*;
        match self {
            NotFound { group, plural, name } => (
                code::NOT_FOUND,
                "NotFound",
                format!("{} {name:?} not found", qualify(plural, group)),
                Some(Details::named(name, group, plural)),
            ),
            PathNotFound => (code::NOT_FOUND, "NotFound", "404 page not found".into(), None),
            AlreadyExists { group, plural, name, deleting } => (
                code::CONFLICT,
                "AlreadyExists",
                format!(
                    "{}{} {name:?} already exists",
                    if *deleting { "object is being deleted: " } else { "" },
                    qualify(plural, group)
                ),
                Some(Details::named(name, group, plural)),
            ),
            Conflict { group, plural, name, message } => (
                code::CONFLICT,
                "Conflict",
                message.clone(),
                Some(Details::named(name, group, plural)),
            ),
            ApplyConflict { message, causes } => (
                code::CONFLICT,
                "Conflict",
                message.clone(),
                Some(Details { causes: causes.clone(), ..Details::default() }),
            ),
            Invalid { group, details_kind, qualified, name, causes } => {
                let errs: Vec<String> = causes
                    .iter()
                    // Go's `field.Error.Error()`: the path, even an empty one (`: Too long…`).
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect();
                let joined = if errs.len() == 1 {
                    errs[0].clone()
                } else {
                    format!("[{}]", errs.join(", "))
                };
                let mut details = Details::named(name, group, details_kind);
                details.causes = causes.clone();
                (
                    code::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    format!("{qualified} {name:?} is invalid: {joined}"),
                    Some(details),
                )
            }
            NameGenerationExhausted { group, plural, name } => {
                let mut details = Details::named(name, group, plural);
                details.retry_after_seconds = 1;
                (
                    code::CONFLICT,
                    "AlreadyExists",
                    format!(
                        "{} {name:?} already exists, the server was not able to generate a unique name for the object",
                        qualify(plural, group)
                    ),
                    Some(details),
                )
            }
            Unauthorized => (code::UNAUTHORIZED, "Unauthorized", "Unauthorized".into(), None),
            Forbidden { message, name, group, resource, causes } => (
                code::FORBIDDEN,
                "Forbidden",
                message.clone(),
                Some(Details { causes: causes.clone(), ..Details::named(name, group, resource) }),
            ),
            TooManyRequests => {
                let details = Details { retry_after_seconds: 1, ..Details::default() };
                (
                    code::TOO_MANY_REQUESTS,
                    "TooManyRequests",
                    "Too many requests, please try again later.".into(),
                    Some(details),
                )
            }
            PatchRejected => {
                (code::UNPROCESSABLE_ENTITY, "Invalid", PATCH_REJECTED_MSG.to_string(), None)
            }
            PatchUnprocessable(m) => {
                let cause = Cause {
                    reason: "UnexpectedServerResponse",
                    message: m.clone(),
                    field: String::new(),
                };
                let details = Details { causes: vec![cause], ..Details::default() };
                (
                    code::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    PATCH_REJECTED_MSG.to_string(),
                    Some(details),
                )
            }
            Unknown(m) => (code::INTERNAL_SERVER_ERROR, "", m.clone(), None),
            BadRequest(m) => (code::BAD_REQUEST, "BadRequest", m.clone(), None),
            MethodNotAllowed(m) => (code::METHOD_NOT_ALLOWED, "MethodNotAllowed", m.clone(), None),
            NotAcceptable(m) => (code::NOT_ACCEPTABLE, "NotAcceptable", m.clone(), None),
            UnsupportedMediaType(m) => {
                (code::UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", m.clone(), None)
            }
            Expired { message, .. } => (code::GONE, "Expired", message.clone(), None),
            RequestEntityTooLarge(m) => {
                (code::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge", m.clone(), None)
            }
            Timeout { message, causes } => {
                let details = (!causes.is_empty())
                    .then(|| Details { causes: causes.clone(), ..Details::default() });
                (code::GATEWAY_TIMEOUT, "Timeout", format!("Timeout: {message}"), details)
            }
            Unavailable(m) => (code::SERVICE_UNAVAILABLE, "ServiceUnavailable", m.clone(), None),
            Action { code, message, name, group, singular } => {
                let reason = match *code {
                    code::BAD_REQUEST => "BadRequest",
                    code::FORBIDDEN => "Forbidden",
                    code::NOT_FOUND => "NotFound",
                    code::CONFLICT => "Conflict",
                    code::INTERNAL_SERVER_ERROR => "InternalError",
                    code::SERVICE_UNAVAILABLE => "ServiceUnavailable",
                    _ => "",
                };
                // kube's NewBadRequest names no object.
                let details = (*code != code::BAD_REQUEST && !name.is_empty())
                    .then(|| Details::named(name, group, singular));
                (*code, reason, message.clone(), details)
            }
            PlainText { code, message } => (*code, "", message.clone(), None),
            Injected(i) => {
                let details = Details {
                    causes: i.causes.clone(),
                    retry_after_seconds: i.retry_after_seconds,
                    ..Details::named(&i.name, &i.group, &i.resource)
                };
                (i.code, i.reason, i.message.clone(), Some(details))
            }
            Denied { webhook, code, reason, message, causes } => {
                let denied = format!("admission webhook {webhook:?} denied the request");
                let message = match (message.is_empty(), reason.is_empty()) {
                    (false, _) => format!("{denied}: {message}"),
                    (true, false) => format!("{denied}: {reason}"),
                    (true, true) => format!("{denied} without explanation"),
                };
                let code = if *code < code::BAD_REQUEST { code::FORBIDDEN } else { *code };
                let details = (!causes.is_empty())
                    .then(|| Details { causes: causes.clone(), ..Details::default() });
                (code, reason, message, details)
            }
            Internal(m) => {
                let details = Details {
                    causes: vec![Cause { reason: "", message: m.clone(), field: String::new() }],
                    ..Details::default()
                };
                (
                    code::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    format!("Internal error occurred: {m}"),
                    Some(details),
                )
            }
        }
    }

    /// The HTTP status code of the answer.
    pub fn code(&self) -> u16 {
        self.parts().0
    }

    /// The `metav1.Status` body for this error.
    pub fn to_status(&self) -> Status {
        let (code, reason, message, details) = self.parts();
        let continue_token = match self {
            ApiError::Expired { continue_token, .. } => continue_token.clone(),
            _ => None,
        };
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: ListMetaOut { continue_token },
            status: "Failure",
            message: Some(message),
            // `StatusReasonUnknown` is empty, and omitted.
            reason: (!reason.is_empty()).then_some(reason),
            details,
            code: Some(code),
        }
    }
}

/// The status codes the errors answer with (`net/http`'s names).
mod code {
    pub const BAD_REQUEST: u16 = 400;
    pub const UNAUTHORIZED: u16 = 401;
    pub const FORBIDDEN: u16 = 403;
    pub const NOT_FOUND: u16 = 404;
    pub const METHOD_NOT_ALLOWED: u16 = 405;
    pub const NOT_ACCEPTABLE: u16 = 406;
    pub const CONFLICT: u16 = 409;
    pub const GONE: u16 = 410;
    pub const PAYLOAD_TOO_LARGE: u16 = 413;
    pub const UNSUPPORTED_MEDIA_TYPE: u16 = 415;
    pub const UNPROCESSABLE_ENTITY: u16 = 422;
    pub const TOO_MANY_REQUESTS: u16 = 429;
    pub const INTERNAL_SERVER_ERROR: u16 = 500;
    pub const SERVICE_UNAVAILABLE: u16 = 503;
    pub const GATEWAY_TIMEOUT: u16 = 504;
}

fn qualify(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

/// `metav1.Status`, with fields in kube's order.
#[derive(Debug, Serialize)]
pub struct Status {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: ListMetaOut,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

impl Status {
    /// The Success Status a delete answers with (no `code`, as for custom resources).
    pub fn deleted(res: &ResourceInfo, name: &str, uid: &str) -> Status {
        let mut details = Details::named(name, res.group, res.plural);
        details.uid = uid.to_string();
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: ListMetaOut::default(),
            status: "Success",
            message: None,
            reason: None,
            details: Some(details),
            code: None,
        }
    }
}

/// The Status `metadata`: `{}` unless an expired continue token offers a fresh one.
#[derive(Debug, Default, Serialize)]
pub struct ListMetaOut {
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct Details {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "is_zero")]
    pub retry_after_seconds: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Details {
    fn named(name: &str, group: &str, kind: &str) -> Details {
        Details { name: name.into(), group: group.into(), kind: kind.into(), ..Details::default() }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (code, reason, message, _) = self.parts();
        write!(f, "{code} {reason}: {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_joins_several_causes_in_brackets() {
        let err = ApiError::Invalid {
            group: "kubevirt.io".into(),
            details_kind: "VirtualMachine".into(),
            qualified: "VirtualMachine.kubevirt.io".into(),
            name: "Bad".into(),
            causes: vec![
                Cause::invalid("metadata.name", "\"Bad\"", "x"),
                Cause::required("metadata.namespace", ""),
            ],
        };
        let s = serde_json::to_value(err.to_status()).unwrap();
        assert_eq!(
            s["message"],
            "VirtualMachine.kubevirt.io \"Bad\" is invalid: [metadata.name: Invalid value: \"Bad\": x, metadata.namespace: Required value]"
        );
        assert_eq!(s["details"]["causes"][1]["reason"], "FieldValueRequired");
        assert_eq!(s["code"], 422);
        assert_eq!(s["metadata"], serde_json::json!({}));
    }

    #[test]
    fn apply_conflicts_carry_only_causes() {
        let err = ApiError::ApplyConflict {
            message: "Apply failed with 1 conflict: conflict with \"m\" using kubevirt.io/v1: .spec.running".into(),
            causes: vec![Cause {
                reason: "FieldManagerConflict",
                message: "conflict with \"m\" using kubevirt.io/v1".into(),
                field: ".spec.running".into(),
            }],
        };
        let s = serde_json::to_string(&err.to_status()).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Apply failed with 1 conflict: conflict with \"m\" using kubevirt.io/v1: .spec.running","reason":"Conflict","details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"m\" using kubevirt.io/v1","field":".spec.running"}]},"code":409}"#
        );
    }

    #[test]
    fn not_found_names_group_resource() {
        let err =
            ApiError::NotFound { group: "g.io".into(), plural: "things".into(), name: "a".into() };
        let s = serde_json::to_string(&err.to_status()).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"things.g.io \"a\" not found","reason":"NotFound","details":{"name":"a","group":"g.io","kind":"things"},"code":404}"#
        );
    }
}
