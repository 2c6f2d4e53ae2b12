//! The definitions that name a kind: their GVKs and their `x-virt-resource`, checked.

use serde_json::Value;

use super::{KindDef, Lowering};
use crate::swagger::{self, SelectableField, VirtResource};

/// Most selectable fields a kind may declare (a CRD version's limit).
const MAX_SELECTABLE_FIELDS: usize = 8;

/// The fields of an event the recorder writes (kube's `EventRecorder`), and their types.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject.kind", "string"),
    ("involvedObject.namespace", "string"),
    ("involvedObject.name", "string"),
    ("involvedObject.uid", "string"),
    ("involvedObject.apiVersion", "string"),
    ("involvedObject.resourceVersion", "string"),
    ("reason", "string"),
    ("message", "string"),
    ("type", "string"),
    ("count", "integer"),
    ("firstTimestamp", "string"),
    ("lastTimestamp", "string"),
    ("source.component", "string"),
    ("source.host", "string"),
    ("reportingComponent", "string"),
    ("reportingInstance", "string"),
];

/// A selectable field's selector label: its `name`, else its path without the leading dot.
pub(super) fn selectable_name(f: &SelectableField) -> String {
    f.name.clone().unwrap_or_else(|| f.json_path.trim_start_matches('.').to_string())
}

impl<'d> Lowering<'d> {
    /// Every definition carrying a GVK, with its `x-virt-resource` parsed.
    pub(super) fn kind_definitions(&mut self) -> Vec<KindDef<'d>> {
        let mut defs: Vec<KindDef<'d>> = Vec::new();
        for (name, def) in &self.doc.definitions {
            let ctx = format!("definition {name}");
            let ext = def.get("x-virt-resource");
            let gvks = match def.get("x-kubernetes-group-version-kind") {
                None => {
                    if ext.is_some() {
                        self.problem(
                            &ctx,
                            "x-virt-resource without x-kubernetes-group-version-kind",
                        );
                    }
                    continue;
                }
                Some(v) => {
                    match serde_json::from_value::<Vec<swagger::GroupVersionKind>>(v.clone()) {
                        Ok(g) => g,
                        Err(e) => {
                            self.problem(&ctx, format!("bad x-kubernetes-group-version-kind: {e}"));
                            continue;
                        }
                    }
                }
            };
            if ext.is_some() && gvks.len() != 1 {
                self.problem(&ctx, "a kind with x-virt-resource must name exactly one GVK");
                continue;
            }
            let resource =
                ext.and_then(|v| match serde_json::from_value::<VirtResource>(v.clone()) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        self.problem(&ctx, format!("bad x-virt-resource: {e}"));
                        None
                    }
                });
            if let Some(r) = &resource {
                self.check_virt_resource(&ctx, r);
                // Built-in kinds (those taking strategic merge patches) select by as many
                // fields as kube's own strategies; the CRD limit holds for the rest.
                let builtin = r.strategic_merge_patch;
                self.check_selectable_fields(&ctx, def, &r.selectable_fields, builtin);
                if r.events {
                    self.check_event_fields(&ctx, def, r.namespaced);
                }
            }
            let data_rules = resource
                .as_ref()
                .and_then(|r| r.data_rules.as_ref())
                .map(|rules| self.data_rules(&ctx, def, rules));
            let update_rules = resource
                .as_ref()
                .map(|r| self.update_rules(&ctx, def, &r.update_rules))
                .unwrap_or_default();
            let default_class = resource
                .as_ref()
                .and_then(|r| r.default_class.as_ref())
                .map(|c| self.default_class(&ctx, def, c));
            for gvk in gvks {
                if let Some(other) = defs.iter().find(|d| {
                    (&d.group, &d.version, &d.kind) == (&gvk.group, &gvk.version, &gvk.kind)
                }) {
                    let msg = format!(
                        "GVK {}/{} {} is also claimed by {}",
                        gvk.group, gvk.version, gvk.kind, other.name
                    );
                    self.problem(&ctx, msg);
                    continue;
                }
                defs.push(KindDef {
                    name,
                    group: gvk.group,
                    version: gvk.version,
                    kind: gvk.kind,
                    resource: resource.clone(),
                    data_rules: data_rules.clone(),
                    update_rules: update_rules.clone(),
                    default_class: default_class.clone(),
                    has_resource_ext: ext.is_some(),
                });
            }
        }
        defs
    }

    fn check_virt_resource(&mut self, ctx: &str, r: &VirtResource) {
        let is_name = |s: &str| {
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        };
        if !is_name(&r.plural) {
            self.problem(
                ctx,
                format!("x-virt-resource.plural `{}` is not a lower-case name", r.plural),
            );
        }
        if let Some(s) = &r.singular {
            if !is_name(s) {
                self.problem(
                    ctx,
                    format!("x-virt-resource.singular `{s}` is not a lower-case name"),
                );
            }
        }
        for c in &r.printer_columns {
            if !["string", "integer", "number", "boolean", "date"].contains(&c.type_.as_str()) {
                self.problem(
                    ctx,
                    format!("printer column `{}` has unknown type `{}`", c.name, c.type_),
                );
            }
            if c.priority < 0 {
                self.problem(
                    ctx,
                    format!("printer column `{}`: priority must be non-negative", c.name),
                );
            }
            match (&c.cell, c.json_path.is_empty()) {
                (None, _) if !c.json_path.starts_with('.') => self.problem(
                    ctx,
                    format!("printer column `{}`: jsonPath must start with `.`", c.name),
                ),
                (None, _) => {}
                (Some(_), false) => self.problem(
                    ctx,
                    format!("printer column `{}`: give jsonPath or cell, not both", c.name),
                ),
                (Some(_), true) if c.description.is_empty() => self.problem(
                    ctx,
                    format!("printer column `{}`: a computed cell needs a description", c.name),
                ),
                (Some(cell), true) => {
                    if let Err(e) = crate::model::Cell::parse(cell) {
                        self.problem(ctx, format!("printer column `{}`: cell {e}", c.name));
                    }
                }
            }
        }
        if r.namespaces && r.namespaced {
            self.problem(ctx, "x-virt-resource.namespaces: the namespace kind is cluster-scoped");
        }
        if let Some(t) = &r.token_request {
            if t.field.is_empty() || t.field.split('.').any(str::is_empty) {
                self.problem(ctx, format!("tokenRequest.field `{}` is not a dotted path", t.field));
            }
        }
        if let Some(s) = &r.scale {
            // The CRD rules: simple JSON paths (no array notation) under the given roots.
            let paths = [
                ("specReplicasPath", Some(&s.spec_replicas_path), &["spec"][..]),
                ("statusReplicasPath", Some(&s.status_replicas_path), &["status"][..]),
                ("labelSelectorPath", s.label_selector_path.as_ref(), &["spec", "status"][..]),
            ];
            for (field, path, roots) in paths {
                let Some(path) = path else { continue };
                let segs: Vec<&str> = path.strip_prefix('.').unwrap_or("").split('.').collect();
                let simple = segs.len() >= 2
                    && roots.contains(&segs[0])
                    && segs.iter().all(|s| !s.is_empty() && !s.contains(['[', ']', '*', ' ']));
                if !simple {
                    let under: Vec<String> = roots.iter().map(|r| format!(".{r}")).collect();
                    let msg = format!(
                        "scale.{field} `{path}` is not a simple JSON path under {}",
                        under.join(" or ")
                    );
                    self.problem(ctx, msg);
                }
            }
        }
    }

    /// The CRD rules for `selectableFields`: simple paths outside `metadata` (whose name and
    /// namespace are always selectable), to a string, integer or boolean the schema declares,
    /// with labels that are unique; at most eight unless the kind is built in.
    fn check_selectable_fields(
        &mut self,
        ctx: &str,
        def: &Value,
        fields: &[SelectableField],
        builtin: bool,
    ) {
        if fields.len() > MAX_SELECTABLE_FIELDS && !builtin {
            let msg =
                format!("at most {MAX_SELECTABLE_FIELDS} selectableFields, found {}", fields.len());
            self.problem(ctx, msg);
        }
        let mut seen = std::collections::HashSet::new();
        for f in fields {
            let path = &f.json_path;
            let segs: Vec<&str> = path.strip_prefix('.').unwrap_or("").split('.').collect();
            let simple = path.starts_with('.')
                && segs.iter().all(|s| !s.is_empty() && !s.contains(['[', ']', '*', ' ', '@']));
            if !simple || segs[0] == "metadata" {
                let msg = format!(
                    "selectableFields: `{path}` is not a simple JSON path outside .metadata"
                );
                self.problem(ctx, msg);
                continue;
            }
            let name = selectable_name(f);
            if name.is_empty() || name.starts_with("metadata.") || !seen.insert(name.clone()) {
                self.problem(
                    ctx,
                    format!("selectableFields: label `{name}` is repeated or reserved"),
                );
            }
            match self.schema_type_at(def, &segs) {
                Some("string" | "integer" | "boolean") => {}
                Some(other) => self.problem(
                    ctx,
                    format!("selectableFields: `{path}` is of type {other}; only string, integer and boolean fields are selectable"),
                ),
                None => self.problem(
                    ctx,
                    format!("selectableFields: `{path}` is not declared in the schema"),
                ),
            }
        }
    }

    /// The kind marked `events` holds what the server's event recorder writes, as kube's
    /// core/v1 Event: namespaced (an event lives beside its object), with these fields.
    fn check_event_fields(&mut self, ctx: &str, def: &Value, namespaced: bool) {
        if !namespaced {
            self.problem(ctx, "x-virt-resource.events: the events kind is namespaced");
        }
        for (path, want) in EVENT_FIELDS {
            let segs: Vec<&str> = path.split('.').collect();
            match self.schema_type_at(def, &segs) {
                Some(t) if t == *want => {}
                found => self.problem(
                    ctx,
                    format!(
                        "x-virt-resource.events: `.{path}` must be declared of type {want}, found {}",
                        found.unwrap_or("nothing")
                    ),
                ),
            }
        }
    }

    /// What a selectable field at `json_path` reads as where an object lacks it: a built-in
    /// kind's boolean is its Go zero value `false` (kube's `spec.unschedulable=false` selects an
    /// uncordoned node), anything else "".
    pub(super) fn missing_text(&self, def: &str, r: &VirtResource, json_path: &str) -> String {
        let segs: Vec<&str> = json_path.trim_start_matches('.').split('.').collect();
        let schema = self.doc.definitions.get(def);
        let ty = schema.and_then(|s| self.schema_type_at(s, &segs));
        match (r.strategic_merge_patch, ty) {
            (true, Some("boolean")) => "false".into(),
            _ => String::new(),
        }
    }

    /// The `type` the schema gives the field at `segs` below `schema`, following `$ref`s into
    /// the definitions.
    fn schema_type_at<'a>(&'a self, schema: &'a Value, segs: &[&str]) -> Option<&'a str> {
        self.schema_at(schema, segs)?.get("type")?.as_str()
    }

    /// The schema of the field at `segs` below `schema`, past its `$ref`s (and a one-element
    /// `allOf`); `None` where a reference leads nowhere.
    pub(super) fn schema_at<'a>(
        &'a self,
        mut schema: &'a Value,
        segs: &[&str],
    ) -> Option<&'a Value> {
        let doc = self.doc;
        let resolve = |s: &'a Value| openapi_ref::resolve(|name| doc.definitions.get(name), s);
        for seg in segs {
            schema = resolve(schema)?.get("properties")?.get(*seg)?;
        }
        resolve(schema)
    }
}
