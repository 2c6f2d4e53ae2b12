//! The routes: one per document path, its drafts resolved against the groups and resources, and
//! the discovery paths every group and version needs.

use std::collections::{HashMap, HashSet};

use super::{DraftHandler, DraftKind, KindDef, Lowering, OpDraft, RouteDraft};
use crate::model::paths::parse_resource_path;
use crate::model::{Group, GroupVersion, Handler, Operation, OperationKind, Route};

impl<'d> Lowering<'d> {
    /// One path serves one kind in one version, or only non-resource handlers.
    pub(super) fn check_route_mix(&mut self, path: &str, ops: &[OpDraft], defs: &[KindDef<'d>]) {
        let mut kinds = Vec::new();
        let mut handlers = false;
        for op in ops {
            match &op.kind {
                DraftKind::Resource { def, .. } | DraftKind::Action { def, .. } => {
                    if !kinds.contains(def) {
                        kinds.push(*def);
                    }
                }
                DraftKind::Handler(_) => handlers = true,
            }
        }
        if handlers && !kinds.is_empty() {
            self.problem(
                &format!("path {path}"),
                "mixes resource operations and x-virt-handler operations",
            );
        }
        if kinds.len() > 1 {
            let names: Vec<_> = kinds.iter().map(|&d| defs[d].name).collect();
            self.problem(
                &format!("path {path}"),
                format!("serves several kinds: {}", names.join(", ")),
            );
        }
    }

    pub(super) fn routes(
        &mut self,
        drafts: Vec<RouteDraft<'d>>,
        groups: &mut [Group],
        def_to_resource: &HashMap<usize, usize>,
    ) -> Vec<Route> {
        let mut routes = Vec::new();
        let mut group_paths = vec![false; groups.len()];
        let mut version_paths: HashSet<(usize, String)> = HashSet::new();
        for draft in drafts {
            let served_at = parse_resource_path(draft.path).and_then(|rp| {
                let group = groups.iter().position(|g| g.name == rp.group)?;
                Some(GroupVersion { group, version: rp.version.to_string() })
            });
            let mut ops = Vec::new();
            let mut resource = None;
            let mut discovery_root = false;
            for op in draft.ops {
                let kind = match op.kind {
                    DraftKind::Resource { action, def, namespace, name, subresource } => {
                        let Some(&r) = def_to_resource.get(&def) else { continue };
                        resource = Some(r);
                        OperationKind::Resource {
                            action,
                            resource: r,
                            namespace,
                            name,
                            subresource,
                        }
                    }
                    DraftKind::Action { def, name, read, named, params } => {
                        let Some(&r) = def_to_resource.get(&def) else { continue };
                        resource = Some(r);
                        OperationKind::Action { resource: r, name, read, named, params }
                    }
                    DraftKind::Handler(DraftHandler::Plain(h)) => {
                        discovery_root |= matches!(h, Handler::Api | Handler::Apis);
                        OperationKind::Handler(h)
                    }
                    DraftKind::Handler(DraftHandler::ApiGroup { group }) => {
                        let Some(g) = groups.iter().position(|x| x.name == group) else {
                            self.problem(
                                &op.ctx,
                                format!("group `{group}` is not in x-virt-api-groups"),
                            );
                            continue;
                        };
                        group_paths[g] = true;
                        OperationKind::Handler(Handler::ApiGroup { group: g })
                    }
                    DraftKind::Handler(DraftHandler::ApiResources { group, version, listed }) => {
                        let Some(g) = groups.iter().position(|x| x.name == group) else {
                            self.problem(
                                &op.ctx,
                                format!("group `{group}` is not in x-virt-api-groups"),
                            );
                            continue;
                        };
                        if !groups[g].versions.contains(&version) {
                            let msg =
                                format!("no resource path serves version `{version}` of {group}");
                            self.problem(&op.ctx, msg);
                            continue;
                        }
                        version_paths.insert((g, version.clone()));
                        if !listed.is_empty() {
                            groups[g].listed.push((version.clone(), listed));
                        }
                        OperationKind::Handler(Handler::ApiResources { group: g, version })
                    }
                };
                ops.push(Operation {
                    method: op.method,
                    operation_id: op.operation_id,
                    fn_name: op.fn_name,
                    kind,
                });
            }
            if ops.is_empty() {
                // Nothing to serve (every operation failed, or the path item had none).
                continue;
            }
            let path = draft.path.to_string();
            let mut patterns = vec![path.clone()];
            if path.len() > 1 && path.ends_with('/') {
                patterns.push(path.trim_end_matches('/').to_string());
            } else if discovery_root && !path.ends_with('/') {
                // kube serves the discovery roots under both spellings.
                patterns.push(format!("{path}/"));
            }
            let served = resource.and(served_at);
            routes.push(Route {
                path,
                patterns,
                params: draft.params,
                resource,
                served,
                operations: ops,
            });
        }
        for (g, group) in groups.iter().enumerate() {
            // The core group has no group document: `/api` lists its versions.
            if !group_paths[g] && !group.name.is_empty() {
                self.problem(
                    &format!("group {}", group.name),
                    "no path has x-virt-handler `apiGroup` for it",
                );
            }
            for v in &group.versions {
                if !version_paths.contains(&(g, v.clone())) {
                    let msg = format!("no path has x-virt-handler `apiResources` for version {v}");
                    self.problem(&format!("group {}", group.name), msg);
                }
            }
        }
        let mut seen: HashMap<&str, &str> = HashMap::new();
        let mut clashes = Vec::new();
        for r in &routes {
            for p in &r.patterns {
                if let Some(first) = seen.insert(p, &r.path) {
                    clashes.push(format!(
                        "path {}: is also registered as `{p}` by path {first}",
                        r.path
                    ));
                }
            }
        }
        self.problems.extend(clashes);
        routes
    }
}
