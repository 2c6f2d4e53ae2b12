//! KubeVirt's action API (`subresources.kubevirt.io`: start, stop, pause, guestosinfo...) as
//! data: each action is declared under its kind's `actions` in the built-in lifecycle file
//! (format: `lifecycle::action`; checked by build.rs against the document), which
//! `--simulate-config` extends or replaces (checked at start the same way). An action reads the
//! object, its related objects and the body, answers the first check that holds as virt-api
//! would, and otherwise writes its steps through the verbs here, as virt-api's field manager.
//! Actions are served with or without `--simulate`: their effect is a write; the lifecycle that
//! follows from it runs only when simulating.
//!
//! A stream (`stream:`) answers its checks' errors as any action, then hands the VMI's guest
//! to the caller for the upgrade; `$guest` is what the guest reports (its agent's reads), and
//! `guest: reboot` reboots it after the steps (softreboot, reset). The guest's own power
//! events run the kind's `guest/poweroff` action as its `manager` (virt-handler).

use std::sync::Arc;

use lifecycle::action::{self, DryRun};
use lifecycle::{Ctx, Kind, Lifecycles, ResourceRef, Rng};
use serde_json::Value;

use super::guest::credentials::{self, Secrets};
use super::guest::shell::Power;
use super::guest::{Guest, Guests};
use super::related::{related, served};
use super::write::{self, Guard, Writer};
use crate::controllers::recorder::Recorder;
use crate::object::error::ApiError;
use crate::object::meta::now_rfc3339;
use crate::registry::keys::object_key;
use crate::registry::{Registry, Target};
use crate::resource::ResourceInfo;

/// The field manager of the actions' writes (virt-api's).
const MANAGER: &str = "virt-api";

/// What virt-api says when a patch's `test` fails (the state moved since its checks).
const JSONPATCH_TEST_ERR: &str = "jsonpatch test operation does not apply";

/// The action a guest's poweroff runs on its VMI (virt-handler's domain Shutoff).
const GUEST_POWEROFF: &str = "guest/poweroff";

/// What a successful action answers.
#[derive(Debug)]
pub enum Acted {
    /// A PUT: its code (200 or 202), with an empty body.
    Done(u16),
    /// A read: the answer.
    Answer(Value),
    /// A stream's checks passed: the guest to stream from (`stream` names which stream).
    Stream { stream: String, guest: Arc<Guest>, object: Value },
}

/// The error a check gives, shaped by its code as virt-api's constructors shape it (409
/// `Operation cannot be fulfilled on …`, 404 `… not found`, 403 `… is forbidden: …`, 500
/// `Internal error occurred: …`); `plain` answers the text as a 500.
fn refusal(code: u16, message: &str, about: (&ResourceInfo, &str), plain: bool) -> ApiError {
    let (res, name) = about;
    let qualified = format!("{}.{}", res.singular, res.group);
    let message = match code {
        404 => format!("{qualified} {name:?} not found"),
        409 => format!("Operation cannot be fulfilled on {qualified} {name:?}: {message}"),
        403 => format!("{qualified} {name:?} is forbidden: {message}"),
        500 => format!("Internal error occurred: {message}"),
        _ => message.to_string(),
    };
    if plain {
        return ApiError::PlainText { code: 500, message };
    }
    ApiError::Action {
        code,
        message,
        name: name.to_string(),
        group: res.group.to_string(),
        singular: res.singular.to_string(),
    }
}

/// virt-api's action API: the actions of a program, run over a registry.
#[derive(Debug, Clone)]
pub struct Actions {
    registry: Registry,
    program: Arc<Lifecycles>,
    /// virt-api's, for an action's Events.
    recorder: Recorder,
    /// The running VMIs' guests, which streams reach and agent reads report.
    guests: Guests,
}

impl Actions {
    pub fn new(registry: Registry, program: Arc<Lifecycles>, guests: Guests) -> Actions {
        let recorder = Recorder::new(registry.clone(), MANAGER, MANAGER, "");
        Actions { registry, program, recorder, guests }
    }

    /// Whether `guest`'s VMI still runs it; a guest whose VMI stopped, is being deleted (the
    /// guest is signalled to shut down), went or was replaced goes down with it (its console's
    /// connection dropped).
    pub async fn still_running(&self, guest: &Arc<Guest>) -> bool {
        let key = object_key(guest.res, &guest.namespace, &guest.name);
        let vmi = self.registry.store().get(&key).await.ok().flatten();
        let running = vmi.as_ref().filter(|v| {
            v["metadata"]["uid"] == guest.uid.as_str()
                && v["metadata"]["deletionTimestamp"].is_null()
                && v["status"]["phase"] == "Running"
        });
        let Some(vmi) = running else {
            guest.halt(&self.guests);
            return false;
        };
        // The launcher's agent re-reads the credentials' Secrets while the guest runs.
        guest.credentials(vmi, &self.secrets(guest.res, vmi).await);
        true
    }

    /// The Secrets `vmi`'s access credentials name, as they are now (its kind's relations that
    /// hold them, alone).
    async fn secrets(&self, res: &'static ResourceInfo, vmi: &Value) -> Secrets {
        let r = ResourceRef { group: res.group.to_string(), kind: res.kind.to_string() };
        let Some(kind) = self.program.kind(&r) else { return Secrets::default() };
        let mine = |(n, _): &(&String, _)| credentials::RELATED.contains(&n.as_str());
        let only = Kind {
            resource: r.clone(),
            related: kind
                .related
                .iter()
                .filter(mine)
                .map(|(n, r)| (n.clone(), r.clone()))
                .collect(),
            ..Kind::default()
        };
        let ctx = Ctx::new(&only, vmi, now_rfc3339(), 1, Rng::new(0));
        Secrets::among(&related(&self.registry, (&only, None), res, vmi, &ctx).await)
    }

    /// What a guest does on a power request made inside it: a reboot boots it again; a
    /// poweroff (or a reboot it does not survive) ends its VMI.
    pub async fn power(&self, guest: &Arc<Guest>, p: Power) -> Result<(), ApiError> {
        if !guest.power(p, &self.guests) {
            return Ok(());
        }
        let target = Target::new(Some(guest.namespace.clone()), Some(guest.name.clone()));
        self.act(guest.res, GUEST_POWEROFF, &target, &[]).await.map(|_| ())
    }

    /// Runs action `name` on object `target` of `res` with the request `body`.
    pub async fn act(
        &self,
        res: &'static ResourceInfo,
        name: &str,
        target: &Target,
        body: &[u8],
    ) -> Result<Acted, ApiError> {
        let r = ResourceRef { group: res.group.to_string(), kind: res.kind.to_string() };
        let kind = self.program.kind(&r);
        let Some((kind, action)) = kind.and_then(|k| Some((k, k.actions.get(name)?))) else {
            return Err(ApiError::Action {
                code: 501,
                message: format!("the {name} action is not simulated for {}", res.plural),
                name: target.name().to_string(),
                group: res.group.to_string(),
                singular: res.singular.to_string(),
            });
        };
        let body = action::decode_body(action, body).map_err(|e| {
            ApiError::bad_request(format!("Can not unmarshal Request body to struct, error: {e}"))
        })?;
        // An action on no object (`expand-vm-spec`) reads its namespace alone.
        let named = target.name.is_some();
        // virt-api reads what it checks from the API: the latest state, on any replica.
        self.registry.consistent().await?;
        let stored = match named {
            true => self.registry.store().get(&object_key(res, target.ns(), target.name())).await?,
            false => None,
        };
        // A missing object reads as its name alone (the first check says 404).
        let obj = match &stored {
            Some(o) => (**o).clone(),
            None if named => {
                serde_json::json!({"metadata": {"name": target.name(), "namespace": target.ns()}})
            }
            None => serde_json::json!({"metadata": {"namespace": target.ns()}}),
        };
        let mut ctx = Ctx::new(kind, &obj, now_rfc3339(), 1, Rng::new(rand_seed()));
        if named {
            ctx.named = related(&self.registry, (kind, None), res, &obj, &ctx).await;
        }
        ctx.named.insert("body".into(), Arc::new(body.clone()));
        let secrets = Secrets::among(&ctx.named);
        if action.answer.is_some() {
            ctx.named.insert("guest".into(), Arc::new(self.guests.report(res, &obj, &secrets)));
        }
        ctx.bind(&action.lets);
        for check in &action.checks {
            if ctx.matches(&check.when) {
                let message = ctx.text(&check.message);
                let about = self.about(kind, res, &check.about, target.name());
                return Err(refusal(check.code, &message, about, check.plain));
            }
        }
        if named && stored.is_none() {
            return Err(ApiError::not_found(res, target.name()));
        }
        if let Some(stream) = &action.stream {
            // The object whose guest streams: this one, or the related one named.
            let (res, streams) = match &action.stream_of {
                Some(rel) => {
                    let Some((res, o)) = self.related_object(kind, rel, &ctx) else {
                        return Err(ApiError::bad_request("VMI is not running"));
                    };
                    (res, o)
                }
                None => (res, obj.clone()),
            };
            // The checks saw it Running; a guest that went down since is not running.
            // A related object's guest reads that object's Secrets.
            let secrets = match &action.stream_of {
                Some(_) => self.secrets(res, &streams).await,
                None => secrets,
            };
            let Some(guest) = self.guests.guest(res, &streams, &secrets) else {
                return Err(ApiError::bad_request("VMI is not running"));
            };
            return Ok(Acted::Stream { stream: stream.clone(), guest, object: streams });
        }
        if let Some(answer) = &action.answer {
            let mut out = ctx.render(answer);
            lifecycle::eval::strip_nulls(&mut out);
            return Ok(Acted::Answer(out));
        }
        let dry_run = action::dry_run(&body);
        if dry_run && action.dry_run == DryRun::Validate {
            return Ok(Acted::Done(action.code.unwrap_or(200)));
        }
        let guard = Guard::Request { dry_run: dry_run && action.dry_run == DryRun::Write };
        let manager = action.manager.as_deref().unwrap_or(MANAGER);
        let recorder = match manager {
            MANAGER => self.recorder.clone(),
            m => {
                let component = self.program.managers.get(m).map_or(m, |c| c.component.as_str());
                Recorder::new(self.registry.clone(), m, component, "")
            }
        };
        let writer = Writer { registry: &self.registry, manager, recorder: &recorder };
        for step in &action.steps {
            // Its `when` does not hold, or its object is not there: nothing to do.
            let Some(planned) = write::plan(kind, res, &obj, step, &ctx) else { continue };
            // virt-api answers a failed `test` as a conflict, anything else as internal.
            writer.apply(&planned, guard).await.map_err(|e| match e {
                ApiError::PatchRejected => {
                    refusal(409, JSONPATCH_TEST_ERR, (res, target.name()), false)
                }
                ApiError::Internal(_) => e,
                other => ApiError::Internal(other.to_status().message.unwrap_or_default()),
            })?;
        }
        if action.guest.as_deref() == Some("reboot") && !dry_run {
            if let Some(guest) = self.guests.guest(res, &obj, &secrets) {
                Box::pin(self.power(&guest, Power::Reboot)).await?;
            }
        }
        Ok(Acted::Done(action.code.unwrap_or(200)))
    }

    /// The object of relation `rel` (the first, for a list) and its served kind.
    fn related_object(
        &self,
        kind: &Kind,
        rel: &str,
        ctx: &Ctx<'_>,
    ) -> Option<(&'static ResourceInfo, Value)> {
        let res = kind.related.get(rel).and_then(|r| served(&r.resource))?;
        let value = ctx.named.get(rel)?;
        let obj = match &**value {
            Value::Array(items) => items.first()?.clone(),
            Value::Null => return None,
            o => o.clone(),
        };
        Some((res, obj))
    }

    /// The kind a refusal names: the action's own, or that of the related object `about`
    /// (found by name: the same name).
    fn about<'a>(
        &self,
        kind: &Kind,
        res: &'static ResourceInfo,
        about: &Option<String>,
        name: &'a str,
    ) -> (&'static ResourceInfo, &'a str) {
        let related = about.as_ref().and_then(|a| kind.related.get(a));
        (related.and_then(|r| served(&r.resource)).unwrap_or(res), name)
    }
}

/// Generated names (`generateName` is the registry's) need no repeatability here.
fn rand_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM: ResourceInfo =
        ResourceInfo { group: "kubevirt.io", singular: "virtualmachine", ..ResourceInfo::EXAMPLE };

    fn status(e: &ApiError) -> Value {
        serde_json::to_value(e.to_status()).unwrap()
    }

    #[test]
    fn refusals_are_shaped_by_their_code_as_virt_api_shapes_them() {
        let about = (&VM, "vm1");
        let conflict = status(&refusal(409, "VM is already running", about, false));
        assert_eq!(
            conflict["message"],
            "Operation cannot be fulfilled on virtualmachine.kubevirt.io \"vm1\": VM is already running"
        );
        assert_eq!(conflict["reason"], "Conflict");
        assert_eq!(
            conflict["details"],
            serde_json::json!({"name": "vm1", "group": "kubevirt.io", "kind": "virtualmachine"})
        );
        let missing = status(&refusal(404, "", about, false));
        assert_eq!(missing["message"], "virtualmachine.kubevirt.io \"vm1\" not found");
        let forbidden = status(&refusal(403, "no", about, false));
        assert_eq!(forbidden["message"], "virtualmachine.kubevirt.io \"vm1\" is forbidden: no");
        let internal = status(&refusal(500, "underway", about, false));
        assert_eq!(internal["message"], "Internal error occurred: underway");
        assert_eq!(internal["reason"], "InternalError");
        // kube's NewBadRequest names no object.
        let bad = status(&refusal(400, "bad", about, false));
        assert_eq!(
            (bad["message"].as_str(), bad["reason"].as_str()),
            (Some("bad"), Some("BadRequest"))
        );
        assert!(bad.get("details").is_none(), "{bad}");
        // Plain text answers are 500s with the shaped message.
        let plain = refusal(409, "VMI is not running", about, true);
        assert_eq!(
            plain,
            ApiError::PlainText {
                code: 500,
                message: "Operation cannot be fulfilled on virtualmachine.kubevirt.io \"vm1\": VMI is not running".into()
            }
        );
    }
}
