//! Bounds on what a request can make the server build: object nesting, YAML flow nesting before
//! libyaml sees it, and JSON patches that nest or copy their way past the limits. Everything here
//! is iterative, so a hostile input cannot overflow the stack while it is being measured.

use serde_json::Value;

use crate::object::error::ApiError;

/// Deepest nesting of arrays and objects an object may have. serde_json refuses to decode past
/// 128 levels, and the store decodes what it keeps, so a stored object must stay well below that
/// or it could never be read back.
pub const MAX_OBJECT_DEPTH: usize = 100;

/// Largest object the store accepts once encoded (A.13).
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Largest request body (kube-apiserver's `MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Deepest YAML flow nesting (`[[[…`) handed to libyaml, whose scanner is quadratic in it; any
/// deeper document fails serde_yaml's own limit of 128 anyway.
pub const MAX_YAML_FLOW_DEPTH: usize = 128;

/// Nesting depth of `v`: a scalar is 0, `[]` and `{}` are 1, `{"a":[]}` is 2.
pub fn depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
            }
            Value::Object(m) => {
                max = max.max(d + 1);
                stack.extend(m.values().map(|c| (c, d + 1)));
            }
            _ => {}
        }
    }
    max
}

/// 400 for an object nested deeper than `MAX_OBJECT_DEPTH`, 413 for one whose encoding is
/// larger than `MAX_OBJECT_BYTES`: the limits of what the store keeps. One walk measures both;
/// the encoding is counted only when that walk's bound does not already settle it.
pub fn check_object(obj: &Value) -> Result<(), ApiError> {
    let (d, bound) = depth_and_bound(obj);
    if d > MAX_OBJECT_DEPTH {
        return Err(ApiError::bad_request(format!(
            "the object is nested {d} levels deep; the limit is {MAX_OBJECT_DEPTH}"
        )));
    }
    if bound > MAX_OBJECT_BYTES {
        let n = encoded_len(obj);
        if n > MAX_OBJECT_BYTES {
            return Err(ApiError::RequestEntityTooLarge(format!(
                "Request entity too large: the object is {n} bytes, the limit is {MAX_OBJECT_BYTES}"
            )));
        }
    }
    Ok(())
}

/// Longest encoding of a number: a negative i64 is 20 characters, an f64 at most 24.
const NUMBER_BOUND: usize = 24;

/// The nesting depth of `v` (as [`depth`]) and a bound its JSON encoding never exceeds: every
/// string byte counted as the longest escape (`\u00XX`), every number as the longest number.
pub fn depth_and_bound(v: &Value) -> (usize, usize) {
    let str_bound = |s: &str| 2 + 6 * s.len();
    let (mut max, mut bound) = (0, 0);
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        bound += match v {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(_) => NUMBER_BOUND,
            Value::String(s) => str_bound(s),
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
                // Brackets and a comma per item.
                2 + a.len()
            }
            Value::Object(m) => {
                max = max.max(d + 1);
                stack.extend(m.values().map(|c| (c, d + 1)));
                // Braces, and per entry its key, a colon and a comma.
                2 + m.keys().map(|k| str_bound(k) + 2).sum::<usize>()
            }
        };
    }
    (max, bound)
}

/// The encoded size of `v` in bytes, without building the encoding.
pub fn encoded_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// An upper bound of the flow nesting (`[`/`{`) of a YAML text: every bracket counts, even in
/// quoted, plain or block scalars and comments. Telling those apart needs a YAML scanner, and any
/// disagreement with libyaml's could be used to slip deep nesting past this check; counting all
/// of them only overestimates, and only for texts with over a hundred unclosed brackets.
pub fn yaml_flow_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in text.bytes() {
        match c {
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Decodes a YAML text into JSON values with its nesting bounded first. serde_yaml bounds alias
/// expansion itself (billion laughs fail with "repetition limit exceeded").
pub fn yaml_to_value(text: &str) -> Result<Value, String> {
    if yaml_flow_depth(text) > MAX_YAML_FLOW_DEPTH {
        return Err(format!("flow collections nested deeper than {MAX_YAML_FLOW_DEPTH} levels"));
    }
    serde_yaml::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_counts_containers() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [1, {"b": {}}]})), 4);
        let mut deep = json!(1);
        for _ in 0..50_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(depth(&deep), 50_000);
        // Let the value go without recursing through it.
        let mut v = deep;
        while let Value::Array(mut a) = v {
            v = a.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn yaml_flow_depth_bounds_nesting() {
        assert_eq!(yaml_flow_depth("a: [[1], {b: [2]}]\n"), 3);
        assert_eq!(yaml_flow_depth("a: \"[[\"\nb: ']]'\n"), 2);
        assert_eq!(yaml_flow_depth(&format!("a: {}1{}", "[".repeat(500), "]".repeat(500))), 500);
        assert!(yaml_to_value(&format!("a: {}", "[".repeat(100_000))).is_err());
        assert_eq!(yaml_to_value("a: [1, {b: c}]").unwrap(), json!({"a": [1, {"b": "c"}]}));
    }

    #[test]
    fn the_bound_is_never_below_the_encoding() {
        let samples = [
            serde_json::json!(null),
            serde_json::json!({"a": [1, -9223372036854775808i64, 1.5e-300, true, null]}),
            serde_json::json!({"ctl": "\u{1}\u{1f}\"\\", "ü": "日本", "e": {}, "l": []}),
            serde_json::json!([[[[]]], {"k": {"k": {"k": "v"}}}]),
        ];
        for v in samples {
            let (d, bound) = depth_and_bound(&v);
            assert_eq!(d, depth(&v), "{v}");
            assert!(bound >= encoded_len(&v), "{v}: {bound} < {}", encoded_len(&v));
        }
        let big = serde_json::json!({"s": "x".repeat(MAX_OBJECT_BYTES)});
        assert!(matches!(check_object(&big), Err(ApiError::RequestEntityTooLarge(_))));
        let near = serde_json::json!({"s": "x".repeat(MAX_OBJECT_BYTES / 4)});
        assert!(depth_and_bound(&near).1 > MAX_OBJECT_BYTES, "counted exactly");
        assert!(check_object(&near).is_ok());
    }
}
