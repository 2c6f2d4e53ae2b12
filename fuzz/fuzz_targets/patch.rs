//! Patch application: a document and a JSON patch or merge patch, split at the first 0xFF byte;
//! the first byte picks the kind. Nothing panics or overflows the stack, and a document within
//! the nesting limit stays within it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use virt_apiserver::limits::{depth, MAX_OBJECT_DEPTH};
use virt_apiserver::patch::{
    apply_json_patch, apply_merge_patch, parse_json_patch, parse_merge_patch,
};

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    let (doc, patch) = match rest.iter().position(|b| *b == 0xFF) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (&b"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":[1,2]}}"[..], rest),
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(doc) else { return };
    let within = depth(&doc) <= MAX_OBJECT_DEPTH;
    if kind % 2 == 0 {
        let Ok(p) = parse_json_patch(patch) else { return };
        if apply_json_patch(&mut doc, &p).is_ok() && within {
            assert!(depth(&doc) <= MAX_OBJECT_DEPTH, "a JSON patch nested past the limit");
        }
    } else {
        let Ok(p) = parse_merge_patch(patch) else { return };
        apply_merge_patch(&mut doc, &p);
    }
    // What a patch produced can be encoded (and so stored) without trouble.
    let _ = serde_json::to_vec(&doc);
});
