//! Just enough JSON reading for the client to check answers without building them: the members
//! of the top-level object one by one, each value as its bytes, and the elements of an array,
//! counted. Values are skipped by their structure, not decoded or validated inside, by the
//! server's own scanner (`virt_apiserver::json::value_end`, the one it splices served bytes
//! with): strings to their closing quote, past escapes (memchr), objects and arrays to their
//! closing bracket by depth, strings skipped. On our list pages (500 objects of 3 KB, dense
//! managedFields) that is about a fifth cheaper than serde's `IgnoredAny`, on etcd's (base64
//! strings) about four times; measured, a 64-byte-block scanner (masks by SWAR: the crates forbid
//! the `unsafe` of SIMD intrinsics) was no faster. The top level and the counted array are
//! checked for JSON's commas and colons; the small parts read for their content (a continue
//! token, a revision) go through serde_json. Keys are compared as written, unescaped: the servers
//! write plain ASCII keys.

use virt_apiserver::json::value_end;

/// The whitespace JSON allows between tokens.
fn ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn expect(s: &[u8], i: usize, what: u8) -> Result<usize, String> {
    match s.get(i) {
        Some(&b) if b == what => Ok(i + 1),
        Some(&b) => Err(format!("JSON: {:?} at {i}, want {:?}", b as char, what as char)),
        None => Err(format!("JSON: the end at {i}, want {:?}", what as char)),
    }
}

/// The end of the value that starts at `s[i]`, by the server's own scanner (the one its served
/// bytes are spliced with).
fn skip_value(s: &[u8], i: usize) -> Result<usize, String> {
    match s.get(i) {
        None => Err("JSON: the end where a value belongs".into()),
        Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') => {
            Err(format!("JSON: no value at {i}"))
        }
        Some(_) => value_end(s, i).ok_or_else(|| format!("JSON: a value at {i} without its end")),
    }
}

/// The members of the object that is the whole of a text (whitespace around it allowed), read
/// in order: `next_key`, then the value as `value`, `elements` or (by default) skipped.
pub struct Object<'a> {
    s: &'a [u8],
    i: usize,
    first: bool,
    /// A key was read and its value not yet.
    value_pending: bool,
}

impl<'a> Object<'a> {
    pub fn new(s: &'a [u8]) -> Result<Object<'a>, String> {
        let i = ws(s, expect(s, ws(s, 0), b'{')?);
        Ok(Object { s, i, first: true, value_pending: false })
    }

    /// The next member's key as written between its quotes, or None after the last (when only
    /// whitespace may follow).
    pub fn next_key(&mut self) -> Result<Option<&'a [u8]>, String> {
        let s = self.s;
        if self.value_pending {
            self.value()?;
        }
        let mut i = ws(s, self.i);
        match s.get(i) {
            Some(b'}') => {
                if ws(s, i + 1) != s.len() {
                    return Err(format!("JSON: bytes after the object, at {}", i + 1));
                }
                self.i = s.len();
                return Ok(None);
            }
            Some(b',') if !self.first => i = ws(s, i + 1),
            _ if self.first => {}
            _ => return Err(format!("JSON: no ',' or '}}' after a member, at {i}")),
        }
        self.first = false;
        let k0 = expect(s, i, b'"')? - 1;
        i = skip_value(s, k0)?;
        let key = &s[k0 + 1..i - 1];
        self.i = ws(s, expect(s, ws(s, i), b':')?);
        self.value_pending = true;
        Ok(Some(key))
    }

    /// The current member's value, as its JSON text.
    pub fn value(&mut self) -> Result<&'a [u8], String> {
        let v0 = self.i;
        self.i = skip_value(self.s, v0)?;
        self.value_pending = false;
        Ok(&self.s[v0..self.i])
    }

    /// The current member's value, an array: its elements counted, and the last one.
    pub fn elements(&mut self) -> Result<(usize, Option<&'a [u8]>), String> {
        let (n, last, end) = elements_at(self.s, self.i)?;
        self.i = end;
        self.value_pending = false;
        Ok((n, last))
    }
}

/// The array that starts at `s[i]`: its number of elements, the last one, and its end.
fn elements_at(s: &[u8], i: usize) -> Result<(usize, Option<&[u8]>, usize), String> {
    let mut i = ws(s, expect(s, i, b'[')?);
    if s.get(i) == Some(&b']') {
        return Ok((0, None, i + 1));
    }
    let mut n = 0;
    loop {
        let e0 = i;
        i = skip_value(s, i)?;
        n += 1;
        let last = &s[e0..i];
        i = ws(s, i);
        match s.get(i) {
            Some(b',') => i = ws(s, i + 1),
            Some(b']') => return Ok((n, Some(last), i + 1)),
            _ => return Err(format!("JSON: no ',' or ']' after an element, at {i}")),
        }
    }
}

/// Checks of the scanner.
#[cfg(test)]
mod tests {
    use super::{elements_at, skip_value, ws, Object};
    use crate::object::Body;
    use serde::de::IgnoredAny;
    use serde_json::{json, Value};

    /// The number of elements of the array `s` (the JSON text of one array), and the last one.
    fn elements(s: &[u8]) -> Result<(usize, Option<&[u8]>), String> {
        let (n, last, end) = elements_at(s, ws(s, 0))?;
        if ws(s, end) != s.len() {
            return Err(format!("JSON: bytes after the array, at {end}"));
        }
        Ok((n, last))
    }

    fn count(s: &str) -> usize {
        elements(s.as_bytes()).unwrap().0
    }

    /// The member `key` of `page`, as its JSON text.
    fn member<'a>(page: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
        let mut obj = Object::new(page).unwrap();
        let mut found = None;
        while let Some(k) = obj.next_key().unwrap() {
            if k == key {
                found = Some(obj.value().unwrap());
            }
        }
        found
    }

    /// The elements of the member `key` of `page`, counted by `Object::elements`.
    fn count_member(page: &[u8], key: &[u8]) -> Result<usize, String> {
        let mut obj = Object::new(page)?;
        let mut n = None;
        while let Some(k) = obj.next_key()? {
            if k == key {
                n = Some(obj.elements()?.0);
            }
        }
        n.ok_or_else(|| "absent".to_owned())
    }

    #[test]
    fn empty_and_flat() {
        assert_eq!(count("[]"), 0);
        assert_eq!(count(" [ ] "), 0);
        assert_eq!(count("[1]"), 1);
        assert_eq!(count("[1,-2.5e3,true,null,\"x\",{},[]]"), 7);
        let (n, last) = elements(b"[{\"a\":1},{\"b\":[2,3]}]").unwrap();
        assert_eq!((n, last), (2, Some(&b"{\"b\":[2,3]}"[..])));
        assert_eq!(Object::new(b" {} ").unwrap().next_key(), Ok(None));
        assert_eq!(member(b"{\"a\":{}}", b"a"), Some(&b"{}"[..]));
    }

    /// A page as our server writes it: kube's list shape with real 2 KB objects.
    fn our_page(n: usize, cont: &str) -> Vec<u8> {
        let body = Body::new();
        let items: Vec<Value> = (0..n)
            .map(|i| {
                let mut o: Value = serde_json::from_str(&body.json(&Body::name("p", i))).unwrap();
                o["metadata"]["resourceVersion"] = json!((100 + i).to_string());
                o["metadata"]["annotations"]["note"] = json!("a \"quoted\" ], {value} \\ [");
                o["metadata"]["managedFields"] = json!([{"fieldsV1": {
                    "f:spec": {".": {}, "k:{\"name\":\"default\"}": {".": {}, "f:name": {}}}}}]);
                o
            })
            .collect();
        serde_json::to_vec(&json!({
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineList",
            "metadata": {"resourceVersion": "99", "continue": cont},
            "items": items,
        }))
        .unwrap()
    }

    #[test]
    fn a_list_page_as_ours_writes_it() {
        for (n, cont) in [(0, ""), (1, "abc"), (500, "eyJydiI6OTksInN0YXJ0Ijoidm0tcC0x\"]}IifQ==")]
        {
            let mut page = our_page(n, cont);
            page.push(b'\n');
            let (count, last) = elements(member(&page, b"items").unwrap()).unwrap();
            let want: Vec<IgnoredAny> = serde_json::from_value(
                serde_json::from_slice::<Value>(&page).unwrap()["items"].take(),
            )
            .unwrap();
            assert_eq!(count, want.len());
            assert_eq!(count, n);
            assert_eq!(count_member(&page, b"items"), Ok(n));
            if let Some(last) = last {
                let o: Value = serde_json::from_slice(last).unwrap();
                assert_eq!(o["metadata"]["resourceVersion"], json!((99 + n).to_string()));
            }
            let meta: Value = serde_json::from_slice(member(&page, b"metadata").unwrap()).unwrap();
            assert_eq!(meta["continue"], cont);
        }
    }

    #[test]
    fn a_range_answer_as_etcd_writes_it() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let body = Body::new();
        let kvs: Vec<Value> = (0..500)
            .map(|i| {
                let name = Body::name("e", i);
                json!({
                    "key": b64(&format!("/bench/e/{name}")),
                    "create_revision": "5", "mod_revision": "5", "version": "1",
                    "value": b64(&body.json(&name)),
                })
            })
            .collect();
        let text = json!({
            "header": {"cluster_id": "1", "member_id": "2", "revision": "501", "raft_term": "2"},
            "kvs": kvs, "more": true, "count": "10000",
        })
        .to_string();
        let page = text.as_bytes();
        let (n, last) = elements(member(page, b"kvs").unwrap()).unwrap();
        assert_eq!(n, 500);
        assert_eq!(count_member(page, b"kvs"), Ok(500));
        let last: Value = serde_json::from_slice(last.unwrap()).unwrap();
        assert_eq!(last["key"], b64(&format!("/bench/e/{}", Body::name("e", 499))));
        assert_eq!(member(page, b"more"), Some(&b"true"[..]));
        assert_eq!(member(page, b"count"), Some(&b"\"10000\""[..]));
        assert_eq!(member(page, b"absent"), None);
    }

    #[test]
    fn strings_that_look_like_structure() {
        let tricky = r#"["]", "[", "{\"a\":[1,2]}", "\\", "\\\"", "\u0022]", ",,", "}{"]"#;
        assert_eq!(count(tricky), 8);
        let v: Vec<IgnoredAny> = serde_json::from_str(tricky).unwrap();
        assert_eq!(v.len(), 8);
        let wrapped = format!("[{tricky},{{\"k\":{tricky}}}]");
        assert_eq!(count(&wrapped), 2);
        let obj = r#"{"k\"ey": "v]al,ue", "items": [{"x": "]}"}, "\\"], "z": {"]": "["}}"#;
        assert_eq!(count_member(obj.as_bytes(), b"items"), Ok(2));
        assert_eq!(member(obj.as_bytes(), b"z"), Some(&br#"{"]": "["}"#[..]));
        assert_eq!(member(obj.as_bytes(), b"k\\\"ey"), Some(&br#""v]al,ue""#[..]));
    }

    /// Runs of backslashes before quotes and brackets, in keys and values, at every offset.
    #[test]
    fn runs_of_backslashes() {
        for pad in 0..70 {
            for tail in ["\\\\", "\\\"", "\\\\\\\"]", "\\\\\\\\", "]}\\\"{["] {
                let s =
                    format!("{{\"{}{tail}\":[\"{tail}\",{{}}],\"b\":\"]\"}}  ", "x".repeat(pad));
                let v: Value = serde_json::from_str(&s).unwrap();
                assert_eq!(v.as_object().unwrap().len(), 2);
                assert_eq!(skip_value(s.as_bytes(), 0), Ok(s.len() - 2), "{s}");
                let arr = format!("[{s},{s}]");
                assert_eq!(count(&arr), 2, "{arr}");
            }
        }
    }

    #[test]
    fn whitespace_between_tokens() {
        let page = b" \r\n{ \"items\" :\n[ {\"a\" : 1} ,\t2 , [ ] ] , \"more\" : false }\n ";
        assert_eq!(elements(member(page, b"items").unwrap()).unwrap().0, 3);
        assert_eq!(count_member(page, b"items"), Ok(3));
        assert_eq!(member(page, b"more"), Some(&b"false"[..]));
    }

    #[test]
    fn malformed_pages_fail() {
        for bad in [
            "",
            "[",
            "[1,]",
            "[1 2]",
            "[,1]",
            "[\"open]",
            "[{\"a\":[1]]",
            "[1] x",
            "{\"a\":1",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{,\"a\":1}",
            "{a:1}",
            "{\"a\":1}}",
            "{\"a\":}",
            "{\"a\":1 \"b\":2}",
        ] {
            let walk = || -> Result<(), String> {
                let mut obj = Object::new(bad.as_bytes())?;
                while obj.next_key()?.is_some() {}
                Ok(())
            };
            let failed = elements(bad.as_bytes()).is_err() && walk().is_err();
            assert!(failed, "{bad:?}");
        }
    }

    /// A tiny deterministic generator of JSON values with awkward strings.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn string(&mut self) -> String {
            const PIECES: [&str; 12] =
                ["a", "]", "[", "{", "}", "\"", "\\", ",", ":", "é\u{1}", "\\\\\"", "0123456789"];
            (0..self.next(12)).map(|_| PIECES[self.next(12) as usize]).collect()
        }

        fn value(&mut self, depth: u32) -> Value {
            match if depth > 3 { self.next(4) } else { self.next(6) } {
                0 => json!(self.next(1000) as i64 - 500),
                1 => json!(self.string()),
                2 => [json!(true), json!(false), Value::Null][self.next(3) as usize].clone(),
                3 => json!(self.next(100) as f64 / 7.0),
                4 => Value::Array((0..self.next(5)).map(|_| self.value(depth + 1)).collect()),
                _ => Value::Object(
                    (0..self.next(5)).map(|_| (self.string(), self.value(depth + 1))).collect(),
                ),
            }
        }
    }

    #[test]
    fn random_values_count_as_serde_does() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        for _ in 0..1000 {
            let n = g.next(20) as usize;
            let items: Vec<Value> = (0..n).map(|_| g.value(0)).collect();
            let pretty = g.next(2) == 0;
            let page = json!({"metadata": {"continue": g.string()}, "items": items});
            let text = if pretty {
                serde_json::to_vec_pretty(&page).unwrap()
            } else {
                serde_json::to_vec(&page).unwrap()
            };
            assert_eq!(count_member(&text, b"items"), Ok(n));
            let meta: Value = serde_json::from_slice(member(&text, b"metadata").unwrap()).unwrap();
            assert_eq!(meta, page["metadata"]);
            for (k, item) in items.iter().enumerate() {
                let one = serde_json::to_vec(item).unwrap();
                if matches!(one[0], b'{' | b'[') {
                    assert_eq!(skip_value(&one, 0), Ok(one.len()), "item {k}");
                }
            }
        }
    }
}
