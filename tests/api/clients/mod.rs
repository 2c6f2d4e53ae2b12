//! Real clients against the server: kubectl (the Python and kube-rs suites live beside
//! this test binary, in `tests/clients` and `tests/kube-rs`).

mod kubectl;
