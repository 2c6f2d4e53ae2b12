//! The expression language inside `{{ … }}` and in predicates' `path`s. Deliberately small:
//!
//! - `.a.b[0].c` reads the object (`.` alone is the whole object); `['kubevirt.io/x']` reads a
//!   key with dots or slashes; `[type=Ready]` picks the first list element whose field equals the
//!   value (bare word or quoted string). A missing step reads `null`.
//! - `$name.a.b` reads a related object or a `let`'s value (`null` when absent); `$self` is
//!   the stage's own object, also inside a predicate on a related one (where `.` is that one).
//! - Literals: `'text'`, `"text"`, numbers, `true`, `false`, `null`.
//! - Calls `f(arg, …)`, from [`FUNCTIONS`]. Random values come from the caller's seeded
//!   generator, so a seed repeats them; a certificate's key does not (`caCert`, made by the
//!   caller: this crate links no cryptography).

use std::borrow::Cow;

use serde_json::{json, Value};

/// Every function, with its arity range and what it does (the checker rejects the others).
pub const FUNCTIONS: &[(&str, usize, usize, &str)] = &[
    ("now", 0, 0, "the current time, RFC 3339 at seconds"),
    ("node", 0, 0, "one of the simulated nodes, at random"),
    ("ip", 0, 0, "an address from the simulated pod network 10.244.0.0/16"),
    ("mac", 0, 0, "a locally administered MAC address"),
    ("uid", 0, 0, "a random UUID"),
    (
        "name",
        1,
        2,
        "the prefix plus five characters as generateName picks them: random, or derived from a \
         seed (2nd), so a create tried again makes the same name and finds it made",
    ),
    ("str", 1, 1, "the value as text (null stays null)"),
    ("int", 1, 1, "the value as an integer (null when it is not one)"),
    ("default", 1, 8, "the first argument that is not null"),
    ("concat", 1, 8, "the arguments' texts joined"),
    ("controllerRef", 0, 0, "an ownerReference to the object: controller, blocking deletion"),
    ("len", 1, 1, "the number of elements of a list or members of an object (0 for null)"),
    ("num", 1, 1, "the value as a number, text read with a trailing % dropped (null if none)"),
    ("nodeCount", 0, 0, "how many nodes are simulated"),
    ("otherNode", 1, 1, "a simulated node other than the one given, at random (null: none)"),
    ("percent", 2, 2, "a random percentage in [lo, hi) as CDI prints progress: \"12.34%\""),
    ("labelSelector", 1, 1, "a LabelSelector as kube prints it: \"a=b,c in (d,e)\""),
    ("sign", 1, 1, "-1, 0 or 1 as the number is negative, zero or positive (null otherwise)"),
    (
        "without",
        3,
        3,
        "the list's items whose field (2nd; dotted: 'dataVolume.name') is not the value (3rd)",
    ),
    ("find", 3, 3, "the list's first item whose field (2nd, as without's) is the value (3rd)"),
    ("indexOf", 3, 3, "the position of find's item in the list (null if none)"),
    ("omitPrefixed", 2, 8, "the object's members whose names start with none of the prefixes"),
    ("pluck", 2, 2, "the list's items' field (2nd, as without's), those present and not null"),
    (
        "addDuration",
        2,
        2,
        "the time plus a Go duration (\"2h\", \"1m30s\"): RFC 3339 (null if either is bad)",
    ),
    ("token", 1, 1, "that many random letters and digits (an access token)"),
    ("hex", 1, 1, "that many random hexadecimal digits (a container's id)"),
    (
        "digest",
        1,
        1,
        "\"sha256:\" and 64 hexadecimal digits derived from the text: the same text, the same \
         digest (an image's, as a registry would answer it; not a real hash of anything)",
    ),
    ("get", 2, 2, "the member of an object named by the second argument (null if none)"),
    (
        "fromJson",
        1,
        1,
        "the value the text holds as JSON (null if it holds none): a container's JSON \
         termination message",
    ),
    (
        "split",
        3,
        3,
        "the part (3rd, from 0) of the text cut at the separator (2nd): the namespace of CDI's \
         \"ns/name\" annotations (null past the last part)",
    ),
    (
        "transitionTime",
        2,
        2,
        "the condition's lastTransitionTime if its status is the second argument, else now",
    ),
    ("sum", 1, 8, "the numbers added (null values count 0; null if one is not a number)"),
    ("mul", 1, 8, "the numbers multiplied (null if one is not a number)"),
    ("div", 2, 2, "the first number divided by the second, rounded down (null if either is bad)"),
    (
        "bytes",
        1,
        1,
        "a resource.Quantity's value (\"128Mi\", \"64M\", \"1.5\") as a number, rounded up as \
         Quantity.Value() does (null if it is not one)",
    ),
    (
        "quantity",
        2,
        2,
        "the number as a canonical resource.Quantity in the format of the quantity given (2nd): \
         binary (\"405760Ki\") when that one is, else decimal (\"50M\", \"100m\"), as Quantity.Add \
         keeps its receiver's format",
    ),
    (
        "backoff",
        3,
        3,
        "a retry's back-off as a Go duration (\"13s\"): base seconds times the failure count \
         squared, plus up to half of that at random, at most max seconds (KubeVirt's crash loop)",
    ),
    ("unixTime", 1, 1, "the time (RFC 3339 at seconds) as Unix seconds (null if it is not one)"),
    (
        CA_CERT,
        2,
        2,
        "a new self-signed CA certificate, PEM, of that common name, valid from now until the \
         time (2nd; null if not a time): the environment makes it, with a fresh key the seed \
         does not repeat; only a stage's lets and steps may call it",
    ),
];

/// The function that makes a CA certificate: the checker allows it only where the simulated
/// runtime answers it, since each call makes a key pair.
pub const CA_CERT: &str = "caCert";

/// Makes a self-signed CA certificate, PEM, of a common name, valid between two Unix seconds:
/// what `caCert()` asks of a [`Ctx`](crate::Ctx) that has one (the server's, with its crypto).
pub type CaCertFn = fn(common_name: &str, not_before: i64, not_after: i64) -> Option<String>;

/// The name that reads the stage's own object.
pub const SELF: &str = "self";

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A read: of the object (`root: None`) or of `$name`.
    Path {
        root: Option<String>,
        segs: Vec<Seg>,
    },
    Lit(Value),
    Call(String, Vec<Expr>),
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Key(String),
    Index(usize),
    /// The first element whose field equals the value.
    Filter(String, Value),
}

/// Parses one expression.
pub fn parse(text: &str) -> Result<Expr, String> {
    let mut p = Parser { s: text.as_bytes(), i: 0 };
    let e = p.expr()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected {:?} in expression {text:?}", &text[p.i..]));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ident(&mut self) -> String {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = self.s[self.i];
        self.i += 1;
        let start = self.i;
        while self.peek().is_some_and(|c| c != quote) {
            self.i += 1;
        }
        if self.peek().is_none() {
            return Err("unterminated string".into());
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(out)
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.ws();
        match self.peek() {
            None => Err("empty expression".into()),
            Some(b'.') => Ok(Expr::Path { root: None, segs: self.segs()? }),
            Some(b'$') => {
                self.i += 1;
                let name = self.ident();
                if name.is_empty() {
                    return Err("`$` needs a name".into());
                }
                Ok(Expr::Path { root: Some(name), segs: self.segs()? })
            }
            Some(b'\'' | b'"') => Ok(Expr::Lit(Value::String(self.string()?))),
            Some(c) if c.is_ascii_digit() || c == b'-' => {
                let start = self.i;
                self.i += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                serde_json::from_str(text)
                    .map(Expr::Lit)
                    .map_err(|_| format!("bad number {text:?}"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let word = self.ident();
                match word.as_str() {
                    "true" => return Ok(Expr::Lit(Value::Bool(true))),
                    "false" => return Ok(Expr::Lit(Value::Bool(false))),
                    "null" => return Ok(Expr::Lit(Value::Null)),
                    _ => {}
                }
                self.ws();
                if self.peek() != Some(b'(') {
                    return Err(format!("{word:?} is neither a literal nor a call"));
                }
                self.i += 1;
                let mut args = Vec::new();
                self.ws();
                if self.peek() == Some(b')') {
                    self.i += 1;
                    return Ok(Expr::Call(word, args));
                }
                loop {
                    args.push(self.expr()?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b')') => {
                            self.i += 1;
                            return Ok(Expr::Call(word, args));
                        }
                        _ => return Err(format!("expected `,` or `)` in the call of {word}")),
                    }
                }
            }
            Some(c) => Err(format!("unexpected {:?}", c as char)),
        }
    }

    fn segs(&mut self) -> Result<Vec<Seg>, String> {
        let mut segs = Vec::new();
        loop {
            match self.peek() {
                Some(b'.') => {
                    self.i += 1;
                    let key = self.ident();
                    if !key.is_empty() {
                        segs.push(Seg::Key(key));
                    } else if self.peek() == Some(b'.') || !segs.is_empty() {
                        return Err("empty path step".into());
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    self.ws();
                    let seg = match self.peek() {
                        Some(b'\'' | b'"') => Seg::Key(self.string()?),
                        Some(c) if c.is_ascii_digit() => {
                            let n = self.ident();
                            Seg::Index(n.parse().map_err(|_| format!("bad index {n:?}"))?)
                        }
                        _ => {
                            let field = self.ident();
                            self.ws();
                            if field.is_empty() || self.peek() != Some(b'=') {
                                return Err("expected [n], ['key'] or [field=value]".into());
                            }
                            self.i += 1;
                            self.ws();
                            let value = match self.peek() {
                                Some(b'\'' | b'"') => self.string()?,
                                _ => self.ident(),
                            };
                            Seg::Filter(field, Value::String(value))
                        }
                    };
                    self.ws();
                    if self.peek() != Some(b']') {
                        return Err("expected `]`".into());
                    }
                    self.i += 1;
                    segs.push(seg);
                }
                _ => return Ok(segs),
            }
        }
    }
}

/// Reads `segs` from `v`; `Null` where a step is missing.
pub fn read<'a>(v: &'a Value, segs: &[Seg]) -> &'a Value {
    static NULL: Value = Value::Null;
    let mut cur = v;
    for s in segs {
        cur = match s {
            Seg::Key(k) => cur.get(k.as_str()).unwrap_or(&NULL),
            Seg::Index(i) => cur.get(*i).unwrap_or(&NULL),
            Seg::Filter(f, want) => cur
                .as_array()
                .and_then(|items| items.iter().find(|e| e.get(f.as_str()) == Some(want)))
                .unwrap_or(&NULL),
        };
    }
    cur
}

/// A small seeded generator (splitmix64): the same seed gives the same names, addresses, nodes
/// and jitter.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for one purpose (a stage firing for one object), from a seed and labels.
    pub fn derived(seed: u64, labels: &[&str]) -> Rng {
        // FNV-1a over the labels, mixed into the seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for l in labels {
            for b in l.bytes().chain([0]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        let mut r = Rng(seed ^ h);
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// What an evaluation reads besides the expression's root object.
pub trait Env {
    /// `$name`: a related object or a stage's or action's value; `None` when absent.
    fn named(&self, name: &str) -> Option<&Value>;
    /// The object the stage acts on (for `controllerRef()` and the kind's `let`s).
    fn object(&self) -> &Value;
    /// `$name` of the kind's `let`s, computed when read (`null`: no such value).
    fn computed(&self, name: &str) -> Value;
    /// The value at `segs` inside `computed(name)`, copying only that part where the value is
    /// kept.
    fn computed_at(&self, name: &str, segs: &[Seg]) -> Value {
        read(&self.computed(name), segs).clone()
    }
    fn now(&self) -> String;
    fn nodes(&self) -> usize;
    fn rng(&self) -> std::cell::RefMut<'_, Rng>;
    /// `caCert()`: a CA certificate, PEM (`None`: this environment makes none).
    fn ca_cert(&self, common_name: &str, not_before: i64, not_after: i64) -> Option<String>;
}

/// The name of simulated node `i` (0-based).
pub fn node_name(i: usize) -> String {
    format!("sim-node-{}", i + 1)
}

/// `eval`, borrowing what it reads instead of copying it: a predicate compares a path's value
/// in place (a whole `status` is never copied to ask whether it exists).
pub fn eval_ref<'a>(e: &'a Expr, this: &'a Value, env: &'a dyn Env) -> Cow<'a, Value> {
    match e {
        Expr::Lit(v) => Cow::Borrowed(v),
        Expr::Path { root: None, segs } => Cow::Borrowed(read(this, segs)),
        Expr::Path { root: Some(name), segs } if name == SELF => {
            Cow::Borrowed(read(env.object(), segs))
        }
        Expr::Path { root: Some(name), segs } => match env.named(name) {
            Some(v) => Cow::Borrowed(read(v, segs)),
            None => Cow::Owned(env.computed_at(name, segs)),
        },
        Expr::Call(..) => Cow::Owned(eval(e, this, env)),
    }
}

/// Evaluates `e` with `.` reading `this`.
pub fn eval(e: &Expr, this: &Value, env: &dyn Env) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::Path { root: None, segs } => read(this, segs).clone(),
        Expr::Path { root: Some(name), segs } if name == SELF => read(env.object(), segs).clone(),
        // A related object or a stage's or action's value, else the kind's.
        Expr::Path { root: Some(name), segs } => match env.named(name) {
            Some(v) => read(v, segs).clone(),
            None => env.computed_at(name, segs),
        },
        Expr::Call(f, args) => {
            let arg =
                |i: usize| args.get(i).map_or(Cow::Owned(Value::Null), |a| eval_ref(a, this, env));
            call(f, args.len(), &arg, env)
        }
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A whole number as an integer, any other as a float.
fn whole_or_float(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// A resource.Quantity's value (apimachinery pkg/api/resource/quantity.go ParseQuantity): a
/// decimal number, an optional exponent, and a binary (`Ki`…`Ei`) or decimal (`n`…`E`) suffix.
pub fn parse_quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(end);
    let value: f64 = num.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some(value * factor)
}

/// A value as resource.Quantity's canonical text (quantity.go CanonicalizeBytes): binary
/// suffixes for a whole number of bytes when asked for and at least 1024 (else decimal, as Go
/// falls back), decimal suffixes at powers of 1000 otherwise, milli-units below one.
pub fn format_quantity(v: f64, binary: bool) -> String {
    let whole = v.fract() == 0.0;
    if binary && whole && v.abs() >= 1024.0 {
        let (mut n, mut exp) = (v as i64, 0);
        while n % 1024 == 0 && exp < 6 {
            n /= 1024;
            exp += 1;
        }
        return format!("{n}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp]);
    }
    if !whole {
        // Milli-units, rounded up as Quantity keeps them (a finer value is rare here), after
        // float noise (3 × 0.1) is taken for the number meant.
        let m = v * 1000.0;
        let milli = if (m - m.round()).abs() < 1e-6 { m.round() } else { m.ceil() } as i64;
        if milli % 1000 != 0 {
            return format!("{milli}m");
        }
        return format_quantity((milli / 1000) as f64, false);
    }
    let (mut n, mut exp) = (v as i64, 0);
    while n != 0 && n % 1000 == 0 && exp < 6 {
        n /= 1000;
        exp += 1;
    }
    format!("{n}{}", ["", "k", "M", "G", "T", "P", "E"][exp])
}

/// A number read from a value: numbers, and text such as `"12.5"` or `"12.5%"`.
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').parse().ok(),
        _ => None,
    }
}

/// Unix seconds of `YYYY-MM-DDTHH:MM:SSZ` (fractions and offsets are not read: metav1.Time
/// is written so).
pub fn unix_seconds(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let shape = b.len() >= 20 && [4, 7, 10, 13, 16].iter().zip(b"--T::").all(|(&i, &c)| b[i] == c);
    if !shape {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * mp + 2) / 5 + d - 1;
    Some((era * 146_097 + doe - 719_468) * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_time(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A Go `time.Duration` string (`"2h"`, `"1h30m0s"`, `"1.5s"`, `"300ms"`) in seconds, as
/// metav1.Duration is written.
pub fn go_duration(s: &str) -> Option<f64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * unit;
        rest = &rest[u..];
    }
    Some(if neg { -total } else { total })
}

/// metav1.LabelSelector's text (`LabelSelectorAsSelector(s).String()`): requirements sorted
/// by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
fn label_selector(sel: &Value) -> Value {
    if !sel.is_object() {
        return Value::Null;
    }
    let mut reqs: Vec<(String, String)> = Vec::new();
    for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("").to_string();
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Value::String(reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(","))
}

/// The member a dotted field names (`dataVolume.name`), if there is one.
fn field_at<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    field.split('.').try_fold(v, |v, k| v.get(k))
}

fn call<'a>(f: &str, n: usize, arg: &dyn Fn(usize) -> Cow<'a, Value>, env: &dyn Env) -> Value {
    match f {
        "now" => Value::String(env.now()),
        "node" => {
            let i = env.rng().below(env.nodes().max(1) as u64) as usize;
            Value::String(node_name(i))
        }
        "ip" => {
            let r = env.rng().next_u64();
            Value::String(format!("10.244.{}.{}", (r >> 8) % 256, 2 + (r % 250)))
        }
        "mac" => {
            let r = env.rng().next_u64().to_be_bytes();
            Value::String(format!(
                "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                r[0], r[1], r[2], r[3], r[4]
            ))
        }
        "uid" => {
            let a = env.rng().next_u64();
            let b = env.rng().next_u64();
            let b = (b & 0x0fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
            let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
            Value::String(format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xffff,
                b >> 48,
                b & 0xffff_ffff_ffff
            ))
        }
        "name" => {
            const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
            let mut out = text(&arg(0)).unwrap_or_default();
            let seed = (n > 1).then(|| text(&arg(1)).unwrap_or_default());
            let mut seeded = seed.map(|s| Rng::derived(0, &[&s]));
            for _ in 0..5 {
                let n = ALPHABET.len() as u64;
                let i = match seeded.as_mut() {
                    Some(r) => r.below(n),
                    None => env.rng().below(n),
                };
                out.push(ALPHABET[i as usize] as char);
            }
            Value::String(out)
        }
        "len" => match &*arg(0) {
            Value::Array(a) => json!(a.len()),
            Value::Object(m) => json!(m.len()),
            _ => json!(0),
        },
        "num" => number(&arg(0)).map_or(Value::Null, |n| json!(n)),
        "nodeCount" => json!(env.nodes().max(1)),
        "otherNode" => {
            let current = arg(0);
            let others: Vec<String> = (0..env.nodes().max(1))
                .map(node_name)
                .filter(|n| current.as_str() != Some(n.as_str()))
                .collect();
            if others.is_empty() {
                return Value::Null;
            }
            let i = env.rng().below(others.len() as u64) as usize;
            Value::String(others[i].clone())
        }
        "percent" => {
            let lo = number(&arg(0)).unwrap_or(0.0);
            let hi = number(&arg(1)).unwrap_or(100.0).max(lo);
            let r = env.rng().below(1_000_000) as f64 / 1_000_000.0;
            Value::String(format!("{:.2}%", lo + (hi - lo) * r))
        }
        "labelSelector" => label_selector(&arg(0)),
        "addDuration" => {
            let at = arg(0).as_str().and_then(unix_seconds);
            let by = arg(1).as_str().and_then(go_duration);
            match (at, by) {
                (Some(at), Some(by)) => Value::String(format_time(at + by.floor() as i64)),
                _ => Value::Null,
            }
        }
        "token" => {
            const ALPHABET: &[u8] =
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            let n = number(&arg(0)).unwrap_or(0.0).clamp(0.0, 256.0) as usize;
            let mut rng = env.rng();
            let out = (0..n).map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize] as char);
            Value::String(out.collect())
        }
        "hex" => {
            let n = number(&arg(0)).unwrap_or(0.0).clamp(0.0, 256.0) as usize;
            let mut rng = env.rng();
            let out = (0..n).map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap_or('0'));
            Value::String(out.collect())
        }
        "digest" => {
            let mut rng = Rng::derived(0, &[&text(&arg(0)).unwrap_or_default()]);
            let hex: String = (0..4).map(|_| format!("{:016x}", rng.next_u64())).collect();
            Value::String(format!("sha256:{hex}"))
        }
        "get" => match (&*arg(0), text(&arg(1))) {
            (Value::Object(m), Some(k)) => m.get(&k).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "fromJson" => match &*arg(0) {
            Value::String(t) => serde_json::from_str(t).unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "split" => match (text(&arg(0)), text(&arg(1)), arg(2).as_u64()) {
            (Some(s), Some(sep), Some(i)) if !sep.is_empty() => {
                s.split(sep.as_str()).nth(i as usize).map_or(Value::Null, |p| json!(p))
            }
            _ => Value::Null,
        },
        "str" => text(&arg(0)).map_or(Value::Null, Value::String),
        "int" => match &*arg(0) {
            Value::Number(n) if n.is_i64() => Value::Number(n.clone()),
            Value::String(s) => s.parse::<i64>().map_or(Value::Null, |i| json!(i)),
            _ => Value::Null,
        },
        "default" => (0..n).map(arg).find(|v| !v.is_null()).map_or(Value::Null, Cow::into_owned),
        "concat" => Value::String((0..n).filter_map(|i| text(&arg(i))).collect()),
        "controllerRef" => {
            let o = env.object();
            let field = |p: &str| o.pointer(p).cloned().unwrap_or(Value::Null);
            json!({
                "apiVersion": field("/apiVersion"),
                "kind": field("/kind"),
                "name": field("/metadata/name"),
                "uid": field("/metadata/uid"),
                "controller": true,
                "blockOwnerDeletion": true,
            })
        }
        "sign" => match arg(0).as_f64() {
            Some(x) if x < 0.0 => json!(-1),
            Some(x) if x > 0.0 => json!(1),
            Some(_) => json!(0),
            None => Value::Null,
        },
        "without" => {
            let (field, value) = (arg(1), arg(2));
            let items = arg(0);
            let keep = |i: &&Value| field.as_str().is_none_or(|f| field_at(i, f) != Some(&value));
            let kept = items.as_array().into_iter().flatten().filter(keep).cloned();
            Value::Array(kept.collect())
        }
        "pluck" => {
            let items = arg(0);
            let items = items.as_array().map_or(&[][..], Vec::as_slice);
            let Some(f) = arg(1).as_str().map(str::to_string) else { return json!([]) };
            let values = items.iter().filter_map(|i| field_at(i, &f)).filter(|v| !v.is_null());
            Value::Array(values.cloned().collect())
        }
        "find" => {
            let (field, value) = (arg(1), arg(2));
            let items = arg(0);
            let Some(f) = field.as_str() else { return Value::Null };
            let mut all = items.as_array().into_iter().flatten();
            all.find(|i| field_at(i, f) == Some(&value)).cloned().unwrap_or(Value::Null)
        }
        "omitPrefixed" => match &*arg(0) {
            Value::Object(m) => {
                let prefixes: Vec<String> = (1..n).filter_map(|i| text(&arg(i))).collect();
                let keep = |k: &String| !prefixes.iter().any(|p| k.starts_with(p.as_str()));
                let kept = m.iter().filter(|(k, _)| keep(k));
                Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
            }
            _ => Value::Null,
        },
        "indexOf" => {
            let (field, value) = (arg(1), arg(2));
            let items = arg(0);
            let Some(f) = field.as_str() else { return Value::Null };
            items
                .as_array()
                .into_iter()
                .flatten()
                .position(|i| field_at(i, f) == Some(&value))
                .map_or(Value::Null, |p| json!(p))
        }
        "transitionTime" => {
            let cond = arg(0);
            let same = cond.get("status").and_then(Value::as_str) == arg(1).as_str();
            match cond.get("lastTransitionTime") {
                Some(t) if same && !t.is_null() => t.clone(),
                _ => Value::String(env.now()),
            }
        }
        "mul" => {
            let mut total = 1.0;
            for i in 0..n {
                match number(&arg(i)) {
                    Some(x) => total *= x,
                    None => return Value::Null,
                }
            }
            whole_or_float(total)
        }
        "div" => match (number(&arg(0)), number(&arg(1))) {
            (Some(a), Some(b)) if b != 0.0 => whole_or_float((a / b).floor()),
            _ => Value::Null,
        },
        "bytes" => match &*arg(0) {
            Value::Number(n) => json!(n.as_f64().unwrap_or(0.0).ceil() as i64),
            Value::String(q) => parse_quantity(q).map_or(Value::Null, |v| json!(v.ceil() as i64)),
            _ => Value::Null,
        },
        "quantity" => match number(&arg(0)) {
            Some(v) => {
                let binary = text(&arg(1)).is_some_and(|q| q.trim_end().ends_with('i'));
                Value::String(format_quantity(v, binary))
            }
            None => Value::Null,
        },
        "sum" => {
            let mut total = 0.0;
            for i in 0..n {
                match &*arg(i) {
                    Value::Null => {}
                    v => match v.as_f64() {
                        Some(x) => total += x,
                        None => return Value::Null,
                    },
                }
            }
            if total.fract() == 0.0 && total.abs() < 9e15 {
                json!(total as i64)
            } else {
                json!(total)
            }
        }
        // vm.go calculateStartBackoffTime: interval × count², plus rand(delay/2 + 1), capped.
        "backoff" => {
            let count = number(&arg(0)).unwrap_or(1.0).max(1.0) as u64;
            let base = number(&arg(1)).unwrap_or(10.0).max(0.0) as u64;
            let max = number(&arg(2)).unwrap_or(300.0).max(0.0) as u64;
            let delay = base.saturating_mul(count.saturating_mul(count));
            let delay = delay.saturating_add(env.rng().below(delay / 2 + 1));
            Value::String(format!("{}s", delay.min(max)))
        }
        "unixTime" => arg(0).as_str().and_then(unix_seconds).map_or(Value::Null, |s| json!(s)),
        // Valid from the evaluation's now, so its common name and its notBefore agree.
        CA_CERT => {
            let (cn, until) = (text(&arg(0)), arg(1).as_str().and_then(unix_seconds));
            match (cn, unix_seconds(&env.now()), until) {
                (Some(cn), Some(from), Some(until)) => {
                    env.ca_cert(&cn, from, until.max(from)).map_or(Value::Null, Value::String)
                }
                _ => Value::Null,
            }
        }
        _ => Value::Null,
    }
}

/// The function calls and `$` names an expression uses, for the checker.
pub fn visit<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    if let Expr::Call(_, args) = e {
        for a in args {
            visit(a, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct T {
        obj: Value,
        rng: RefCell<Rng>,
    }

    impl Env for T {
        fn named(&self, name: &str) -> Option<&Value> {
            (name == "me").then_some(&self.obj)
        }
        fn object(&self) -> &Value {
            &self.obj
        }
        fn computed(&self, name: &str) -> Value {
            json!(format!("computed {name}"))
        }
        fn now(&self) -> String {
            "2026-01-01T00:00:00Z".into()
        }
        fn nodes(&self) -> usize {
            3
        }
        fn rng(&self) -> std::cell::RefMut<'_, Rng> {
            self.rng.borrow_mut()
        }
        fn ca_cert(&self, common_name: &str, not_before: i64, not_after: i64) -> Option<String> {
            Some(format!("CA {common_name} {not_before}..{not_after}"))
        }
    }

    fn env() -> T {
        let obj = json!({
            "apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "a", "uid": "u1", "annotations": {"x.io/gen": "3"}},
            "spec": {"volumes": [
                {"name": "root", "containerDisk": {"image": "i"}},
                {"name": "disk", "dataVolume": {"name": "dv"}}
            ]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "then"},
                {"type": "Paused", "status": "False"}
            ]}
        });
        T { obj, rng: RefCell::new(Rng::new(7)) }
    }

    fn ev(text: &str) -> Value {
        let t = env();
        eval(&parse(text).unwrap(), &t.obj, &t)
    }

    #[test]
    fn paths_read_keys_indexes_filters_and_quoted_keys() {
        assert_eq!(ev(".metadata.name"), json!("a"));
        assert_eq!(ev(".status.conditions[1].type"), json!("Paused"));
        assert_eq!(ev(".status.conditions[type=Paused].status"), json!("False"));
        assert_eq!(ev(".status.conditions[type='Ready'].status"), json!("True"));
        assert_eq!(ev(".metadata.annotations['x.io/gen']"), json!("3"));
        assert_eq!(ev(".metadata.missing.deeper"), Value::Null);
        assert_eq!(ev(".status.conditions[type=Gone].status"), Value::Null);
        assert_eq!(ev("$me.metadata.uid"), json!("u1"));
        assert_eq!(ev("$other.metadata.uid"), Value::Null);
        assert_eq!(ev("$self.metadata.uid"), json!("u1"));
        assert_eq!(ev(".")["metadata"]["name"], json!("a"));
    }

    #[test]
    fn functions() {
        assert_eq!(ev("int(.metadata.annotations['x.io/gen'])"), json!(3));
        assert_eq!(ev("str(3)"), json!("3"));
        assert_eq!(ev("default(.nope, null, 'x')"), json!("x"));
        assert_eq!(ev("concat('virt-launcher-', .metadata.name, '-')"), json!("virt-launcher-a-"));
        assert_eq!(ev("$printableStatus"), json!("computed printableStatus"));
        let kept = ev("without(.status.conditions, 'type', 'Paused')");
        assert!(kept.as_array().unwrap().iter().all(|c| c["type"] != "Paused"), "{kept}");
        assert_eq!(ev("without(.status.conditions, 'type', 'Nope')"), ev(".status.conditions"));
        assert_eq!(ev("without(.nope, 'type', 'Paused')"), json!([]));
        // Dotted fields reach into items; find returns the first match.
        assert_eq!(ev("len(without(.spec.volumes, 'dataVolume.name', 'dv'))"), json!(1));
        assert_eq!(ev("get(find(.spec.volumes, 'dataVolume.name', 'dv'), 'name')"), json!("disk"));
        assert_eq!(ev("find(.spec.volumes, 'name', 'nope')"), Value::Null);
        assert_eq!(ev("find(.nope, 'name', 'disk')"), Value::Null);
        assert_eq!(ev("pluck(.spec.volumes, 'dataVolume.name')"), json!(["dv"]));
        assert_eq!(ev("pluck(.spec.volumes, 'name')"), json!(["root", "disk"]));
        assert_eq!(ev("pluck(.nope, 'name')"), json!([]));
        assert_eq!(ev("sign(int(.metadata.annotations['x.io/gen']))"), json!(1));
        assert_eq!(ev("sign(0)"), json!(0));
        assert_eq!(ev("sign(.nope)"), Value::Null);
        assert_eq!(ev("controllerRef()")["uid"], json!("u1"));
        assert_eq!(ev("controllerRef()")["controller"], json!(true));
        assert_eq!(ev("transitionTime(.status.conditions[type=Ready], 'True')"), json!("then"));
        assert_eq!(
            ev("transitionTime(.status.conditions[type=Ready], 'False')"),
            json!("2026-01-01T00:00:00Z")
        );
        let node = ev("node()");
        assert!(["sim-node-1", "sim-node-2", "sim-node-3"].contains(&node.as_str().unwrap()));
        assert!(ev("ip()").as_str().unwrap().starts_with("10.244."));
        assert_eq!(ev("mac()").as_str().unwrap().len(), 17);
        assert_eq!(ev("uid()").as_str().unwrap().len(), 36);
        assert_eq!(ev("name('p-')").as_str().unwrap().len(), 7);
        // KubeVirt's launcher memory for 128Mi and one vCPU (renderresources.go): 405760Ki.
        let overhead = "sum(div(mul(div(sum(bytes('128Mi'), 999), 1000), 1000), 512), bytes('220Mi'), bytes('8Mi'), bytes('8Mi'), bytes('32Mi'))";
        assert_eq!(
            ev(&format!("quantity(sum(bytes('128Mi'), {overhead}), '128Mi')")),
            json!("405760Ki")
        );
        assert_eq!(ev("quantity(sum(bytes('2Gi'), bytes('280Mi')), '2Gi')"), json!("2328Mi"));
        assert_eq!(ev("quantity(50000000, '50M')"), json!("50M"));
        assert_eq!(ev("quantity(0.1, '1')"), json!("100m"));
        assert_eq!(ev("quantity(mul(3, 0.1), '1')"), json!("300m"));
        assert_eq!(ev("quantity(mul(15, 0.1), '1')"), json!("1500m"));
        assert_eq!(ev("quantity(mul(10, 0.1), '1')"), json!("1"));
        assert_eq!(ev("quantity(1500, '1Ki')"), json!("1500"));
        assert_eq!(ev("bytes('1.5Gi')"), json!(1610612736));
        assert_eq!(ev("bytes('64M')"), json!(64000000));
        assert_eq!(ev("bytes('nope')"), json!(null));
        assert_eq!(ev("mul(2, 3, 4)"), json!(24));
        assert_eq!(ev("div(7, 2)"), json!(3));
        assert_eq!(ev("indexOf(.status.conditions, 'type', 'Paused')"), json!(1));
        assert_eq!(ev("indexOf(.status.conditions, 'type', 'Nope')"), json!(null));
        assert_eq!(ev("omitPrefixed(.metadata.annotations, 'x.io/')"), json!({}));
        assert_eq!(ev("omitPrefixed(.metadata.annotations, 'y.io/')"), ev(".metadata.annotations"));
        let d = ev("digest('quay.io/a:1')");
        assert_eq!(d, ev("digest('quay.io/a:1')"));
        assert_eq!(d.as_str().unwrap().len(), 7 + 64);
        assert_ne!(d, ev("digest('quay.io/a:2')"));
        let h = ev("hex(64)");
        assert!(
            h.as_str().unwrap().len() == 64
                && h.as_str().unwrap().bytes().all(|b| b.is_ascii_hexdigit())
        );
        // A seed makes the same name each time; another seed, another name.
        let seeded = ev("name('p-', 'uid-1')");
        assert_eq!(seeded, ev("name('p-', 'uid-1')"));
        assert_ne!(seeded, ev("name('p-', 'uid-2')"));
        assert!(seeded.as_str().unwrap()[2..]
            .bytes()
            .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
        assert_eq!(ev("len(.status.conditions)"), json!(2));
        assert_eq!(ev("len(.nope)"), json!(0));
        assert_eq!(ev("num('12.5%')"), json!(12.5));
        assert_eq!(ev("num(.metadata.name)"), Value::Null);
        assert_eq!(ev("nodeCount()"), json!(3));
        let other = ev("otherNode('sim-node-2')");
        assert!(["sim-node-1", "sim-node-3"].contains(&other.as_str().unwrap()), "{other}");
        let p = ev("percent(10, 20)");
        let n = number(&p).unwrap();
        assert!((10.0..20.0).contains(&n) && p.as_str().unwrap().ends_with('%'), "{p}");
        assert_eq!(p.as_str().unwrap().split('.').nth(1).unwrap().len(), 3, "{p}");
        assert_eq!(ev("sum(int(.metadata.annotations['x.io/gen']), 1)"), json!(4));
        assert_eq!(ev("sum(.nope, 1)"), json!(1));
        assert_eq!(ev("sum(1, 'x')"), Value::Null);
        for (count, lo, hi) in [(1, 10, 15), (2, 40, 60), (3, 90, 135), (9, 300, 300)] {
            let d = ev(&format!("backoff({count}, 10, 300)"));
            let secs = go_duration(d.as_str().unwrap()).unwrap();
            assert!((lo as f64..=hi as f64).contains(&secs), "{count}: {d}");
        }
        assert_eq!(ev("backoff(.nope, 10, 300)").as_str().unwrap().len(), 3);
        assert_eq!(ev("split('src-ns/disk', '/', 0)"), json!("src-ns"));
        assert_eq!(ev("split('src-ns/disk', '/', 1)"), json!("disk"));
        assert_eq!(ev("split('src-ns/disk', '/', 2)"), Value::Null);
        assert_eq!(ev("split(.nope, '/', 0)"), Value::Null);
        assert_eq!(
            ev("get(fromJson('{\"message\":\"Clone Complete\"}'), 'message')"),
            json!("Clone Complete")
        );
        assert_eq!(ev("fromJson('Import Complete')"), Value::Null);
    }

    #[test]
    fn times_durations_tokens_and_members() {
        assert_eq!(ev("addDuration('2026-01-01T00:00:00Z', '2h')"), json!("2026-01-01T02:00:00Z"));
        assert_eq!(
            ev("addDuration('2025-12-31T23:59:30Z', '1m30.5s')"),
            json!("2026-01-01T00:01:00Z")
        );
        assert_eq!(ev("addDuration('2026-03-01T00:00:00Z', '-1h')"), json!("2026-02-28T23:00:00Z"));
        assert_eq!(ev("addDuration('2026-01-01T00:00:00Z', '2 hours')"), Value::Null);
        assert_eq!(ev("addDuration('yesterday', '2h')"), Value::Null);
        assert_eq!(go_duration("2h0m0s"), Some(7200.0));
        assert_eq!(go_duration("300ms"), Some(0.3));
        assert_eq!(go_duration("0"), Some(0.0));
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("5"), None);
        for t in ["1970-01-01T00:00:00Z", "2024-02-29T12:34:56Z", "2100-12-31T23:59:59Z"] {
            assert_eq!(format_time(unix_seconds(t).unwrap()), t);
        }
        let token = ev("token(24)");
        let token = token.as_str().unwrap();
        assert!(token.len() == 24 && token.chars().all(|c| c.is_ascii_alphanumeric()), "{token}");
        let two = ev("concat(token(8), '-', token(8))");
        let (a, b) = two.as_str().unwrap().split_once('-').unwrap();
        assert_ne!(a, b);
        assert_eq!(ev("get(.metadata.annotations, 'x.io/gen')"), json!("3"));
        assert_eq!(ev("get(.metadata.annotations, .metadata.name)"), Value::Null);
        assert_eq!(ev("get(.metadata.name, 'a')"), Value::Null);
        assert_eq!(ev("unixTime('1970-01-02T00:00:00Z')"), json!(86_400));
        assert_eq!(ev("unixTime(.metadata.name)"), Value::Null);
    }

    #[test]
    fn a_ca_certificate_is_asked_of_the_environment_from_now() {
        // now() is 2026-01-01T00:00:00Z, 1767225600.
        assert_eq!(
            ev("caCert(concat('x@', unixTime(now())), '2026-01-01T02:00:00Z')"),
            json!("CA x@1767225600 1767225600..1767232800")
        );
        // A time already past is valid for no longer than its start.
        assert_eq!(ev("caCert('x', '2025-01-01T00:00:00Z')"), json!("CA x 1767225600..1767225600"));
        assert_eq!(ev("caCert('x', .nope)"), Value::Null);
        assert_eq!(ev("caCert(.nope, '2026-01-01T02:00:00Z')"), Value::Null);
    }

    #[test]
    fn label_selectors_print_as_kube_prints_them() {
        let t = env();
        let sel = json!({"matchLabels": {"b": "1", "a": "x"},
                         "matchExpressions": [{"key": "c", "operator": "In", "values": ["z", "y"]},
                                              {"key": "d", "operator": "DoesNotExist"}]});
        let mut obj = t.obj.clone();
        obj["sel"] = sel;
        let out = eval(&parse("labelSelector(.sel)").unwrap(), &obj, &t);
        assert_eq!(out, json!("a=x,b=1,c in (y,z),!d"));
        assert_eq!(eval(&parse("labelSelector(.nope)").unwrap(), &obj, &t), Value::Null);
    }

    #[test]
    fn a_seed_repeats_its_values() {
        assert_eq!(
            ev("concat(ip(), mac(), node(), uid())"),
            ev("concat(ip(), mac(), node(), uid())")
        );
        let mut a = Rng::derived(1, &["stage", "ns", "a"]);
        let mut b = Rng::derived(1, &["stage", "ns", "b"]);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn parse_errors_say_what() {
        assert!(parse("").is_err());
        assert!(parse("foo").unwrap_err().contains("neither"));
        assert!(parse(".a[").is_err());
        assert!(parse("f(1,").is_err());
        assert!(parse("'open").is_err());
        assert!(parse(".a b").unwrap_err().contains("unexpected"));
        assert_eq!(
            parse(" .a ").unwrap(),
            Expr::Path { root: None, segs: vec![Seg::Key("a".into())] }
        );
    }
}
