//! Admission beyond kube's own NamespaceLifecycle (`namespaces.rs`): the webhooks a cluster
//! registers, as kube's generic registry takes them, an `admission.Interface` handed in from
//! above (apiserver `pkg/admission/interfaces.go`: `MutationInterface`, `ValidationInterface`,
//! and the warnings a validating webhook answers beside `allowed: true`). The registry calls
//! them on every write, whoever makes it; what they do is the caller's (`behaviour::webhooks`).

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

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

    /// Validating admission on a create (`update` false) or an update of `obj` through `part`
    /// of `res`, as the strategy left it: kube calls it after the strategy validated, before
    /// the write. A refusal is the webhook's whole answer. Allows by default.
    fn validate(
        &self,
        res: &ResourceInfo,
        part: Part,
        obj: &Value,
        update: bool,
    ) -> Result<(), ApiError> {
        let _ = (res, part, obj, update);
        Ok(())
    }

    /// Validating admission on a create through a subresource of `res` that writes `obj`
    /// (kube's Pod `binding` and `eviction`: `body` is the Binding or Eviction, `obj` the object
    /// it names as stored): kube's `createValidation`, called before the write. Async, as a
    /// webhook may read and write other objects through the registry it was handed. A refusal
    /// is the webhook's whole answer (`ApiError::webhook_denied`). Allows by default.
    fn admit_subresource_create<'a>(
        &'a self,
        res: &'static ResourceInfo,
        subresource: &'a str,
        obj: &'a Value,
        body: &'a Value,
    ) -> Admitted<'a> {
        let _ = (res, subresource, obj, body);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What `Admission::admit_subresource_create` answers, in time.
pub type Admitted<'a> = Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send + 'a>>;
