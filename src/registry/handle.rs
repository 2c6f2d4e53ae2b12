//! The registry's handle: the store the verbs run over and what they are configured with (the
//! webhooks admission calls, `--implicit-namespaces`, a leader's fence), and the calls into those
//! webhooks. The verbs themselves are `impl Registry` blocks in their own files (`read`, `write`,
//! `apply`, `delete`, `scale`, `update`, `namespaces`).

use std::sync::Arc;

use serde_json::Value;

use super::addresses::{Addresses, Ranges};
use super::admission::Admission;
use super::log_source::{LogSource, NoLogs};
use crate::object::error::ApiError;
use crate::object::subresource::Part;
use crate::resource::ResourceInfo;
use crate::store::{Fence, ResetStats, Saved, Store};

/// The verbs over one store. Cheap to clone: it is a handle.
#[derive(Clone, Debug)]
pub struct Registry {
    pub(super) store: Store,
    /// `--implicit-namespaces`: namespaced objects need no Namespace (`namespaces`).
    pub(super) implicit_namespaces: bool,
    /// The webhooks admission calls on every write (none: kube's own admission only).
    admission: Option<Arc<dyn Admission>>,
    /// The service address ranges, and the lock allocating writes hold (`allocating`).
    pub(super) addresses: Arc<Addresses>,
    /// Where containers' logs come from (none: every log is empty).
    pub(super) log_source: Arc<dyn LogSource>,
}

impl Registry {
    /// The verbs over `store`, with kube's namespace lifecycle (when the document has a
    /// namespace kind).
    pub fn new(store: Store) -> Registry {
        Registry {
            store,
            implicit_namespaces: false,
            admission: None,
            addresses: Arc::new(Addresses::default()),
            log_source: Arc::new(NoLogs),
        }
    }

    /// These verbs with service addresses from `ranges` (`--service-cluster-ip-range`,
    /// `--service-node-port-range`) instead of kube's defaults.
    pub fn with_address_ranges(mut self, ranges: Ranges) -> Registry {
        self.addresses = Arc::new(Addresses::new(ranges));
        self
    }

    /// The service address ranges served.
    pub fn address_ranges(&self) -> Ranges {
        self.addresses.ranges
    }

    /// These verbs with `admission`'s webhooks called on every write.
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Registry {
        self.admission = Some(admission);
        self
    }

    /// These verbs with containers' logs read from `source`.
    pub fn with_log_source(mut self, source: Arc<dyn LogSource>) -> Registry {
        self.log_source = source;
        self
    }

    /// These verbs with every write fenced by `fence` (`Store::fenced`): what singletons write
    /// through, so their writes fail once this process no longer leads.
    pub fn fenced(&self, fence: Fence) -> Registry {
        Registry { store: self.store.fenced(fence), ..self.clone() }
    }

    /// `--implicit-namespaces`: any namespace name may hold objects, and none is checked.
    pub fn with_implicit_namespaces(mut self, implicit: bool) -> Registry {
        self.implicit_namespaces = implicit;
        self
    }

    /// The store underneath, for what is not an object verb: watches, probes, metrics.
    /// Puts every object back to `saved` (the fixtures), below admission: the objects are
    /// restored as they were stored, at a new revision, older history compacted and every
    /// watch ended (`Store::reset`); the controllers re-scan what it leaves.
    pub async fn reset(&self, saved: &Saved) -> Result<ResetStats, ApiError> {
        Ok(self.store.reset(saved).await?)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The webhooks' mutation of a new object, if any are registered.
    pub(crate) fn mutate_on_create(
        &self,
        res: &ResourceInfo,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        match &self.admission {
            Some(a) => a.mutate_on_create(res, obj),
            None => Ok(()),
        }
    }

    /// The webhooks' warnings on a write, if any are registered.
    pub(crate) fn admission_warnings(
        &self,
        res: &ResourceInfo,
        part: Part,
        obj: &Value,
    ) -> Vec<String> {
        match &self.admission {
            Some(a) => a.warnings(res, part, obj),
            None => Vec::new(),
        }
    }

    /// The webhooks' validation of a create (`update` false) or update writing `obj`.
    pub(crate) fn admission_validate(
        &self,
        res: &ResourceInfo,
        part: Part,
        obj: &Value,
        update: bool,
    ) -> Result<(), ApiError> {
        match &self.admission {
            Some(a) => a.validate(res, part, obj, update),
            None => Ok(()),
        }
    }

    /// The webhooks' validation of a create through `subresource` of `obj`, if any are
    /// registered.
    pub(crate) async fn admit_subresource_create(
        &self,
        res: &'static ResourceInfo,
        subresource: &str,
        obj: &Value,
        body: &Value,
    ) -> Result<(), ApiError> {
        match &self.admission {
            Some(a) => a.admit_subresource_create(res, subresource, obj, body).await,
            None => Ok(()),
        }
    }
}
