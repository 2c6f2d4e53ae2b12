//! virt-api's admission warnings (`warnings` of a kind in the lifecycle file): what its
//! validating webhooks answer beside `allowed: true` on a create or update of the object itself,
//! which kube-apiserver passes on as `Warning` headers (apiserver `admission/plugin/webhook/
//! validating/dispatcher.go`, `warning.AddWarning`). The VM admitter's
//! (`pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go`) is an example.

use lifecycle::{Ctx, ResourceRef, Rng};
use serde_json::Value;

use super::Registry;
use crate::object::meta::now_rfc3339;
use crate::object::subresource::Part;
use crate::resource::ResourceInfo;

impl Registry {
    /// The warnings virt-api's webhook gives a write of `obj` through `part` of `res`: none
    /// for a status write, which KubeVirt admits separately and without them.
    pub(crate) fn admission_warnings(
        &self,
        res: &ResourceInfo,
        part: Part,
        obj: &Value,
    ) -> Vec<String> {
        if part != Part::Main {
            return Vec::new();
        }
        let r = ResourceRef { group: res.group.to_string(), kind: res.kind.to_string() };
        let Some(kind) = self.actions.kind(&r).filter(|k| !k.warnings.is_empty()) else {
            return Vec::new();
        };
        // The webhook reads the object it is sent, nothing related.
        let ctx = Ctx::new(kind, obj, now_rfc3339(), 1, Rng::new(0));
        kind.warnings
            .iter()
            .filter(|w| ctx.matches(&w.when))
            .map(|w| match lifecycle::template::render_str(&w.message, obj, &ctx) {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect()
    }
}
