//! Served bytes: persisted bytes with `metadata.resourceVersion` set, spliced in rather than encoded.
//!
//! Backends persist objects without a resourceVersion, because a distributed engine (etcd)
//! assigns the revision at commit, after the bytes were made. The shared layer sets it once per
//! commit (and per object loaded at start-up) into the bytes the cache keeps and events carry, so
//! every get, list and watch still sends cached bytes as they are. Persisted bytes are
//! serde_json's encoding of a map with sorted keys, so putting `"resourceVersion":"N"` at its
//! sorted place inside `metadata` (adding `"metadata":{…}` at its sorted place when there is none)
//! gives exactly what encoding the object with the revision set would: one scan of the keys
//! before it and one copy, instead of a decode and an encode. Bytes that already hold a
//! resourceVersion (rows written before this contract) have its value replaced.
//!
//! The scanner reads only the top-level object's keys and `metadata`'s keys, skipping every value
//! whole (strings with their escapes, nested objects and arrays), so a label or annotation named
//! `resourceVersion`, or one in `spec`, is never mistaken for it.
//!
//! Bytes from another writer are not always our encoding: kube-apiserver ends each value with a
//! newline (its JSON serializer's `Encode` is `json.NewEncoder(w).Encode(obj)`, apimachinery
//! pkg/runtime/serializer/json/json.go), and `etcdctl put` of an indented file stores it
//! pretty-printed. Served as they are, a get would answer them with that whitespace and a watch
//! event would be split across lines (kube's watch stream is one JSON object per line). So
//! `serve`, which every value read from a backend passes through once (start-up load, the feed's
//! commits, past reads, replayed history), encodes anew what is not compact: decoded and encoded
//! like a value written here, so every reader (the splices, the list stream, tables, watch lines,
//! a later update's decode) meets our encoding. What this server wrote stays byte for byte.

use bytes::Bytes;
use serde_json::Value;

use super::StoreError;

const METADATA: &[u8] = b"metadata";
const RESOURCE_VERSION: &[u8] = b"resourceVersion";

/// `persisted` with `metadata.resourceVersion` set to `rev`, as encoding the object with it set
/// would give. Bytes that are not compact (`compact`) or that the scanner cannot read (not a JSON
/// object, `metadata` not an object) are decoded, set and encoded instead; bytes that do not
/// decode as an object are returned as they are, so a commit is never lost over one bad value
/// (the writer's checks keep them out).
pub fn serve(persisted: &[u8], rev: u64) -> Bytes {
    if !compact(persisted) {
        return serve_slowly(persisted, rev);
    }
    let mut digits = [0u8; 20];
    let rv = decimal(rev, &mut digits);
    match splice(persisted, rv) {
        Some(out) => Bytes::from(out),
        None => serve_slowly(persisted, rev),
    }
}

/// `served` without its `metadata.resourceVersion` member: what a backend persists of a state the
/// cache holds (a delete's tombstone). Shares `served` when it holds no resourceVersion.
pub fn strip(served: &Bytes) -> Bytes {
    let Some(meta) = top_member(served, METADATA) else { return served.clone() };
    let Found::At { key, value } = find(served, meta, RESOURCE_VERSION) else {
        return served.clone();
    };
    let Some(value_end) = value_end(served, value) else { return served.clone() };
    // Take one neighbouring comma with the member: the one after it, else the one before it.
    let after = skip_ws(served, value_end);
    let (from, to) = if served.get(after) == Some(&b',') {
        (key, after + 1)
    } else {
        let mut before = key;
        while before > meta && served[before - 1].is_ascii_whitespace() {
            before -= 1;
        }
        if served[before - 1] == b',' {
            (before - 1, value_end)
        } else {
            (key, value_end)
        }
    };
    let mut out = Vec::with_capacity(served.len() - (to - from));
    out.extend_from_slice(&served[..from]);
    out.extend_from_slice(&served[to..]);
    Bytes::from(out)
}

/// Sets `metadata.resourceVersion` in a decoded object as kube does: a decimal string, `metadata`
/// created when missing. Fails for anything but an object whose `metadata`, if any, is an object:
/// what the store refuses to write.
pub fn set(obj: &mut Value, rev: u64) -> Result<(), StoreError> {
    metadata(obj)?.insert("resourceVersion".into(), Value::String(rev.to_string()));
    Ok(())
}

/// Removes `metadata.resourceVersion` from an object about to be persisted; the same checks as
/// `set`, which also adds an empty `metadata` when there is none, so the persisted bytes are the
/// served ones without the resourceVersion.
pub fn clear(obj: &mut Value) -> Result<(), StoreError> {
    if let Value::Object(map) = obj {
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            meta.remove("resourceVersion");
            return Ok(());
        }
    }
    metadata(obj).map(drop)
}

fn metadata(obj: &mut Value) -> Result<&mut serde_json::Map<String, Value>, StoreError> {
    let Value::Object(map) = obj else {
        return Err(StoreError::Internal("a stored object must be a JSON object".into()));
    };
    match map.entry("metadata").or_insert_with(|| Value::Object(Default::default())) {
        Value::Object(meta) => Ok(meta),
        _ => Err(StoreError::Internal("metadata must be a JSON object".into())),
    }
}

/// Whether `json` may be spliced as it is: an object from its first byte to its last, with no
/// line break or tab anywhere. JSON strings hold those only escaped, so any raw one is whitespace
/// between tokens: a trailing newline, pretty-printing. One vectorised scan, next to the copy
/// the splice makes anyway. Spaces alone between tokens (`{"a": 1}`) pass: finding them takes a
/// scan aware of strings, and such bytes are still one line that every splice here reads.
fn compact(json: &[u8]) -> bool {
    json.first() == Some(&b'{')
        && json.last() == Some(&b'}')
        && memchr::memchr3(b'\n', b'\r', b'\t', json).is_none()
}

fn serve_slowly(persisted: &[u8], rev: u64) -> Bytes {
    let encoded = serde_json::from_slice::<Value>(persisted)
        .ok()
        .and_then(|mut obj| set(&mut obj, rev).ok().map(|()| obj))
        .and_then(|obj| serde_json::to_vec(&obj).ok());
    match encoded {
        Some(bytes) => Bytes::from(bytes),
        None => {
            log::warn!("stored value at revision {rev} is not a JSON object; served as stored");
            Bytes::copy_from_slice(persisted)
        }
    }
}

/// The splice itself; `None` when the bytes are not an object whose `metadata` is one.
fn splice(json: &[u8], rv: &[u8]) -> Option<Vec<u8>> {
    let top = object_start(json, 0)?;
    // The inserted text, in up to five parts: a comma before, the member's opening, the value,
    // its closing, a comma after.
    let (at, to, open, close, comma_before, comma_after): (usize, usize, &[u8], &[u8], bool, bool);
    match find(json, top, METADATA) {
        Found::At { value, .. } => {
            let meta = object_start(json, value)?;
            match find(json, meta, RESOURCE_VERSION) {
                Found::At { value, .. } => {
                    (at, to, open, close) = (value, value_end(json, value)?, b"\"", b"\"");
                    (comma_before, comma_after) = (false, false);
                }
                Found::Before(key) => {
                    (at, to, open, close) = (key, key, b"\"resourceVersion\":\"", b"\"");
                    (comma_before, comma_after) = (false, true);
                }
                Found::End { close: end, empty } => {
                    (at, to, open, close) = (end, end, b"\"resourceVersion\":\"", b"\"");
                    (comma_before, comma_after) = (!empty, false);
                }
                Found::Malformed => return None,
            }
        }
        Found::Before(key) => {
            (at, to, open, close) = (key, key, b"\"metadata\":{\"resourceVersion\":\"", b"\"}");
            (comma_before, comma_after) = (false, true);
        }
        Found::End { close: end, empty } => {
            (at, to, open, close) = (end, end, b"\"metadata\":{\"resourceVersion\":\"", b"\"}");
            (comma_before, comma_after) = (!empty, false);
        }
        Found::Malformed => return None,
    }
    let added = usize::from(comma_before) + open.len() + rv.len() + close.len();
    let mut out = Vec::with_capacity(json.len() - (to - at) + added + usize::from(comma_after));
    out.extend_from_slice(&json[..at]);
    if comma_before {
        out.push(b',');
    }
    out.extend_from_slice(open);
    out.extend_from_slice(rv);
    out.extend_from_slice(close);
    if comma_after {
        out.push(b',');
    }
    out.extend_from_slice(&json[to..]);
    Some(out)
}

/// Where a member is, or would go, in an object.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// The member: its key's opening quote and its value's start.
    At {
        key: usize,
        value: usize,
    },
    /// Absent; the first key sorting after it opens here.
    Before(usize),
    /// Absent and every key sorts before it: the object's closing brace, and whether it is empty.
    End {
        close: usize,
        empty: bool,
    },
    Malformed,
}

/// The member `name` of the object whose `{` is at `open`, or where it would be inserted in
/// sorted key order (bytewise on the unescaped key, as `BTreeMap<String, _>` sorts).
fn find(json: &[u8], open: usize, name: &[u8]) -> Found {
    let mut i = skip_ws(json, open + 1);
    if json.get(i) == Some(&b'}') {
        return Found::End { close: i, empty: true };
    }
    loop {
        let key = i;
        let Some(key_end) = (json.get(key) == Some(&b'"')).then(|| string_end(json, key)).flatten()
        else {
            return Found::Malformed;
        };
        let colon = skip_ws(json, key_end);
        if json.get(colon) != Some(&b':') {
            return Found::Malformed;
        }
        let value = skip_ws(json, colon + 1);
        // Keys come first: the value is skipped only when the member is not the one sought.
        match compare_key(&json[key..key_end], name) {
            Some(std::cmp::Ordering::Equal) => return Found::At { key, value },
            Some(std::cmp::Ordering::Greater) => return Found::Before(key),
            Some(std::cmp::Ordering::Less) => {}
            None => return Found::Malformed,
        }
        let Some(end) = value_end(json, value) else { return Found::Malformed };
        i = skip_ws(json, end);
        match json.get(i) {
            Some(b',') => i = skip_ws(json, i + 1),
            Some(b'}') => return Found::End { close: i, empty: false },
            _ => return Found::Malformed,
        }
    }
}

/// Compares a quoted JSON key with `name` as their unescaped strings compare.
fn compare_key(quoted: &[u8], name: &[u8]) -> Option<std::cmp::Ordering> {
    let raw = &quoted[1..quoted.len() - 1];
    if memchr::memchr(b'\\', raw).is_none() {
        return Some(raw.cmp(name));
    }
    let key: String = serde_json::from_slice(quoted).ok()?;
    Some(key.as_bytes().cmp(name))
}

/// The value of the top-level member `name`, if it is an object: the index of its `{`.
fn top_member(json: &[u8], name: &[u8]) -> Option<usize> {
    let top = object_start(json, 0)?;
    match find(json, top, name) {
        Found::At { value, .. } => object_start(json, value),
        _ => None,
    }
}

fn object_start(json: &[u8], at: usize) -> Option<usize> {
    let i = skip_ws(json, at);
    (json.get(i) == Some(&b'{')).then_some(i)
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while json.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string whose opening quote is at `start`.
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    // Most keys and values here are short, where a call to memchr costs more than a look at
    // each byte; a long one (an annotation) is left to memchr's wide compares.
    let short = json.len().min(i + 32);
    while i < short {
        match json[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
        if json[at] == b'\\' {
            i = at + 2;
        } else {
            return Some(at + 1);
        }
    }
}

/// The end (exclusive) of the JSON value starting at `start` (`None`: the bytes end first).
pub fn value_end(json: &[u8], start: usize) -> Option<usize> {
    match *json.get(start)? {
        b'"' => string_end(json, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match *json.get(i)? {
                    b'"' => {
                        i = string_end(json, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = start;
            while json
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// `n` in decimal, in `buf`, without allocating.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What encoding `obj` with the revision set gives: the bytes `serve` must match exactly.
    fn encoded_with(obj: &Value, rev: u64) -> Vec<u8> {
        let mut obj = obj.clone();
        set(&mut obj, rev).unwrap();
        serde_json::to_vec(&obj).unwrap()
    }

    fn persisted(obj: &Value) -> Vec<u8> {
        let mut obj = obj.clone();
        clear(&mut obj).unwrap();
        serde_json::to_vec(&obj).unwrap()
    }

    fn cases() -> Vec<Value> {
        vec![
            json!({}),
            json!({"kind": "K"}),
            json!({"apiVersion": "a/v1", "zzz": 1}),
            json!({"aaa": {"metadata": {"resourceVersion": "7"}}}),
            json!({"metadata": {}}),
            json!({"metadata": {}, "spec": {"resourceVersion": "x"}}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"uid": "u"}}),
            json!({"metadata": {"name": "a", "uid": "u"}}),
            json!({"metadata": {"resourceVersion": "3", "name": "a"}}),
            json!({"metadata": {"resourceVersion": 3}}),
            json!({"metadata": {"resourceVersion": {"nested": ["]", "}"]}, "uid": "u"}}),
            // Labels and annotations named resourceVersion, with values that look like JSON.
            json!({"metadata": {
                "annotations": {"resourceVersion": "{\"a\":\"}\"}", "x\"y": "\\"},
                "labels": {"resourceVersion": "1"},
                "managedFields": [{"fieldsV1": {"f:metadata": {"f:resourceVersion": {}}}}],
                "name": "n\"}{,",
                "uid": "u"
            }, "spec": {"metadata": {"resourceVersion": "9"}}, "status": [1, 2.5, null, true]}),
            // Keys that need escaping sort by their unescaped text.
            json!({"metadat\"a": 1, "metadata\\": 2, "met\nadata": 3}),
            json!({"metadata": {"resourceVersio\"n": 1, "resourceVersion\\": 2, "r\u{e9}": 3}}),
            json!({"\u{10ffff}": 0, "metadata": {"\u{10ffff}": 0}}),
            // Escaped, these keys sort after their neighbours; unescaped (as maps sort), before.
            json!({"metadata": {"resource\"V": 1, "resource\nV": 2}, "metadat\"": 3}),
        ]
    }

    #[test]
    fn serving_matches_an_encode_with_the_revision_set() {
        for obj in cases() {
            for rev in [0, 1, 9, 10, 123_456_789, u64::MAX] {
                let want = encoded_with(&obj, rev);
                // Persisted without a resourceVersion, and as the previous release stored it.
                let served = serve(&persisted(&obj), rev);
                assert_eq!(
                    String::from_utf8_lossy(&served),
                    String::from_utf8_lossy(&want),
                    "{obj}"
                );
                let old = encoded_with(&obj, rev / 2 + 1);
                assert_eq!(&serve(&old, rev)[..], &want[..], "{obj} with an older revision");
            }
        }
    }

    #[test]
    fn stripping_gives_the_persisted_bytes_back() {
        for obj in cases() {
            let served = serve(&persisted(&obj), 42);
            let stripped = strip(&served);
            let mut want = obj.clone();
            clear(&mut want).unwrap();
            assert_eq!(serde_json::from_slice::<Value>(&stripped).unwrap(), want, "{obj}");
            // Nothing to strip: the very same bytes, shared.
            let again = strip(&stripped);
            assert_eq!(again, stripped);
            assert_eq!(again.as_ptr(), stripped.as_ptr());
        }
    }

    #[test]
    fn whitespace_is_tolerated() {
        let spaced = br#" { "kind" : "K" , "metadata" : { "name" : "a" , "uid" : "u" } } "#;
        let served = serve(spaced, 5);
        let value: Value = serde_json::from_slice(&served).unwrap();
        assert_eq!(value["metadata"]["resourceVersion"], "5");
        assert_eq!(value["metadata"]["uid"], "u");
        let last = br#"{"metadata": {"name": "a" , "resourceVersion" : "4" } }"#;
        let stripped = strip(&Bytes::from_static(last));
        assert_eq!(
            serde_json::from_slice::<Value>(&stripped).unwrap(),
            json!({"metadata": {"name": "a"}})
        );
        let only = br#"{"metadata":{ "resourceVersion":"4" }}"#;
        let stripped = strip(&Bytes::from_static(only));
        assert_eq!(serde_json::from_slice::<Value>(&stripped).unwrap(), json!({"metadata": {}}));
        let first = br#"{"metadata":{"resourceVersion":"4" , "uid":"u"}}"#;
        let stripped = strip(&Bytes::from_static(first));
        assert_eq!(
            serde_json::from_slice::<Value>(&stripped).unwrap(),
            json!({"metadata": {"uid": "u"}})
        );
    }

    #[test]
    fn whitespace_from_other_writers_is_encoded_away() {
        for obj in cases() {
            let ours = persisted(&obj);
            // What this server writes takes the splice, never a decode.
            assert!(compact(&ours), "{obj}");
            let want = encoded_with(&obj, 7);
            let mut cleared = obj.clone();
            clear(&mut cleared).unwrap();
            let pretty = serde_json::to_vec_pretty(&cleared).unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            for theirs in [
                // kube-apiserver's encoder ends each value with a newline.
                [&ours[..], b"\n"].concat(),
                // An indented file put with etcdctl, other line ends, leading blanks.
                [&pretty[..], b"\n"].concat(),
                [b" \t".as_slice(), &ours, b"\r\n"].concat(),
            ] {
                assert_eq!(text(&serve(&theirs, 7)), text(&want), "{}", text(&theirs));
            }
        }
        // A built-in kind as kube encodes it: its struct's field order, here sorted as ours.
        let kube = b"{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\",\
                     \"uid\":\"u\"},\"data\":{\"k\":\"v\"}}\n";
        let sorted = concat!(
            r#"{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","#,
            r#""metadata":{"name":"c","resourceVersion":"3","uid":"u"}}"#
        );
        assert_eq!(String::from_utf8_lossy(&serve(kube, 3)), sorted);
        // Spaces alone are spliced around, as they are.
        assert_eq!(
            &serve(br#"{"metadata": {}, "n": 1.50}"#, 2)[..],
            br#"{"metadata": {"resourceVersion":"2"}, "n": 1.50}"#
        );
    }

    #[test]
    fn what_the_scanner_cannot_read_is_decoded_or_left_alone() {
        // metadata that is not an object cannot take a resourceVersion: left as stored.
        assert_eq!(&serve(br#"{"metadata":1}"#, 3)[..], br#"{"metadata":1}"#);
        assert_eq!(&serve(b"[1]", 3)[..], b"[1]");
        assert_eq!(&serve(b"{\"a\":", 3)[..], b"{\"a\":");
        assert_eq!(strip(&Bytes::from_static(b"[1]")), Bytes::from_static(b"[1]"));
        assert!(set(&mut json!({"metadata": "x"}), 1).is_err());
        assert!(clear(&mut json!({"metadata": []})).is_err());
        assert!(clear(&mut json!(1)).is_err());
    }

    #[test]
    fn resource_version_is_a_string_in_metadata() {
        let mut obj = serde_json::json!({"kind": "X"});
        set(&mut obj, 42).unwrap();
        assert_eq!(obj["metadata"]["resourceVersion"], "42");
        assert!(set(&mut serde_json::json!([]), 1).is_err());
    }

    #[test]
    fn decimals_are_written_without_allocating() {
        let mut buf = [0u8; 20];
        for n in [0, 7, 10, 99, 100, 4_294_967_296, u64::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    /// A small deterministic generator, so failures reproduce.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }

        fn key(&mut self) -> String {
            const KEYS: [&str; 16] = [
                "metadata",
                "metadat",
                "metadatb",
                "metadata0",
                "resourceVersion",
                "resourceVersio",
                "resourceVersionz",
                // Escaped, these sort after "resourceVersion"; unescaped, before.
                "resource\"V",
                "resource\nV",
                "",
                "\"",
                "\\",
                "a\nb",
                "\u{e9}",
                "uid",
                "z",
            ];
            KEYS[self.below(KEYS.len() as u64) as usize].to_owned()
        }

        fn value(&mut self, depth: u32) -> Value {
            match self.below(if depth == 0 { 4 } else { 6 }) {
                0 => Value::Null,
                1 => json!(self.below(1000) as f64 / 8.0),
                2 => Value::String(
                    ["{", "}", "\"", "\\", "[\"]", "x", ""]
                        .iter()
                        .take(1 + self.below(7) as usize)
                        .map(|s| s.to_owned())
                        .collect(),
                ),
                3 => json!(self.below(2) == 0),
                4 => Value::Array((0..self.below(4)).map(|_| self.value(depth - 1)).collect()),
                _ => Value::Object(
                    (0..self.below(5)).map(|_| (self.key(), self.value(depth - 1))).collect(),
                ),
            }
        }
    }

    #[test]
    fn serving_random_objects_matches_an_encode() {
        let mut g = Lcg(11);
        for round in 0..2000 {
            let mut obj = match g.value(3) {
                Value::Object(map) => Value::Object(map),
                other => json!({"spec": other}),
            };
            // Give most of them a metadata object, some with a resourceVersion of any type.
            if g.below(4) != 0 {
                let mut meta = match g.value(2) {
                    Value::Object(map) => map,
                    _ => Default::default(),
                };
                if g.below(2) == 0 {
                    meta.insert("resourceVersion".into(), g.value(1));
                }
                obj["metadata"] = Value::Object(meta);
            }
            // A metadata that is not an object is refused before it is ever persisted.
            if obj.get("metadata").is_some_and(|m| !m.is_object()) {
                obj.as_object_mut().unwrap().remove("metadata");
            }
            let rev = g.below(1 << 40);
            let want = encoded_with(&obj, rev);
            assert!(compact(&persisted(&obj)), "round {round}: {obj}");
            assert_eq!(&serve(&persisted(&obj), rev)[..], &want[..], "round {round}: {obj}");
            assert_eq!(&serve(&serde_json::to_vec(&obj).unwrap(), rev)[..], &want[..], "{obj}");
            let mut cleared = obj.clone();
            clear(&mut cleared).unwrap();
            let stripped = strip(&Bytes::from(want));
            assert_eq!(&stripped[..], &serde_json::to_vec(&cleared).unwrap()[..], "{obj}");
        }
    }
}
