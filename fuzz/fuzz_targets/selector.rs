//! Label and field selector parsing (the `labelSelector` / `fieldSelector` query values), and
//! matching what parses against a few objects.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use virt_apiserver::resource::SelectableField;
use virt_apiserver::selector::{FieldSelector, LabelSelector};

/// Selectable fields as a kind may declare them: a plain path and a renamed one.
const SELECTABLE: &[SelectableField] = &[
    SelectableField { name: "spec.color", json_path: ".spec.color", missing: "" },
    SelectableField { name: "source", json_path: ".source.component", missing: "" },
];

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let objects = [
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "3"}}}),
        json!({"metadata": {"name": "b"}}),
        json!({"metadata": {"labels": {"k": 1, "": "x"}}}),
        json!({"spec": {"color": 3}, "source": {"component": ["x"]}}),
        json!(null),
    ];
    if let Ok(sel) = LabelSelector::parse(s) {
        for o in &objects {
            let _ = sel.matches(o);
        }
    }
    for (namespaced, selectable) in [(true, SELECTABLE), (false, &[][..])] {
        if let Ok(sel) = FieldSelector::parse(s, namespaced, selectable) {
            let _ = sel.exact_name();
            for o in &objects {
                let _ = sel.matches(o);
            }
        }
    }
});
