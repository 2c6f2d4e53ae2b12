//! Continue tokens as clients send them back: decoding never panics, and what decodes
//! re-encodes to a token that decodes to the same position.
#![no_main]

use libfuzzer_sys::fuzz_target;
use virt_apiserver::ContinueToken;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(t) = ContinueToken::decode(s) {
        let again = ContinueToken::decode(&ContinueToken::encode(t.rv, &t.start))
            .expect("a token we encode decodes");
        assert_eq!(again, t);
    }
});
