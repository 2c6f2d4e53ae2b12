//! Where a request points: the namespace and name its path gives, and which part of the object
//! (the main resource or `/status`) a write may change.

use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::meta_str;
use crate::object::subresource::Part;

/// Where a request points: a collection (namespace or all/cluster) or one named object, and
/// which part of it a write may change.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The path's namespace; `None` on cluster kinds and all-namespace paths.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// `Main` for the resource's own paths, `Status` for `/status`.
    pub part: Part,
}

impl Target {
    pub fn new(namespace: Option<String>, name: Option<String>) -> Target {
        Target { namespace, name, part: Part::Main }
    }

    pub fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// A written object must be the one the URL names: its name, and its namespace when it
    /// gives one (handlers/rest.go `checkName`, patch.go for the patched result).
    pub fn check_identity(&self, obj: &Value) -> Result<(), ApiError> {
        let name = meta_str(obj, "name");
        if name != self.name() {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                self.name()
            )));
        }
        let ns = meta_str(obj, "namespace");
        if !self.ns().is_empty() && !ns.is_empty() && ns != self.ns() {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({ns}) does not match the namespace on the request ({})",
                self.ns()
            )));
        }
        Ok(())
    }
}
