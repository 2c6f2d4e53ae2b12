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
