//! Label and field selectors: parsing the query strings and matching objects (AM pkg/labels,
//! pkg/fields).

use serde_json::Value;

use crate::object::meta;
use crate::object::At;
use crate::resource::SelectableField;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed `labelSelector`: requirements ANDed together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
    In,
    NotIn,
}

impl Token {
    fn show(&self) -> String {
        match self {
            Token::Ident(s) => s.clone(),
            Token::Bang => "!".into(),
            Token::Eq => "=".into(),
            Token::DoubleEq => "==".into(),
            Token::NotEq => "!=".into(),
            Token::Gt => ">".into(),
            Token::Lt => "<".into(),
            Token::Comma => ",".into(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::In => "in".into(),
            Token::NotIn => "notin".into(),
        }
    }
}

fn lex(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let special =
        |c: char| matches!(c, '!' | '=' | ',' | '(' | ')' | '<' | '>') || c.is_whitespace();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => i += 1,
            '!' if next == Some('=') => {
                out.push(Token::NotEq);
                i += 2
            }
            '!' => {
                out.push(Token::Bang);
                i += 1
            }
            '=' if next == Some('=') => {
                out.push(Token::DoubleEq);
                i += 2
            }
            '=' => {
                out.push(Token::Eq);
                i += 1
            }
            '>' => {
                out.push(Token::Gt);
                i += 1
            }
            '<' => {
                out.push(Token::Lt);
                i += 1
            }
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '(' => {
                out.push(Token::Open);
                i += 1
            }
            ')' => {
                out.push(Token::Close);
                i += 1
            }
            _ => {
                let start = i;
                while i < chars.len() && !special(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.as_str() {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    _ => Token::Ident(word),
                });
            }
        }
    }
    out
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn found(&self) -> String {
        self.peek().map(Token::show).unwrap_or_else(|| "EOF".into())
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        if self.peek() == Some(&Token::Bang) {
            self.pos += 1;
            let key = match self.next() {
                Some(Token::Ident(k)) => k,
                t => {
                    return Err(format!(
                        "found '{}', expected: identifier after '!'",
                        t.map(|t| t.show()).unwrap_or_else(|| "EOF".into())
                    ))
                }
            };
            check_key(&key)?;
            return Ok(Requirement { key, op: Op::DoesNotExist });
        }
        let key = match self.next() {
            Some(Token::Ident(k)) => k,
            t => {
                return Err(format!(
                    "found '{}', expected: !, identifier, or 'end of string'",
                    t.map(|t| t.show()).unwrap_or_else(|| "EOF".into())
                ))
            }
        };
        check_key(&key)?;
        let op_tok = match self.peek() {
            None | Some(Token::Comma) => return Ok(Requirement { key, op: Op::Exists }),
            Some(t) => t.clone(),
        };
        self.pos += 1;
        let op = match op_tok {
            Token::Eq | Token::DoubleEq => Op::In(vec![self.single_value()?]),
            Token::NotEq => Op::NotIn(vec![self.single_value()?]),
            Token::In => Op::In(self.value_set()?),
            Token::NotIn => Op::NotIn(self.value_set()?),
            Token::Gt | Token::Lt => {
                let v = self.single_value()?;
                let n: i64 = v.parse().map_err(|_| {
                    format!("for 'Gt', 'Lt' operators, the value must be an integer: {v:?}")
                })?;
                if op_tok == Token::Gt {
                    Op::Gt(n)
                } else {
                    Op::Lt(n)
                }
            }
            other => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.show()
                ))
            }
        };
        Ok(Requirement { key, op })
    }

    fn single_value(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Token::Ident(_)) => {
                let Some(Token::Ident(v)) = self.next() else { unreachable!() };
                check_value(&v)?;
                Ok(v)
            }
            // `k=` selects the empty value.
            None | Some(Token::Comma) => Ok(String::new()),
            _ => Err(format!("found '{}', expected: identifier", self.found())),
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Some(Token::Open) => {}
            t => {
                let found = t.map(|t| t.show()).unwrap_or_else(|| "EOF".into());
                return Err(format!("found '{found}', expected: '('"));
            }
        }
        let mut vals = Vec::new();
        loop {
            match self.next() {
                Some(Token::Ident(v)) => {
                    check_value(&v)?;
                    vals.push(v);
                    match self.next() {
                        Some(Token::Comma) => continue,
                        Some(Token::Close) => break,
                        t => {
                            return Err(format!(
                                "found '{}', expected: ',' or ')'",
                                t.map(|t| t.show()).unwrap_or_else(|| "EOF".into())
                            ))
                        }
                    }
                }
                Some(Token::Close) if vals.is_empty() => {
                    vals.push(String::new());
                    break;
                }
                Some(Token::Comma) => vals.push(String::new()),
                t => {
                    return Err(format!(
                        "found '{}', expected: ',', ')' or identifier",
                        t.map(|t| t.show()).unwrap_or_else(|| "EOF".into())
                    ))
                }
            }
        }
        Ok(vals)
    }
}

fn check_key(k: &str) -> Result<(), String> {
    match meta::qualified_name_errors(k).first() {
        None => Ok(()),
        Some(e) => Err(format!("key: Invalid value: {k:?}: {e}")),
    }
}

fn check_value(v: &str) -> Result<(), String> {
    match meta::label_value_errors(v).first() {
        None => Ok(()),
        Some(e) => Err(format!("values[0][]: Invalid value: {v:?}: {e}")),
    }
}

impl LabelSelector {
    /// Parses kube's label selector syntax; the error is the message of the 400 answer.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut p = Parser { toks: lex(s), pos: 0 };
        let mut reqs = Vec::new();
        if p.toks.is_empty() {
            return Ok(LabelSelector::default());
        }
        loop {
            let r = p.requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
            reqs.push(r);
            match p.next() {
                None => break,
                Some(Token::Comma) => continue,
                Some(t) => {
                    return Err(format!(
                        "unable to parse requirement: found '{}', expected: ',' or 'end of string'",
                        t.show()
                    ))
                }
            }
        }
        Ok(LabelSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.at("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match (&r.op, get(&r.key)) {
            (Op::Exists, v) => v.is_some(),
            (Op::DoesNotExist, v) => v.is_none(),
            (Op::In(vals), Some(v)) => vals.iter().any(|x| x == v),
            (Op::In(_), None) => false,
            // `!=` and `notin` also match objects without the key.
            (Op::NotIn(vals), Some(v)) => !vals.iter().any(|x| x == v),
            (Op::NotIn(_), None) => true,
            (Op::Gt(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x > *n),
            (Op::Lt(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x < *n),
            (Op::Gt(_) | Op::Lt(_), None) => false,
        })
    }
}

/// One `fieldSelector` term on a supported field.
#[derive(Debug, Clone, PartialEq)]
struct FieldTerm {
    field: FieldName,
    value: String,
    equal: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum FieldName {
    Name,
    Namespace,
    /// A kind's selectable field, by its JSON pointer (`/spec/color`), and what it reads as
    /// where missing.
    Selectable(String, &'static str),
}

/// A parsed `fieldSelector` over the fields custom resources support.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `fieldSelector` for a kind: `namespaced` decides whether `metadata.namespace` is
    /// selectable, and `selectable` lists the kind's other selectable fields.
    pub fn parse(
        s: &str,
        namespaced: bool,
        selectable: &[SelectableField],
    ) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in split_unescaped(s, ',') {
            let (field, value, equal) = split_term(&part)
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{part}'"))?;
            let field = match field.trim() {
                "metadata.name" => FieldName::Name,
                "metadata.namespace" if namespaced => FieldName::Namespace,
                other => match selectable.iter().find(|f| f.name == other) {
                    Some(f) => FieldName::Selectable(f.json_path.replace('.', "/"), f.missing),
                    None => return Err(format!("field label not supported: {other}")),
                },
            };
            terms.push(FieldTerm { field, value: unescape(&value), equal });
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The name an `metadata.name=X` term pins, which turns a list into a single-key read.
    pub fn exact_name(&self) -> Option<&str> {
        self.terms.iter().find(|t| t.field == FieldName::Name && t.equal).map(|t| t.value.as_str())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| {
            let (path, missing) = match &t.field {
                FieldName::Name => ("/metadata/name", ""),
                FieldName::Namespace => ("/metadata/namespace", ""),
                FieldName::Selectable(pointer, missing) => (pointer.as_str(), *missing),
            };
            let text = match obj.at(path) {
                None | Some(Value::Null) => missing.into(),
                found => field_text(found),
            };
            (text == t.value) == t.equal
        })
    }
}

/// A field's value as a field selector compares it (apiextensions' `selectableFieldSet`):
/// strings as they are, integers in decimal, booleans as `true`/`false`, a missing field as "".
fn field_text(v: Option<&Value>) -> std::borrow::Cow<'_, str> {
    match v {
        Some(Value::String(s)) => s.as_str().into(),
        Some(Value::Bool(b)) => b.to_string().into(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string().into(),
        _ => "".into(),
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    parts.push(cur);
    parts
}

/// Splits `k=v`, `k==v` or `k!=v` at the first unescaped operator.
fn split_term(term: &str) -> Option<(String, String, bool)> {
    let b: Vec<char> = term.chars().collect();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '!' if b.get(i + 1) == Some(&'=') => {
                return Some((b[..i].iter().collect(), b[i + 2..].iter().collect(), false))
            }
            '=' => {
                let skip = if b.get(i + 1) == Some(&'=') { 2 } else { 1 };
                return Some((b[..i].iter().collect(), b[i + skip..].iter().collect(), true));
            }
            _ => i += 1,
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A `metav1.LabelSelector` or node selector requirement (`{key, operator, values}`) against
/// labels: In, NotIn, Exists, DoesNotExist, and a node selector's Gt and Lt (integers).
pub fn requirement_holds(req: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    let key = req.get("key").and_then(Value::as_str).unwrap_or("");
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let have = labels.get(key).and_then(Value::as_str);
    match req.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" => have.is_some_and(|h| values.contains(&h)),
        "NotIn" => have.is_none_or(|h| !values.contains(&h)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        op @ ("Gt" | "Lt") => {
            let have = have.and_then(|h| h.parse::<i64>().ok());
            let want = values.first().and_then(|v| v.parse::<i64>().ok());
            match (have, want) {
                (Some(h), Some(v)) if op == "Gt" => h > v,
                (Some(h), Some(v)) => h < v,
                _ => false,
            }
        }
        _ => false,
    }
}

/// A `metav1.LabelSelector` as JSON (`matchLabels`, `matchExpressions`) against labels.
pub fn label_selector_matches(selector: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    if !match_labels.into_iter().flatten().all(|(k, v)| labels.get(k) == Some(v)) {
        return false;
    }
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    exprs.into_iter().flatten().all(|r| requirement_holds(r, labels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_grammar() {
        let o = obj(json!({"app": "web", "tier": "3"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("app=web"));
        assert!(m("app==web"));
        assert!(!m("app!=web"));
        assert!(m("missing!=x"));
        assert!(m("app in (web, db)"));
        assert!(!m("app notin (web)"));
        assert!(m("missing notin (web)"));
        assert!(m("app"));
        assert!(m("!missing"));
        assert!(!m("!app"));
        assert!(m("tier>2,tier<4"));
        assert!(!m("tier>3"));
        assert!(m("app=web,tier"));
        assert!(m(""));
    }

    #[test]
    fn label_parse_errors() {
        for bad in [
            "app=web=x",
            "app in web",
            "tier>x",
            "!",
            "app in (a",
            "a b",
            "bad key!x=1",
            "a in",
            "a notin",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
        let e = LabelSelector::parse("a b").unwrap_err();
        assert!(e.contains("found 'b'"), "{e}");
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let f = FieldSelector::parse("metadata.name=a,metadata.namespace!=x", true, &[]).unwrap();
        assert!(f.matches(&o));
        assert_eq!(f.exact_name(), Some("a"));
        assert_eq!(
            FieldSelector::parse("spec.x=1", true, &[]).unwrap_err(),
            "field label not supported: spec.x"
        );
        assert_eq!(
            FieldSelector::parse("metadata.namespace=a", false, &[]).unwrap_err(),
            "field label not supported: metadata.namespace"
        );
        assert!(FieldSelector::parse("nonsense", true, &[])
            .unwrap_err()
            .starts_with("invalid selector"));
        let f = FieldSelector::parse(r"metadata.name=a\,b", true, &[]).unwrap();
        assert_eq!(f.exact_name(), Some("a,b"));
    }

    #[test]
    fn selectable_fields_compare_as_text() {
        let fields = [
            SelectableField { name: "spec.color", json_path: ".spec.color", missing: "" },
            SelectableField { name: "source", json_path: ".source.component", missing: "" },
            SelectableField { name: "spec.size", json_path: ".spec.size", missing: "" },
            SelectableField { name: "spec.on", json_path: ".spec.on", missing: "false" },
        ];
        let obj = json!({"metadata": {"name": "a"}, "source": {"component": "kubelet"},
                         "spec": {"color": "blue", "size": 3, "on": true}});
        let sel = |s: &str| FieldSelector::parse(s, true, &fields).unwrap();
        assert!(sel("spec.color=blue,source=kubelet").matches(&obj));
        assert!(sel("spec.size=3,spec.on=true").matches(&obj));
        assert!(!sel("spec.color!=blue").matches(&obj));
        assert!(!sel("source=scheduler").matches(&obj));
        // A missing field is "", or its kind's zero value (a built-in kind's false).
        assert!(sel("spec.color=").matches(&json!({"spec": {}})));
        assert!(sel("spec.on=false").matches(&json!({"spec": {}})));
        assert!(!sel("spec.on=").matches(&json!({"spec": {}})));
        assert!(sel("spec.color!=blue").matches(&json!({})));
        assert_eq!(
            FieldSelector::parse("spec.shape=x", true, &fields).unwrap_err(),
            "field label not supported: spec.shape"
        );
    }
}
