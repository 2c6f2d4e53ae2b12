//! Authentication: bearer tokens from a static token file in kube-apiserver's CSV format
//! (`token,user,uid,"group1,group2"`).

use std::collections::HashMap;

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl User {
    /// The identity of requests when no authentication is configured.
    pub fn anonymous() -> User {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }
}

/// Tokens and the users they stand for.
#[derive(Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, User>,
}

impl TokenFile {
    pub fn load(path: &str) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        TokenFile::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    /// Parses the CSV: at least token, user name and uid; an optional fourth column lists groups.
    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = csv_fields(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            if fields.len() < 3 {
                return Err(format!("line {}: want at least token,user,uid", i + 1));
            }
            let groups = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let token = fields[0].clone();
            if token.is_empty() {
                return Err(format!("line {}: empty token", i + 1));
            }
            users.insert(token, User { name: fields[1].clone(), uid: fields[2].clone(), groups });
        }
        Ok(TokenFile { users })
    }

    /// The user of an `Authorization: Bearer <token>` header value, if the token is known.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<User> {
        let value = authorization?.trim();
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut user = self.users.get(token.trim())?.clone();
        if !user.groups.iter().any(|g| g == "system:authenticated") {
            user.groups.push("system:authenticated".into());
        }
        Some(user)
    }
}

/// k8s.io/apiserver/pkg/authentication/request/websocket/protocol.go: browsers cannot set
/// `Authorization` on a websocket, so they pass the token base64url-encoded as a subprotocol.
const BEARER_PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// The bearer token a websocket handshake carries in its `Sec-WebSocket-Protocol` values, and
/// the other subprotocols (what stays in the header once the token is accepted): `Ok(None)`
/// without a token; `Err` with kube's message for a malformed one.
pub fn protocol_token<'a>(
    values: impl Iterator<Item = &'a str>,
) -> Result<Option<(String, Vec<String>)>, &'static str> {
    use base64::Engine;
    let mut token = None;
    let mut others = Vec::new();
    for p in values.flat_map(|v| v.split(',')).map(str::trim) {
        let Some(encoded) = p.strip_prefix(BEARER_PROTOCOL_PREFIX) else {
            others.push(p.to_string());
            continue;
        };
        if token.is_some() {
            return Err("multiple base64.bearer.authorization tokens specified");
        }
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| "invalid base64.bearer.authorization token encoding")?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| "invalid base64.bearer.authorization token")?;
        token = Some(decoded);
    }
    match token {
        Some(t) if !t.is_empty() && others.is_empty() => Err("missing additional subprotocol"),
        Some(t) if !t.is_empty() => Ok(Some((t, others))),
        _ => Ok(None),
    }
}

/// Splits one CSV line, honouring double quotes (with `""` as an escaped quote).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    fields.push(cur);
    Ok(fields.into_iter().map(|f| f.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_websocket_passes_its_token_as_kube_apiserver_reads_it() {
        // "secret1" base64url-encoded, unpadded.
        let token = "base64url.bearer.authorization.k8s.io.c2VjcmV0MQ";
        let both = format!("{token}, plain.kubevirt.io");
        assert_eq!(
            protocol_token([both.as_str()].into_iter()),
            Ok(Some(("secret1".into(), vec!["plain.kubevirt.io".into()])))
        );
        assert_eq!(protocol_token([token].into_iter()), Err("missing additional subprotocol"));
        let twice = format!("{token},{token},x");
        assert_eq!(
            protocol_token([twice.as_str()].into_iter()),
            Err("multiple base64.bearer.authorization tokens specified")
        );
        assert_eq!(
            protocol_token(["base64url.bearer.authorization.k8s.io.c2VjcmV0MQ==,x"].into_iter()),
            Err("invalid base64.bearer.authorization token encoding")
        );
        assert_eq!(protocol_token(["plain.kubevirt.io"].into_iter()), Ok(None));
    }

    #[test]
    fn token_file_in_kube_format() {
        let f = TokenFile::parse("# comment\nsecret1,alice,1001,\"dev,ops\"\nsecret2,bob,1002\n")
            .unwrap();
        let a = f.authenticate(Some("Bearer secret1")).unwrap();
        assert_eq!(a.name, "alice");
        assert_eq!(a.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(f.authenticate(Some("bearer secret2")).unwrap().name, "bob");
        assert!(f.authenticate(Some("Bearer nope")).is_none());
        assert!(f.authenticate(Some("Basic secret1")).is_none());
        assert!(f.authenticate(None).is_none());
        assert!(TokenFile::parse("only,two\n").is_err());
        assert!(TokenFile::parse("\"open,alice,1\n").is_err());
    }
}
