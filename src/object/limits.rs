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

/// 400 for an object nested deeper than `MAX_OBJECT_DEPTH`.
pub fn check_depth(obj: &Value) -> Result<(), ApiError> {
    let d = depth(obj);
    if d > MAX_OBJECT_DEPTH {
        return Err(ApiError::bad_request(format!(
            "the object is nested {d} levels deep; the limit is {MAX_OBJECT_DEPTH}"
        )));
    }
    Ok(())
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
}
