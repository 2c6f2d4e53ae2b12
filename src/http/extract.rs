//! Typed options from a request: what every write endpoint reads before its body, in kube's
//! order (the options' 422s, then the media type's 406), so the endpoints do not each repeat it.

use actix_web::HttpRequest;

use crate::http::codec::{negotiate, Format};
use crate::http::params::{manager_of, Query};
use crate::object::error::{ApiError, Cause};
use crate::object::managed_fields;
use crate::object::validation::FieldValidation;
use crate::registry::{ApplyOptions, WriteOptions};

/// The options of a create or an update (`options_kind` names them in a 422:
/// `CreateOptions`, `UpdateOptions`) and the format to answer in.
pub fn write_request(
    req: &HttpRequest,
    options_kind: &str,
    yaml_ok: bool,
) -> Result<(Query, WriteOptions, Format), ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, field_validation) = q.write_options(options_kind)?;
    let manager = manager_of(&q, req, options_kind)?;
    let format = negotiate(req, yaml_ok)?;
    Ok((q, WriteOptions { dry_run, field_validation, manager }, format))
}

/// What a PATCH reads before it knows whether its body is an apply configuration.
pub struct PatchRequest {
    query: Query,
    dry_run: bool,
    field_validation: FieldValidation,
    /// The format to answer in.
    pub format: Format,
}

impl PatchRequest {
    pub fn extract(req: &HttpRequest) -> Result<PatchRequest, ApiError> {
        let query = Query::parse(req)?;
        let (dry_run, field_validation) = query.write_options("PatchOptions")?;
        let format = negotiate(req, true)?;
        Ok(PatchRequest { query, dry_run, field_validation, format })
    }

    /// The options of a non-apply patch, once its body is known not to be an apply
    /// configuration: `force` belongs to apply only.
    pub fn options(&self, req: &HttpRequest) -> Result<WriteOptions, ApiError> {
        crate::http::params::reject_force(&self.query)?;
        let manager = manager_of(&self.query, req, "PatchOptions")?;
        let (dry_run, field_validation) = (self.dry_run, self.field_validation);
        Ok(WriteOptions { dry_run, field_validation, manager })
    }
}

/// An apply's options, checked as kube's `ValidatePatchOptions` does: one Invalid for every bad
/// option, fieldManager first.
pub fn apply_options(req: &HttpRequest) -> Result<ApplyOptions, ApiError> {
    let q = Query::parse(req)?;
    let manager = q.get("fieldManager").unwrap_or("").to_string();
    let mut causes = Vec::new();
    if manager.is_empty() {
        causes.push(Cause::required("fieldManager", "is required for apply patch"));
    }
    causes.extend(managed_fields::manager_causes(&manager));
    let (dry_run, field_validation) = match q.write_options("PatchOptions") {
        Ok(options) => options,
        Err(ApiError::Invalid { causes: more, .. }) => {
            causes.extend(more);
            (false, FieldValidation::Ignore)
        }
        Err(e) => return Err(e),
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid_options("PatchOptions", causes));
    }
    Ok(ApplyOptions { manager, force: q.flag("force"), dry_run, field_validation })
}
