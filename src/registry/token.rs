//! Signed tokens for create-only token requests: HS256 JWTs naming the namespace, the requested
//! object and an expiry, signed with a key the store keeps, so tokens survive restarts.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::object::error::{ApiError, Cause};
use crate::object::At;
use crate::resource::ResourceInfo;
use crate::store::Store;

/// Name of the signing key in the store.
pub const KEY_NAME: &str = "upload-token-hmac";
/// How long a token is valid (CDI's upload tokens live five minutes).
pub const LIFETIME_SECS: i64 = 300;

/// Answers a token request: validates the requested field, signs a token for it and returns the
/// request with `status.token` filled in. Nothing is stored.
pub async fn answer(
    store: &Store,
    res: &ResourceInfo,
    field: &str,
    mut obj: Value,
) -> Result<Value, ApiError> {
    let name = obj.at("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    let pointer = format!("/{}", field.replace('.', "/"));
    let subject = match obj.at(&pointer) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(ApiError::invalid(res, &name, vec![Cause::required(field, "")]))
        }
        Some(other) => {
            return Err(ApiError::invalid(
                res,
                &name,
                vec![Cause::invalid(field, &other.to_string(), "must be a string")],
            ))
        }
    };
    let namespace = obj.at("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
    let key = store.secret(KEY_NAME).await?;
    let now = unix_now();
    let claims = json!({
        "iss": "virt-apiserver",
        "operation": "Upload",
        "name": subject,
        "namespace": namespace,
        "resource": {"group": "", "version": "v1", "resource": "persistentvolumeclaims"},
        "iat": now,
        "nbf": now,
        "exp": now + LIFETIME_SECS,
    });
    let token = sign(&key, &claims);
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    status["token"] = Value::String(token);
    Ok(obj)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Signs `claims` as a compact HS256 JWT.
pub fn sign(key: &[u8], claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any size");
    mac.update(signing_input.as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{sig}")
}

/// Checks a token's signature with `key` and returns its claims; expiry is the caller's to judge.
pub fn verify(key: &[u8], token: &str) -> Result<Value, String> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("a token has three parts".into());
    };
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any size");
    mac.update(format!("{h}.{p}").as_bytes());
    mac.verify_slice(&sig).map_err(|_| "bad signature".to_string())?;
    let payload = URL_SAFE_NO_PAD.decode(p).map_err(|e| e.to_string())?;
    serde_json::from_slice(&payload).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_tokens_verify_only_with_their_key() {
        let claims = json!({"name": "pvc", "namespace": "ns", "exp": 1});
        let t = sign(b"key-one", &claims);
        assert_eq!(verify(b"key-one", &t).unwrap(), claims);
        assert!(verify(b"key-two", &t).is_err());
        let mut tampered = t.clone();
        tampered.insert(t.find('.').unwrap() + 2, 'x');
        assert!(verify(b"key-one", &tampered).is_err());
    }
}
