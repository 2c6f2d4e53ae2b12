//! Admission beyond kube's own NamespaceLifecycle (`namespaces.rs`): the webhooks a cluster
//! registers, as kube's generic registry takes them, an `admission.Interface` handed in from
//! above (apiserver `pkg/admission/interfaces.go`: `MutationInterface`, `ValidationInterface`,
//! and the warnings a validating webhook answers beside `allowed: true`). The registry calls
//! them on every write, whoever makes it; what they do is the caller's (`behaviour::webhooks`).

use std::fmt::Debug;

use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::subresource::Part;
use crate::resource::ResourceInfo;

/// The registered webhooks.
pub trait Admission: Debug + Send + Sync {
    /// Mutating admission on a create of `obj` (decoded, in its namespace, not yet validated):
    /// kube runs it after its own mutating admission and before the strategy validates.
    fn mutate_on_create(&self, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError>;

    /// The warnings validating admission answers a write of `obj` through `part` of `res`,
    /// sent on as `Warning` headers after decoding's.
    fn warnings(&self, res: &ResourceInfo, part: Part, obj: &Value) -> Vec<String>;
}
