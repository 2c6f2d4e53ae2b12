//! Checks lifecycles against the OpenAPI document: kinds exist, every path read or written is
//! declared in the schema of the object it reads (stopping where a schema preserves unknown
//! fields or is a map), every function exists with its arity, every `$name` is a related object
//! or a value in scope (the kind's `let`s, a stage's or an action's, `$body`), managers
//! are declared, `of` names a related object, `caCert()` is called only where the simulated
//! runtime answers it (a stage's lets and steps). Every problem is reported, not the first.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::eval::{self, Element, Node, Path, Pred, Template};
use crate::expr::{self, Expr, Seg, FUNCTIONS};
use crate::{By, Kind, Let, Lifecycles, ResourceRef, Step, Write};

/// The kinds the server stores: group, kind and the version it stores them in, from the model
/// the server itself is generated from (build.rs: codegen's; at start: the served kinds).
pub type Stored = [(String, String, String)];

/// The document's kinds: `(group, kind)` → the definition of its storage version.
struct Schemas<'a> {
    defs: &'a serde_json::Map<String, Value>,
    kinds: BTreeMap<(String, String), (String, String)>,
}

impl<'a> Schemas<'a> {
    fn new(doc: &'a Value, stored: &Stored) -> Result<Schemas<'a>, String> {
        let defs = doc
            .get("definitions")
            .and_then(Value::as_object)
            .ok_or("the document has no definitions")?;
        let mut kinds: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
        for (name, d) in defs.iter().filter(|(_, d)| d.get("x-virt-resource").is_some()) {
            let gvks = d.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
            for gvk in gvks.into_iter().flatten() {
                let f = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let (group, version, kind) = (f("group"), f("version"), f("kind"));
                if stored.iter().any(|(g, k, v)| (g, k, v) == (&group, &kind, &version)) {
                    kinds.insert((group, kind), (version, name.clone()));
                }
            }
        }
        Ok(Schemas { defs, kinds })
    }

    fn kind(&self, r: &ResourceRef) -> Option<(&str, &'a Value)> {
        let (_, name) = self.kinds.get(&(r.group.clone(), r.kind.clone()))?;
        Some((name.as_str(), self.defs.get(name)?))
    }

    fn resolve(&self, s: &'a Value) -> &'a Value {
        // Where a reference leads nowhere, the schema itself: what it declares beside its `$ref`
        // (usually nothing, so anything goes below it).
        openapi_ref::resolve(|name| self.defs.get(name), s).unwrap_or(s)
    }

    /// The schema of `key` inside `s`: `Ok(None)` when anything goes there (unknown fields
    /// preserved, or no schema given).
    fn field(&self, s: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
        let s = self.resolve(s);
        if let Some(p) = s.get("properties").and_then(|p| p.get(key)) {
            return Ok(Some(p));
        }
        match s.get("additionalProperties") {
            Some(Value::Object(a)) if !a.is_empty() => return Ok(s.get("additionalProperties")),
            Some(Value::Bool(true)) | Some(Value::Object(_)) => return Ok(None),
            _ => {}
        }
        let open = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            || (s.get("properties").is_none()
                && s.get("items").is_none()
                && s.get("type").is_none());
        if open {
            Ok(None)
        } else {
            Err(format!("field {key:?} is not declared"))
        }
    }

    fn items(&self, s: &'a Value) -> Result<Option<&'a Value>, String> {
        let s = self.resolve(s);
        match s.get("items") {
            Some(i) => Ok(Some(i)),
            None if s.get("type").and_then(Value::as_str) == Some("array") => Ok(None),
            None if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
                || s.get("type").is_none() =>
            {
                Ok(None)
            }
            None => Err("is not a list".into()),
        }
    }

    /// Checks that `segs` are declared from `s`.
    fn path(&self, s: &'a Value, segs: &[Seg]) -> Result<(), String> {
        let mut cur = Some(s);
        let mut at = String::new();
        for seg in segs {
            let Some(s) = cur else { return Ok(()) };
            let step = match seg {
                Seg::Key(k) => {
                    at.push('.');
                    at.push_str(k);
                    self.field(s, k)
                }
                Seg::Index(_) => self.items(s),
                Seg::Filter(f, _) => self.items(s).and_then(|items| match items {
                    Some(i) => self.field(i, f).map(|_| Some(i)),
                    None => Ok(None),
                }),
            };
            cur = step.map_err(|e| format!("{} {e}", if at.is_empty() { "." } else { &at }))?;
        }
        Ok(())
    }
}

/// What an expression may read in one place.
struct Scope<'s, 'a> {
    schemas: &'s Schemas<'a>,
    lc: &'s Lifecycles,
    kind: &'s Kind,
    /// The schema `.` reads.
    this: &'a Value,
    /// The stage's or action's values in scope (the kind's are always).
    vars: &'s [String],
    /// Whether `caCert()` may be called: a stage's `let`s and steps, which the engine renders
    /// once per firing (elsewhere it would make a key per evaluation, or answer null).
    certs: bool,
    at: String,
}

impl Scope<'_, '_> {
    fn expr(&self, e: &Expr, errors: &mut Vec<String>) {
        expr::visit(e, &mut |e| match e {
            Expr::Path { root: None, segs } => {
                if let Err(err) = self.schemas.path(self.this, segs) {
                    errors.push(format!("{}: {err}", self.at));
                }
            }
            Expr::Path { root: Some(name), segs } if name == expr::SELF => {
                if let Some((_, s)) = self.schemas.kind(&self.kind.resource) {
                    if let Err(err) = self.schemas.path(s, segs) {
                        errors.push(format!("{}: ${name}{err}", self.at));
                    }
                }
            }
            Expr::Path { root: Some(name), segs } => {
                if let Some(r) = self.kind.related.get(name) {
                    // A list of owned objects: its elements have the kind's schema.
                    let segs = match (&r.by, segs.first()) {
                        (by, Some(Seg::Index(_) | Seg::Filter(..))) if by.is_list() => &segs[1..],
                        (by, Some(Seg::Key(_))) if by.is_list() => {
                            errors.push(format!("{}: ${name} is a list", self.at));
                            return;
                        }
                        _ => &segs[..],
                    };
                    if let Some((_, s)) = self.schemas.kind(&r.resource) {
                        if let Err(err) = self.schemas.path(s, segs) {
                            errors.push(format!("{}: ${name}{err}", self.at));
                        }
                    }
                } else if !self.vars.contains(name)
                    && !self.kind.lets.iter().any(|l| &l.name == name)
                {
                    errors.push(format!(
                        "{}: ${name} is neither a related object nor a variable",
                        self.at
                    ));
                }
            }
            Expr::Call(f, args) => match FUNCTIONS.iter().find(|(n, ..)| n == f) {
                None => errors.push(format!("{}: no function {f}()", self.at)),
                Some((_, min, max, _)) if args.len() < *min || args.len() > *max => {
                    errors.push(format!("{}: {f}() takes {min} to {max} arguments", self.at))
                }
                Some(_) if f == expr::CA_CERT && !self.certs => errors.push(format!(
                    "{}: {f}() makes a key pair: only a stage's lets and steps may call it",
                    self.at
                )),
                Some(_) => {}
            },
            Expr::Lit(_) => {}
        });
        let _ = self.lc;
    }

    /// A `let`: a value or cases (one of them), each checked.
    fn binding(&self, l: &Let, errors: &mut Vec<String>) {
        match (&l.value, l.cases.is_empty()) {
            (Some(v), true) => self.template(v, None, errors),
            (None, false) => {
                for (i, c) in l.cases.iter().enumerate() {
                    let scope = Scope { at: format!("{}, case {}", self.at, i + 1), ..*self };
                    if let Some(w) = &c.when {
                        scope.pred(w, errors);
                    }
                    scope.template(&c.value, None, errors);
                }
            }
            _ => errors.push(format!("{}: either a value or cases", self.at)),
        }
    }

    /// A compiled expression: its parse error, or its reads.
    fn path(&self, p: &Path, errors: &mut Vec<String>) {
        match &p.error {
            Some(e) => errors.push(format!("{}: {e}", self.at)),
            None => self.expr(&p.expr, errors),
        }
    }

    /// A template string (a message): its expressions.
    fn text(&self, t: &Template, errors: &mut Vec<String>) {
        self.node(&t.node, None, "", errors);
    }

    /// A template's reads and, when `written` is a schema, its keys against that schema.
    fn template(&self, t: &Template, written: Option<&Value>, errors: &mut Vec<String>) {
        self.node(&t.node, written, "", errors);
    }

    fn node<'a>(&self, n: &Node, written: Option<&'a Value>, where_: &str, errors: &mut Vec<String>)
    where
        Self: 'a,
    {
        match n {
            Node::Lit(_) => {}
            Node::Expr(_) | Node::Text(_) => {
                n.paths().into_iter().for_each(|p| self.path(p, errors))
            }
            Node::Bad { error, .. } => errors.push(format!("{}: {error}", self.at)),
            Node::List(items) => {
                let item_schema = match written.map(|s| self.schemas.items(s)) {
                    Some(Ok(i)) => i,
                    Some(Err(e)) => {
                        errors.push(format!("{}: {where_} {e}", self.at));
                        None
                    }
                    None => None,
                };
                for i in items {
                    match i {
                        Element::Item(n) => self.node(n, item_schema, where_, errors),
                        Element::Splice(p) => self.path(p, errors),
                        Element::Each(each) => {
                            self.node(&each.list, None, where_, errors);
                            for k in &each.extra_keys {
                                errors.push(format!(
                                    "{}: {where_} `...each` takes no {k:?}",
                                    self.at
                                ));
                            }
                            let mut vars = self.vars.to_vec();
                            vars.push(each.name.clone());
                            let inner = Scope { vars: &vars, at: self.at.clone(), ..*self };
                            match (&each.filter, &each.filter_error) {
                                (_, Some(e)) => {
                                    errors.push(format!("{}: {where_} `if`: {e}", self.at))
                                }
                                (Some(p), None) => inner.pred(p, errors),
                                (None, None) => {}
                            }
                            inner.node(&each.value, item_schema, where_, errors);
                        }
                    }
                }
            }
            Node::Object { spread, members } => {
                if let Some(spread) = spread {
                    self.node(spread, None, where_, errors);
                }
                for (k, v) in members {
                    let (key, field) = match k {
                        Node::Lit(Value::String(k)) => {
                            let field = match written {
                                Some(s) => match self.schemas.field(s, k) {
                                    Ok(f) => f,
                                    Err(e) => {
                                        errors.push(format!("{}: {where_} {e}", self.at));
                                        None
                                    }
                                },
                                None => None,
                            };
                            (k.clone(), field)
                        }
                        computed => {
                            self.node(computed, None, where_, errors);
                            (String::from("{{…}}"), None)
                        }
                    };
                    self.node(v, field, &format!("{where_}.{key}"), errors);
                }
            }
        }
    }

    fn pred(&self, p: &Pred, errors: &mut Vec<String>) {
        eval::walk(p, None, &mut |p, related| {
            // Inside `related.where`, `.` is the related object.
            let this = match related {
                None => Some(self.this),
                Some(name) => self
                    .kind
                    .related
                    .get(name)
                    .and_then(|r| self.schemas.kind(&r.resource))
                    .map(|(_, s)| s),
            };
            let scope = Scope { this: this.unwrap_or(self.this), at: self.at.clone(), ..*self };
            match p {
                Pred::Equals { path, value } => {
                    scope.path(path, errors);
                    scope.template(value, None, errors);
                }
                Pred::LessThan { path, value } | Pred::GreaterThan { path, value } => {
                    scope.path(path, errors);
                    scope.template(value, None, errors);
                }
                Pred::In { path, values } | Pred::NotIn { path, values } => {
                    scope.path(path, errors);
                    values.iter().for_each(|v| scope.template(v, None, errors));
                }
                Pred::Exists(path) | Pred::DoesNotExist(path) => scope.path(path, errors),
                Pred::Condition(c) => scope.path(c.path(), errors),
                Pred::Related(r) if !self.kind.related.contains_key(&r.name) => {
                    errors.push(format!("{}: no related object {:?}", self.at, r.name))
                }
                _ => {}
            }
        });
    }
}

fn scope<'s, 'a>(
    schemas: &'s Schemas<'a>,
    lc: &'s Lifecycles,
    kind: &'s Kind,
    this: &'a Value,
    vars: &'s [String],
    at: String,
) -> Scope<'s, 'a> {
    Scope { schemas, lc, kind, this, vars, certs: false, at }
}

/// What a `let` of `kind` named `name` would hide (`kind_level`: one of the kind's own).
fn clash(kind: &Kind, name: &str, kind_level: bool) -> Option<&'static str> {
    if kind.related.contains_key(name) {
        Some("the name of a related object")
    } else if name == expr::SELF {
        Some("a reserved name")
    } else if !kind_level && kind.lets.iter().any(|l| l.name == name) {
        Some("the name of one of the kind's values")
    } else {
        None
    }
}

/// A kind's actions: predicates, messages and templates read declared paths of the object,
/// its related objects or `$body`; writes go to declared fields.
fn check_actions<'a>(
    schemas: &Schemas<'a>,
    lc: &Lifecycles,
    kind: &Kind,
    this: &'a Value,
    errors: &mut Vec<String>,
) {
    let k = &kind.resource;
    for (name, action) in &kind.actions {
        let at = format!("kind {k}, action {name}");
        let vars = check_lets(schemas, lc, kind, this, (&at, &action.lets), errors);
        if action.code.is_some_and(|c| c != 200 && c != 202) {
            errors.push(format!("{at}: code is 200 or 202"));
        }
        if action.answer.is_some() && (action.code.is_some() || !action.steps.is_empty()) {
            errors.push(format!("{at}: a read (answer) has neither code nor steps"));
        }
        if action.stream.is_some() && (action.answer.is_some() || !action.steps.is_empty()) {
            errors.push(format!("{at}: a stream has neither answer nor steps"));
        }
        if let Some(r) = action.stream_of.as_ref().filter(|r| !kind.related.contains_key(*r)) {
            errors.push(format!("{at}: streamOf names no related object {r:?}"));
        }
        if let Some(m) = action.manager.as_ref().filter(|m| !lc.managers.contains_key(*m)) {
            errors.push(format!("{at}: manager {m} is not declared"));
        }
        for (i, c) in action.checks.iter().enumerate() {
            let scope = scope(schemas, lc, kind, this, &vars, format!("{at}, check {}", i + 1));
            scope.pred(&c.when, errors);
            scope.text(&c.message, errors);
            if c.about.as_ref().is_some_and(|a| !kind.related.contains_key(a)) {
                errors.push(format!("{at}, check {}: no related object {:?}", i + 1, c.about));
            }
            if !(400..600).contains(&c.code) {
                errors.push(format!("{at}, check {}: code {} is not an error", i + 1, c.code));
            }
        }
        if let Some(answer) = &action.answer {
            scope(schemas, lc, kind, this, &vars, format!("{at}, answer"))
                .template(answer, None, errors);
        }
        check_steps(schemas, lc, kind, this, (&at, &action.steps, &vars), errors);
    }
}

/// The `let`s of an action or a webhook at `at`, in order, each read with `$body`, the values
/// before it and the kind's; answers those names.
fn check_lets<'a>(
    schemas: &Schemas<'a>,
    lc: &Lifecycles,
    kind: &Kind,
    this: &'a Value,
    (at, lets): (&str, &[Let]),
    errors: &mut Vec<String>,
) -> Vec<String> {
    // `$guest`: what the simulated guest reports (its users, filesystems), null without one.
    let mut vars = vec!["body".to_string(), "guest".to_string()];
    for l in lets {
        let at = format!("{at}, let {}", l.name);
        scope(schemas, lc, kind, this, &vars, at.clone()).binding(l, errors);
        if let Some(clash) = clash(kind, &l.name, false) {
            errors.push(format!("{at}: {clash}"));
        }
        vars.push(l.name.clone());
    }
    vars
}

/// The steps of an action or a webhook at `at`, reading `vars`.
fn check_steps<'a>(
    schemas: &Schemas<'a>,
    lc: &Lifecycles,
    kind: &Kind,
    this: &'a Value,
    (at, steps, vars): (&str, &[Step], &[String]),
    errors: &mut Vec<String>,
) {
    for (i, step) in steps.iter().enumerate() {
        let at = format!("{at}, step {} ({})", i + 1, step.write.verb());
        check_step(&scope(schemas, lc, kind, this, vars, at), step, errors);
    }
}

/// A kind's validating webhooks on subresource creates: as an action's checks and steps,
/// with `$body` the object created; each check admits or denies, a denial is an error code.
fn check_admission<'a>(
    schemas: &Schemas<'a>,
    lc: &Lifecycles,
    kind: &Kind,
    this: &'a Value,
    errors: &mut Vec<String>,
) {
    let k = &kind.resource;
    for (sub, admit) in &kind.admission {
        let at = format!("kind {k}, admission {sub}");
        let vars = check_lets(schemas, lc, kind, this, (&at, &admit.lets), errors);
        let denial = |d: &crate::Denial, at: String, vars: &[String], errors: &mut Vec<String>| {
            scope(schemas, lc, kind, this, vars, at.clone()).text(&d.message, errors);
            if !(400..600).contains(&d.code) {
                errors.push(format!("{at}: code {} is not an error", d.code));
            }
        };
        for (i, c) in admit.checks.iter().enumerate() {
            let at = format!("{at}, check {}", i + 1);
            scope(schemas, lc, kind, this, &vars, at.clone()).pred(&c.when, errors);
            match (&c.deny, c.allow) {
                (Some(d), false) => denial(d, at, &vars, errors),
                (None, true) => {}
                _ => errors.push(format!("{at}: either allow or deny")),
            }
        }
        check_steps(schemas, lc, kind, this, (&at, &admit.steps, &vars), errors);
        if let Some(d) = &admit.deny {
            denial(d, format!("{at}, deny"), &vars, errors);
        }
        if let Some(d) = &admit.on_error {
            let mut vars = vars.clone();
            vars.push("error".into());
            denial(d, format!("{at}, onError"), &vars, errors);
        }
    }
}

/// One step of a stage or an action, in `scope` (whose `.` is the object): its guard, its
/// target, what it writes.
fn check_step(scope: &Scope<'_, '_>, step: &Step, errors: &mut Vec<String>) {
    let (schemas, kind, at) = (scope.schemas, scope.kind, &scope.at);
    if let Some(w) = &step.when {
        scope.pred(w, errors);
    }
    let mut target = scope.this;
    if let Some(of) = step.write.of() {
        match kind.related.get(of).map(|r| schemas.kind(&r.resource)) {
            Some(Some((_, s))) => target = s,
            Some(None) => {}
            None => errors.push(format!("{at}: no related object {of:?}")),
        }
    }
    match step.write.subresource() {
        None | Some("") | Some("status") => {}
        Some(other) => errors.push(format!("{at}: no subresource {other:?} (only status)")),
    }
    match &step.write {
        Write::Patch { subresource, merge, .. } => {
            let only_status =
                merge.source.as_object().is_some_and(|m| m.keys().all(|k| k == "status"));
            if subresource.as_deref() == Some("status") && !only_status {
                errors.push(format!("{at}: a status patch may only hold status"));
            }
            scope.template(merge, Some(target), errors);
        }
        Write::JsonPatch { ops, .. } => {
            scope.template(ops, None, errors);
            for op in ops.source.as_array().into_iter().flatten() {
                let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                let segs: Vec<Seg> = path
                    .split('/')
                    .skip(1)
                    .map(|p| match p.parse() {
                        Ok(i) => Seg::Index(i),
                        Err(_) if p == "-" => Seg::Index(0),
                        Err(_) => Seg::Key(p.replace("~1", "/").replace("~0", "~")),
                    })
                    .collect();
                if let Err(e) = schemas.path(target, &segs) {
                    errors.push(format!("{at}: {path}: {e}"));
                }
            }
        }
        Write::Finalizers { add, remove, .. } => {
            if add.is_empty() && remove.is_empty() {
                errors.push(format!("{at}: neither add nor remove"));
            }
        }
        Write::Create { resource, template } => match schemas.kind(resource) {
            Some((_, s)) => scope.template(template, Some(s), errors),
            None => errors.push(format!("{at}: the document serves no kind {resource}")),
        },
        Write::Event { type_, message, reason, .. } => {
            if type_ != "Normal" && type_ != "Warning" {
                errors.push(format!("{at}: type {type_:?} is neither Normal nor Warning"));
            }
            if reason.is_empty() {
                errors.push(format!("{at}: no reason"));
            }
            scope.text(message, errors);
        }
        Write::Delete { grace_period_seconds, .. } => {
            if grace_period_seconds.is_some_and(|g| g < 0) {
                errors.push(format!("{at}: gracePeriodSeconds must be 0 or more"));
            }
        }
        Write::Call { procedure, with, .. } => {
            scope.template(with, None, errors);
            let given: Vec<&str> = match with.source.as_object() {
                Some(m) => m.keys().map(String::as_str).collect(),
                None => vec![],
            };
            let want = procedure.args();
            if given.len() != want.len() || !want.iter().all(|a| given.contains(a)) {
                errors.push(format!("{at}: {procedure:?} takes with: {{{}}}", want.join(", ")));
            }
        }
    }
}

/// Checks `lc` against the document, reading each kind's schema in the version `stored` says
/// the server stores; every problem, one per line.
pub fn check(doc: &Value, stored: &Stored, lc: &Lifecycles) -> Result<(), Vec<String>> {
    let schemas = Schemas::new(doc, stored).map_err(|e| vec![e])?;
    let mut errors = Vec::new();
    let mut seen: Vec<&ResourceRef> = Vec::new();
    for kind in &lc.kinds {
        let k = &kind.resource;
        if seen.contains(&k) {
            errors.push(format!("kind {k}: listed twice"));
        }
        seen.push(k);
        let Some((_, this)) = schemas.kind(k) else {
            errors.push(format!("kind {k}: the document serves no such kind"));
            continue;
        };
        for (name, r) in &kind.related {
            if schemas.kind(&r.resource).is_none() {
                errors.push(format!(
                    "kind {k}, related {name}: the document serves no kind {}",
                    r.resource
                ));
            }
            if FUNCTIONS.iter().any(|(f, ..)| f == name) || name == expr::SELF {
                errors.push(format!("kind {k}, related {name}: a reserved name"));
            }
            let at = format!("kind {k}, related {name}");
            if let By::Field(path) | By::Names(path) = &r.by {
                scope(&schemas, lc, kind, this, &[], at.clone()).path(path, &mut errors);
            }
            // Read in the related objects.
            if let (By::Referencing(path), Some((_, s))) = (&r.by, schemas.kind(&r.resource)) {
                scope(&schemas, lc, kind, s, &[], at.clone()).path(path, &mut errors);
            }
            if let Some(ns) = &r.namespace {
                scope(&schemas, lc, kind, this, &[], format!("{at}, namespace"))
                    .path(ns, &mut errors);
            }
            match (&r.where_, &r.by, schemas.kind(&r.resource)) {
                (Some(_), by, _) if !by.is_list() => errors
                    .push(format!("{at}: `where` filters only lists (owned, referencing, names)")),
                (Some(w), _, Some((_, s))) => {
                    scope(&schemas, lc, kind, s, &[], at).pred(w, &mut errors)
                }
                _ => {}
            }
        }
        for (i, l) in kind.lets.iter().enumerate() {
            let at = format!("kind {k}, let {}", l.name);
            scope(&schemas, lc, kind, this, &[], at.clone()).binding(l, &mut errors);
            if let Some(clash) = clash(kind, &l.name, true) {
                errors.push(format!("{at}: {clash}"));
            }
            if kind.lets[..i].iter().any(|o| o.name == l.name) {
                errors.push(format!("{at}: a second value of that name"));
            }
        }
        let mut names: Vec<&str> = Vec::new();
        for stage in &kind.stages {
            let at = format!("kind {k}, stage {}", stage.name);
            if names.contains(&stage.name.as_str()) {
                errors.push(format!("{at}: a second stage of that name"));
            }
            names.push(&stage.name);
            if !lc.managers.contains_key(&stage.manager) {
                errors.push(format!(
                    "{at}: manager {:?} is not declared under managers",
                    stage.manager
                ));
            }
            for other in &stage.supersedes {
                if !kind.stages.iter().any(|s| &s.name == other && s.name != stage.name) {
                    errors.push(format!("{at}: supersedes {other:?}, no other stage of the kind"));
                }
            }
            let mut vars: Vec<String> = Vec::new();
            scope(&schemas, lc, kind, this, &vars, format!("{at}, selector"))
                .pred(&stage.selector, &mut errors);
            if let Some(until) = &stage.delay.until {
                scope(&schemas, lc, kind, this, &vars, format!("{at}, delay"))
                    .path(until, &mut errors);
            }
            for l in &stage.lets {
                let at = format!("{at}, let {}", l.name);
                if let Some(clash) = clash(kind, &l.name, false) {
                    errors.push(format!("{at}: {clash}"));
                }
                let scope =
                    Scope { certs: true, ..scope(&schemas, lc, kind, this, &vars, at.clone()) };
                scope.binding(l, &mut errors);
                vars.push(l.name.clone());
            }
            for (i, step) in stage.steps.iter().enumerate() {
                let at = format!("{at}, step {} ({})", i + 1, step.write.verb());
                let scope = Scope { certs: true, ..scope(&schemas, lc, kind, this, &vars, at) };
                check_step(&scope, step, &mut errors);
            }
        }
        check_actions(&schemas, lc, kind, this, &mut errors);
        for (i, m) in kind.mutations.iter().enumerate() {
            let at = format!("kind {}, mutation {}", kind.resource, i + 1);
            let scope = scope(&schemas, lc, kind, this, &[], at.clone());
            if let Some(w) = &m.when {
                scope.pred(w, &mut errors);
            }
            if let Some(merge) = &m.merge {
                scope.template(merge, Some(this), &mut errors);
            }
            if m.merge.is_none() && m.finalizers.is_empty() {
                errors.push(format!("{at}: neither merge nor finalizers"));
            }
        }
        check_admission(&schemas, lc, kind, this, &mut errors);
        for (i, w) in kind.warnings.iter().enumerate() {
            let at = format!("kind {}, warning {}", kind.resource, i + 1);
            let scope = scope(&schemas, lc, kind, this, &[], at);
            scope.pred(&w.when, &mut errors);
            scope.text(&w.message, &mut errors);
        }
        for log in &kind.logs {
            for (i, l) in log.lines.iter().enumerate() {
                let at = format!("kind {}, log {}, line {}", kind.resource, log.container, i + 1);
                let scope = scope(&schemas, lc, kind, this, &[], at);
                scope.pred(&l.when, &mut errors);
                scope.text(&l.at, &mut errors);
                scope.template(&l.line, None, &mut errors);
            }
        }
    }
    let node_vars: Vec<String> = crate::NODE_VARS.iter().map(|v| v.to_string()).collect();
    let per_node = lc.cluster.per_node.iter().map(|o| (o, "per-node object", node_vars.as_slice()));
    let once = lc.cluster.objects.iter().map(|o| (o, "object", &[] as &[String]));
    for (i, (o, what, vars)) in per_node.chain(once).enumerate() {
        let at = format!("cluster, {what} {} ({})", i + 1, o.resource);
        match schemas.kind(&o.resource) {
            Some((_, s)) => {
                let kind = Kind { resource: o.resource.clone(), ..Kind::default() };
                scope(&schemas, lc, &kind, s, vars, at).template(&o.template, Some(s), &mut errors);
            }
            None => errors.push(format!("{at}: the document serves no such kind")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        let meta = json!({"type": "object", "properties": {
            "name": {"type": "string"}, "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}}}});
        let kind = |g: &str, v: &str, k: &str, status: Value| {
            json!({"type": "object", "x-virt-resource": {"plural": "x"},
                   "x-kubernetes-group-version-kind": [{"group": g, "version": v, "kind": k}],
                   "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                  "metadata": {"$ref": "#/definitions/meta"},
                                  "spec": {"type": "object", "properties": {"run": {"type": "boolean"},
                                           "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                                  "status": status}})
        };
        let status = json!({"type": "object", "properties": {
            "phase": {"type": "string"},
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}, "status": {"type": "string"}}}}}});
        json!({"definitions": {
            "meta": meta,
            "g.v1.Thing": kind("g.io", "v1", "Thing", status.clone()),
            "g.v1alpha1.Thing": kind("g.io", "v1alpha1", "Thing", json!({"type": "object"})),
            "g.v1.Peer": kind("g.io", "v1", "Peer", status),
        }})
    }

    /// What the test document's server stores.
    fn stored() -> Vec<(String, String, String)> {
        let s = |k: &str| ("g.io".to_string(), k.to_string(), "v1".to_string());
        vec![s("Thing"), s("Peer")]
    }

    #[test]
    fn paths_are_read_in_the_version_the_server_stores() {
        let lc = crate::parse(
            "managers: {ctl: {component: c}}\nkinds:\n- resource: {group: g.io, kind: Thing}\n  stages:\n  - {name: s, manager: ctl, selector: {exists: .status.phase}, steps: []}\n",
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &lc), Ok(()));
        // Stored as v1alpha1, whose status declares nothing.
        let mut alpha = stored();
        alpha[0].2 = "v1alpha1".into();
        let errors = check(&doc(), &alpha, &lc).unwrap_err();
        assert!(errors[0].contains("field \"phase\" is not declared"), "{errors:?}");
    }

    #[test]
    fn a_good_file_passes() {
        let lc = crate::parse(
            r#"
managers: {ctl: {component: c}}
kinds:
  - resource: {group: g.io, kind: Thing}
    related: {peer: {resource: {group: g.io, kind: Peer}, by: name}}
    let:
      - name: phase
        cases:
          - when: {related: {name: peer, where: {condition: {type: Ready, status: "True"}}}}
            value: "{{ $peer.status.phase }}"
          - value: Stopped
    stages:
      - name: s
        manager: ctl
        selector: {all: [{equals: {path: .spec.run, value: true}}, {related: {name: peer, exists: false}}]}
        let: [{name: n, value: "{{ node() }}"}, {name: ca, value: "{{ caCert(concat('ca@', unixTime(now())), addDuration(now(), '1h')) }}"}]
        steps:
          - create:
              resource: {group: g.io, kind: Peer}
              template:
                metadata: {name: "{{ .metadata.name }}", labels: {"...": "{{ .metadata.labels }}", "{{ $n }}": "{{ $ca }}"}}
                spec: {template: "{{ .spec.template }}"}
          - patch: {subresource: status, merge: {status: {phase: "{{ $phase }}", conditions: [{type: Ready}]}}}
          - patch: {of: peer, merge: {spec: {run: false}, metadata: {finalizers: []}, status: {phase: "{{ caCert('x', now()) }}"}}}
          - event: {type: Normal, reason: R, message: "on {{ $n }} {{ .spec.template.anything.goes }}"}
          - finalizers: {add: [x]}
          - delete: {of: peer}
"#,
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &lc), Ok(()));
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let lc = crate::parse(
            r#"
managers: {ctl: {component: c}}
kinds:
  - resource: {group: g.io, kind: Nope}
  - resource: {group: g.io, kind: Thing}
    related: {peer: {resource: {group: g.io, kind: Missing}, by: controller}}
    let:
      - {name: phase, cases: [{value: "{{ .status.nope }}"}]}
      - {name: peer, value: 1}
      - {name: both, value: 1, cases: [{value: 2}]}
    stages:
      - name: s
        manager: other
        selector: {all: [{equals: {path: .spec.walk, value: true}}, {related: {name: ghost, exists: false}}, {exists: ".status.conditions[kind=x]"}, {exists: "caCert('x', now())"}]}
        steps:
          - patch: {subresource: status, merge: {status: {phse: x}, spec: {}}}
          - patch: {subresource: scale, merge: {}}
          - create: {resource: {group: g.io, kind: Thing}, template: {metadata: {nam: x}}}
          - event: {type: Info, reason: R, message: "{{ bogus() }} {{ $who.x }} {{ $none }} {{ now(1) }} {{ .a[ }}"}
          - delete: {of: ghost}
          - finalizers: {}
      - {name: s, manager: ctl, selector: {deleting: true}, steps: []}
"#,
        )
        .unwrap();
        let errors = check(&doc(), &stored(), &lc).unwrap_err();
        let all = errors.join("\n");
        for want in [
            "kind g.io/Nope: the document serves no such kind",
            "related peer: the document serves no kind g.io/Missing",
            "let phase, case 1: .status.nope field \"nope\" is not declared",
            "let peer: the name of a related object",
            "let both: either a value or cases",
            "manager \"other\" is not declared",
            ".spec.walk field \"walk\" is not declared",
            "no related object \"ghost\"",
            "field \"kind\" is not declared",
            "a status patch may only hold status",
            ".status field \"phse\" is not declared",
            "no subresource \"scale\"",
            ".metadata field \"nam\" is not declared",
            "type \"Info\" is neither Normal nor Warning",
            "no function bogus()",
            "$who is neither a related object nor a variable",
            "$none is neither a related object nor a variable",
            "now() takes 0 to 0 arguments",
            "expected [n]",
            "step 5 (delete): no related object \"ghost\"",
            "neither add nor remove",
            "stage s: a second stage of that name",
            "stage s, selector: caCert() makes a key pair: only a stage's lets and steps may call it",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
    }

    #[test]
    fn related_lists_fields_and_supersedes_are_checked() {
        let good = crate::parse(
            r#"
managers: {ctl: {component: c}}
kinds:
  - resource: {group: g.io, kind: Thing}
    related:
      peers: {resource: {group: g.io, kind: Peer}, by: owned, where: {equals: {path: .status.phase, value: Running}}}
      named: {resource: {group: g.io, kind: Peer}, by: {field: .status.phase}, namespace: "default(.metadata.namespace, 'default')"}
    stages:
      - name: a
        manager: ctl
        selector: {lessThan: {path: "len($peers)", value: 2}}
        supersedes: [b]
        delay: {until: "addDuration(.status.phase, '1h')"}
        steps:
          - patch: {merge: {status: {phase: "{{ $peers[0].status.phase }}"}}}
          - delete: {of: peers}
          - patch:
              merge:
                status:
                  conditions:
                    - {"...each": "{{ $peers }}", as: p, if: {exists: $p.status.phase}, value: {type: "{{ $p.status.phase }}"}}
      - {name: b, manager: ctl, selector: {related: {name: peers, where: {equals: {path: .status.phase, value: "{{ $self.status.phase }}"}}}}, steps: []}
"#,
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &good), Ok(()));
        let bad = crate::parse(
            r#"
managers: {ctl: {component: c}}
kinds:
  - resource: {group: g.io, kind: Thing}
    related:
      peers: {resource: {group: g.io, kind: Peer}, by: owned, where: {exists: .status.nope}}
      named: {resource: {group: g.io, kind: Peer}, by: {field: .spec.nope}, where: {deleting: true}, namespace: .spec.where}
    stages:
      - name: a
        manager: ctl
        selector: {all: [{lessThan: {path: .status.nah, value: 2}}, {exists: $self.spec.nope}]}
        supersedes: [a, ghost]
        delay: {until: .status.when}
        steps:
          - patch: {merge: {status: {phase: "{{ $peers.status.phase }}"}}}
          - patch:
              merge:
                status:
                  conditions:
                    - {"...each": "{{ .status.items }}", as: c, if: {exists: .status.gone}, value: {typo: "{{ $c.x }}", type: "{{ $d }}"}, extra: 1}
"#,
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        for want in [
            "related peers: .status.nope field \"nope\" is not declared",
            "related named: .spec.nope field \"nope\" is not declared",
            "related named: `where` filters only lists (owned, referencing, names)",
            ".status.nah field \"nah\" is not declared",
            "supersedes \"a\", no other stage",
            "supersedes \"ghost\", no other stage",
            "$peers is a list",
            "$self.spec.nope field \"nope\" is not declared",
            "related named, namespace: .spec.where field \"where\" is not declared",
            "stage a, delay: .status.when field \"when\" is not declared",
            ".status.items field \"items\" is not declared",
            "`...each` takes no \"extra\"",
            ".status.gone field \"gone\" is not declared",
            ".status.conditions field \"typo\" is not declared",
            "$d is neither a related object nor a variable",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
    }

    #[test]
    fn actions_are_checked() {
        let good = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    related: {peer: {resource: {group: g.io, kind: Peer}, by: name}}
    actions:
      start:
        code: 202
        body: {force: bool}
        let:
          - {name: want, cases: [{when: {equals: {path: $body.force, value: true}}, value: true}, {value: false}]}
        checks:
          - {when: {doesNotExist: .metadata.name}, code: 404}
          - {when: {related: {name: peer, exists: false}}, code: 404, about: peer}
          - {when: {equals: {path: $want, value: false}}, code: 409, message: "{{ .status.phase }} says no"}
        steps:
          - {when: {exists: .spec.run}, jsonPatch: {ops: [{op: replace, path: /spec/run, value: true}]}}
          - patch: {of: peer, subresource: status, merge: {status: {phase: Running}}}
          - create: {resource: {group: g.io, kind: Peer}, template: {metadata: {name: p}}}
          - call: {procedure: runningPatch, with: {running: "{{ $want }}"}}
      info:
        answer: {phase: "{{ .status.phase }}", users: "{{ $guest.users }}"}
      console:
        checks: [{when: {doesNotExist: .metadata.name}, code: 404}]
        stream: console
"#,
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &good), Ok(()));
        let bad = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    actions:
      start:
        code: 201
        let: [{name: w, cases: [{value: "{{ $nobody }}"}]}, {name: c, cases: [{value: "{{ caCert('x', now()) }}"}]}]
        checks:
          - {when: {exists: .spec.walk}, code: 200, message: "{{ $w }} {{ $body.x }}"}
          - {when: {deleting: true}, code: 404, about: ghost}
        steps:
          - jsonPatch: {ops: [{op: add, path: /spec/nope, value: 1}]}
          - patch: {subresource: scale, merge: {status: {phse: x}}}
          - create: {resource: {group: g.io, kind: Gone}, template: {}}
          - call: {procedure: changeRequest, subresource: status, with: {requests: "{{ $none }}", more: 1}}
      info:
        code: 200
        answer: {}
      console:
        stream: console
        manager: nobody
        steps: [{patch: {merge: {spec: {run: true}}}}]
"#,
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        for want in [
            "action start: code is 200 or 202",
            "action start, let w, case 1: $nobody is neither a related object nor a variable",
            "action start, let c, case 1: caCert() makes a key pair",
            "action start, check 1: .spec.walk field \"walk\" is not declared",
            "action start, check 1: code 200 is not an error",
            "action start, check 2: no related object Some(\"ghost\")",
            "step 1 (jsonPatch): /spec/nope: .spec.nope field \"nope\" is not declared",
            "step 2 (patch): no subresource \"scale\" (only status)",
            ".status field \"phse\" is not declared",
            "step 3 (create): the document serves no kind g.io/Gone",
            "step 4 (call): $none is neither a related object nor a variable",
            "step 4 (call): ChangeRequest takes with: {requests}",
            "action info: a read (answer) has neither code nor steps",
            "action console: a stream has neither answer nor steps",
            "action console: manager nobody is not declared",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
    }

    #[test]
    fn subresource_admission_is_checked() {
        let bad = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    admission:
      eviction:
        webhook: w.g.io
        checks:
          - {when: {exists: .spec.run}, allow: true}
          - {when: {exists: .spec.fly}, deny: {code: 200, message: no}}
          - {when: {exists: .spec.run}}
        deny: {code: 429, message: "{{ $nobody }}"}
        onError: {code: 429, message: "{{ $error }}"}
"#,
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        for want in [
            "admission eviction, check 2: .spec.fly field \"fly\" is not declared",
            "admission eviction, check 2: code 200 is not an error",
            "admission eviction, check 3: either allow or deny",
            "admission eviction, deny: $nobody is neither a related object nor a variable",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
        assert!(!all.contains("onError"), "{all}");
    }

    #[test]
    fn admission_warnings_and_mutations_are_checked() {
        let good = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    warnings: [{when: {exists: .spec.run}, message: "spec.run is {{ .spec.run }}"}]
    mutations:
      - {merge: {metadata: {labels: {x: "{{ .metadata.name }}"}}}, finalizers: [g.io/keep]}
"#,
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &good), Ok(()));
        let bad = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    warnings: [{when: {exists: .spec.walk}, message: "{{ $nobody }}"}]
    mutations:
      - {when: {exists: .spec.fly}, merge: {spec: {swim: 1}}}
      - {}
"#,
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        for want in [
            "warning 1: .spec.walk field \"walk\" is not declared",
            "warning 1: $nobody is neither a related object nor a variable",
            "mutation 1: .spec.fly field \"fly\" is not declared",
            "mutation 1: .spec field \"swim\" is not declared",
            "mutation 2: neither merge nor finalizers",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
    }

    #[test]
    fn log_lines_are_checked() {
        let good = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    logs: [{container: c, lines: [{when: {exists: .spec.run}, at: "{{ now() }}", line: {msg: "{{ .spec.run }}"}}]}]
"#,
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &good), Ok(()));
        let bad = crate::parse(
            r#"
kinds:
  - resource: {group: g.io, kind: Thing}
    logs: [{container: c, lines: [{when: {exists: .spec.walk}, at: "{{ $nobody }}", line: {msg: "{{ .spec.fly }}"}}]}]
"#,
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        for want in [
            "log c, line 1: .spec.walk field \"walk\" is not declared",
            "log c, line 1: $nobody is neither a related object nor a variable",
            "log c, line 1: .spec.fly field \"fly\" is not declared",
        ] {
            assert!(all.contains(want), "missing {want:?} in:\n{all}");
        }
    }

    #[test]
    fn the_clusters_per_node_objects_are_checked_against_their_kind() {
        let good = crate::parse(
            "cluster:\n  perNode:\n    - resource: {group: g.io, kind: Peer}\n      template: {metadata: {name: \"{{ $node }}-{{ $nodeIP }}\"}}\n",
        )
        .unwrap();
        assert_eq!(check(&doc(), &stored(), &good), Ok(()));
        let bad = crate::parse(
            "cluster:\n  perNode:\n    - resource: {group: g.io, kind: Gone}\n      template: {}\n    - resource: {group: g.io, kind: Peer}\n      template: {metadata: {name: \"{{ $nodeName }}\"}}\n",
        )
        .unwrap();
        let all = check(&doc(), &stored(), &bad).unwrap_err().join("\n");
        assert!(
            all.contains("per-node object 1 (g.io/Gone): the document serves no such kind"),
            "{all}"
        );
        assert!(all.contains("$nodeName is neither a related object nor a variable"), "{all}");
    }
}
