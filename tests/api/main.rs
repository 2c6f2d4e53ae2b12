//! Integration tests: the real binary on an ephemeral port, driven over HTTP. One test binary, so
//! it links once.

mod common;
mod fixture_build;
mod kubectl;
mod validator;
