//! Label and field selector parsing (the `labelSelector` / `fieldSelector` query values), and
//! matching what parses against a few objects.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use virt_apiserver::selector::{FieldSelector, LabelSelector};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let objects = [
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "3"}}}),
        json!({"metadata": {"name": "b"}}),
        json!({"metadata": {"labels": {"k": 1, "": "x"}}}),
        json!(null),
    ];
    if let Ok(sel) = LabelSelector::parse(s) {
        for o in &objects {
            let _ = sel.matches(o);
        }
    }
    for namespaced in [true, false] {
        if let Ok(sel) = FieldSelector::parse(s, namespaced) {
            let _ = sel.exact_name();
            for o in &objects {
                let _ = sel.matches(o);
            }
        }
    }
});
