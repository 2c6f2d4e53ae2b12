//! What kube's strict decoders report beyond unknown fields: keys repeated within one JSON or
//! YAML mapping, and JSON patch operations with fields an operation does not have. Decoding
//! itself keeps the last of repeated keys, as Go's decoders do; these passes find the rest so
//! `fieldValidation` can warn about them or refuse them (see `validation::admit`). Pure functions.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// At most this many repeated YAML keys are reported; each costs one more parse of the body.
const MAX_YAML_DUPLICATES: usize = 32;

/// The fields a JSON patch operation may carry (RFC 6902).
const JSON_PATCH_FIELDS: [&str; 4] = ["op", "path", "value", "from"];

/// The paths of keys that appear more than once in one JSON object of `raw`, kube-style
/// (`spec.replicas`), in document order. Anything that is not JSON yields nothing.
pub fn duplicate_fields(raw: &[u8]) -> Vec<String> {
    from_json_noting_duplicates(raw).map(|(_, found)| found).unwrap_or_default()
}

/// Decodes a JSON document as `serde_json::from_slice::<Value>` does (the last of repeated keys
/// wins) and, in the same pass, finds its repeated keys as [`duplicate_fields`] reports them: a
/// body is parsed once for both.
pub fn from_json_noting_duplicates(raw: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(raw);
    let value = ValueWalk { path: &mut Vec::new(), found: &mut found }.deserialize(&mut de)?;
    de.end()?;
    Ok((value, found))
}

/// kube's strict JSON patch errors (handlers/patch.go decodes the operations strictly):
/// `json patch unknown field "[0].foo"` and `json patch duplicate field "[1].path"`, by operation.
pub fn json_patch_field_errors(raw: &[u8]) -> Vec<String> {
    let Ok((Value::Array(ops), duplicates)) = from_json_noting_duplicates(raw) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let prefix = format!("[{i}].");
        if let Some(fields) = op.as_object() {
            let mut unknown: Vec<&String> =
                fields.keys().filter(|k| !JSON_PATCH_FIELDS.contains(&k.as_str())).collect();
            unknown.sort();
            out.extend(unknown.iter().map(|k| format!("json patch unknown field \"[{i}].{k}\"")));
        }
        out.extend(
            duplicates
                .iter()
                .filter(|p| p.strip_prefix(&prefix).is_some_and(|rest| !rest.contains(['.', '['])))
                .map(|p| format!("json patch duplicate field \"{p}\"")),
        );
    }
    out
}

/// Keys repeated within one mapping of a YAML document, as yaml.v2's strict decoder words them
/// (`line 10: key "foo" already set in map`), in document order. `text` must already parse.
///
/// serde_yaml gives a visitor no positions, but an error raised while a key is read carries
/// that key's line: each pass stops at the first repeated key not reported yet.
pub fn yaml_duplicate_keys(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < MAX_YAML_DUPLICATES {
        let pass = YamlPass { skip: out.len(), seen: Cell::new(0) };
        let de = serde_yaml::Deserializer::from_str(text);
        let Err(err) = YamlWalk(&pass).deserialize(de) else { break };
        let (Some(key), Some(at)) = (pass_key(&err), err.location()) else { break };
        out.push(format!("line {}: key {key} already set in map", at.line()));
    }
    out
}

/// The quoted key a pass stopped at, from the error it raised (`<path>: DUP"key"`).
fn pass_key(err: &serde_yaml::Error) -> Option<String> {
    let msg = err.to_string();
    let at = msg.find(DUPLICATE_MARK)?;
    let rest = &msg[at + DUPLICATE_MARK.len()..];
    // serde_yaml appends " at line N column M" to the message.
    Some(rest.rsplit_once(" at line ").map_or(rest, |(k, _)| k).to_string())
}

const DUPLICATE_MARK: &str = "repeated key ";

/// The visitor methods of a walk that only looks at mappings: scalars end it.
macro_rules! scalars_are_leaves {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

/// A place in a JSON document being walked; spelled out only for a repeated key, as most
/// bodies have none.
enum Segment<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

/// `spec.b[0].x`, as kube spells a field path.
fn spell(path: &[Segment<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Segment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Builds a JSON value as serde_json's own `Value` visitor does, noting repeated keys with their
/// paths (the last value of a repeated key wins).
struct ValueWalk<'p, 'de> {
    path: &'p mut Vec<Segment<'de>>,
    found: &'p mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for ValueWalk<'_, 'de> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueWalk<'_, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            self.path.push(Segment::Index(items.len()));
            let item = ValueWalk { path: &mut *self.path, found: &mut *self.found };
            let next = seq.next_element_seed(item)?;
            self.path.pop();
            match next {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let repeated = map.contains_key(key.as_ref());
            self.path.push(Segment::Key(key));
            if repeated {
                self.found.push(spell(self.path));
            }
            let value = access
                .next_value_seed(ValueWalk { path: &mut *self.path, found: &mut *self.found })?;
            if let Some(Segment::Key(key)) = self.path.pop() {
                map.insert(key.into_owned(), value);
            }
        }
        Ok(Value::Object(map))
    }
}

/// A key, borrowed from the document unless it has escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// One pass over a YAML document: lets the first `skip` repeated keys through and stops at the
/// next one.
struct YamlPass {
    skip: usize,
    seen: Cell<usize>,
}

struct YamlWalk<'a>(&'a YamlPass);

impl<'de> DeserializeSeed<'de> for YamlWalk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlWalk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    scalars_are_leaves!();
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(YamlWalk(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let seen = std::cell::RefCell::new(HashSet::new());
        while map.next_key_seed(YamlKey { pass: self.0, seen: &seen })?.is_some() {
            map.next_value_seed(YamlWalk(self.0))?;
        }
        Ok(())
    }
}

/// Reads one mapping key and fails, at that key's position, on the first unreported repeat.
struct YamlKey<'a> {
    pass: &'a YamlPass,
    seen: &'a std::cell::RefCell<HashSet<String>>,
}

impl YamlKey<'_> {
    fn key<E: de::Error>(self, key: String) -> Result<(), E> {
        if self.seen.borrow_mut().insert(key.clone()) {
            return Ok(());
        }
        let n = self.pass.seen.get() + 1;
        self.pass.seen.set(n);
        if n > self.pass.skip {
            // Go's %#v of a string key.
            return Err(E::custom(format!("{DUPLICATE_MARK}{key:?}")));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for YamlKey<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlKey<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_str<E: de::Error>(self, k: &str) -> Result<(), E> {
        self.key(k.to_string())
    }
    fn visit_bool<E: de::Error>(self, k: bool) -> Result<(), E> {
        self.key(k.to_string())
    }
    fn visit_i64<E: de::Error>(self, k: i64) -> Result<(), E> {
        self.key(k.to_string())
    }
    fn visit_u64<E: de::Error>(self, k: u64) -> Result<(), E> {
        self.key(k.to_string())
    }
    fn visit_f64<E: de::Error>(self, k: f64) -> Result<(), E> {
        self.key(k.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.key("null".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicate_json_keys_with_paths() {
        let raw = br#"{"spec":{"a":1,"b":[{"x":1,"x":2}],"a":3},"kind":"K","kind":"K"}"#;
        assert_eq!(duplicate_fields(raw), ["spec.b[0].x", "spec.a", "kind"]);
        assert!(duplicate_fields(b"a: 1\na: 2\n").is_empty());
        assert!(duplicate_fields(br#"{"a":{"b":1},"c":{"b":2}}"#).is_empty());
        // An escaped spelling is the same key; paths stay right past nested arrays.
        assert_eq!(duplicate_fields(br#"{"l":[[1],{"x":1}],"a\u0062":1,"ab":2}"#), ["ab"]);
        assert_eq!(duplicate_fields(br#"{"l":[{"x":1},{"y":1,"y":2}]}"#), ["l[1].y"]);
    }

    #[test]
    fn decoding_notes_repeated_keys_and_builds_what_serde_json_builds() {
        let docs: [(&[u8], &[&str]); 9] = [
            (
                br#"{"spec":{"a":1,"b":[{"x":1,"x":2}],"a":3},"kind":"K","kind":"K"}"#,
                &["spec.b[0].x", "spec.a", "kind"],
            ),
            (br#"{"l":[[1],{"x":1}],"a\u0062":1,"ab":2}"#, &["ab"]),
            (br#"{"l":[{"x":1},{"y":1,"y":2}]}"#, &["l[1].y"]),
            (br#"{"n":[-1,18446744073709551615,-9223372036854775808,1.5,1e400,0.0,-0.0]}"#, &[]),
            (br#"{"s":"\u00e9\n\"q\"","t":true,"f":false,"z":null,"e":{},"a":[]}"#, &[]),
            (br#"  [1, {"a": {"a": 1, "a": 2}}] "#, &["[1].a.a"]),
            (br#""text""#, &[]),
            (b"12", &[]),
            (
                br#"{"k":{"deep":[[[{"k":1,"k":{"k":2,"k":3}}]]]}}"#,
                &["k.deep[0][0][0].k", "k.deep[0][0][0].k.k"],
            ),
        ];
        for (raw, duplicates) in docs {
            let expected: Result<Value, _> = serde_json::from_slice(raw);
            let got = from_json_noting_duplicates(raw);
            match (expected, got) {
                (Ok(want), Ok((value, found))) => {
                    assert_eq!(value, want, "{}", String::from_utf8_lossy(raw));
                    assert_eq!(found, duplicates);
                }
                (Err(want), Err(err)) => assert_eq!(err.to_string(), want.to_string()),
                (want, got) => panic!("{want:?} vs {got:?}"),
            }
        }
        for bad in [&b"{\"a\":1} x"[..], b"{\"a\":", b"[1,]", b"", b"nul"] {
            let want = serde_json::from_slice::<Value>(bad).unwrap_err().to_string();
            assert_eq!(from_json_noting_duplicates(bad).unwrap_err().to_string(), want);
        }
        // serde_json's nesting limit holds for this decoder too.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(from_json_noting_duplicates(deep.as_bytes()).is_err());
    }

    #[test]
    fn finds_repeated_yaml_keys_with_their_lines() {
        let text = "a: 1\nb:\n  c: 2\n  c:\n    x: 3\na: 4\nl:\n- {k: 1, k: 2}\nm:\n  c: 1\n";
        assert_eq!(
            yaml_duplicate_keys(text),
            [
                "line 4: key \"c\" already set in map",
                "line 6: key \"a\" already set in map",
                "line 8: key \"k\" already set in map",
            ]
        );
        assert!(yaml_duplicate_keys("a: 1\nb: {a: 1}\n").is_empty());
        // JSON is YAML: one line.
        assert_eq!(
            yaml_duplicate_keys(r#"{"spec":{"x":1,"x":2}}"#),
            ["line 1: key \"x\" already set in map"]
        );
        let many: String = (0..100).map(|_| "k: 1\n").collect();
        assert_eq!(yaml_duplicate_keys(&many).len(), MAX_YAML_DUPLICATES);
    }

    #[test]
    fn json_patch_fields_are_checked_per_operation() {
        let raw = br#"[{"op":"add","path":"/a","value":1,"foo":"bar"},
                       {"op":"add","path":"/b","path":"/c","value":2},
                       {"op":"add","path":"/d","value":{"x":1,"x":2}}]"#;
        assert_eq!(
            json_patch_field_errors(raw),
            ["json patch unknown field \"[0].foo\"", "json patch duplicate field \"[1].path\""]
        );
        assert!(json_patch_field_errors(br#"{"op":"add"}"#).is_empty());
    }
}
