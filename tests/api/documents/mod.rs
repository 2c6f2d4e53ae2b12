//! What the server says about itself: discovery, the OpenAPI documents, `kubectl explain`,
//! conformance to the seed's operations, the document's validator and the fixture build.

mod conformance;
mod discovery;
mod explain;
mod fixture_build;
mod openapi;
mod seed_ops;
mod validator;
