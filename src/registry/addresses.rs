//! Service addresses: what kube-apiserver's Service REST storage adds around the generic store
//! for the kind marked `x-virt-resource.serviceAddresses` (K8S
//! pkg/registry/core/service/storage/storage.go `beginCreate`/`beginUpdate`, `alloc.go`):
//! a `spec.clusterIP` from `--service-cluster-ip-range`, a `nodePort` per port of a NodePort or
//! LoadBalancer object from `--service-node-port-range`, the IP family fields, the conditional
//! defaults of K8S pkg/apis/core/v1/defaults.go `SetDefaults_Service`, and the validation of
//! what those touch. Pure functions over JSON: the addresses in use are handed in, read from
//! the stored objects (`registry::allocating`), so a deleted object releases its addresses
//! without bookkeeping and a restart loses nothing. One cluster IP family, IPv4.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::Ipv4Addr;

use serde_json::{json, Map, Value};

use crate::object::error::{ApiError, Cause};
use crate::object::At;
use crate::resource::ResourceInfo;

const CLUSTER_IP: &str = "ClusterIP";
const NODE_PORT: &str = "NodePort";
const LOAD_BALANCER: &str = "LoadBalancer";
const EXTERNAL_NAME: &str = "ExternalName";
const NONE: &str = "None";
const IPV4: &str = "IPv4";
const IPV6: &str = "IPv6";
const SINGLE_STACK: &str = "SingleStack";
const PREFER_DUAL_STACK: &str = "PreferDualStack";
const REQUIRE_DUAL_STACK: &str = "RequireDualStack";

/// kube's `IsValidIP` (apimachinery pkg/util/validation/ip.go).
const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// An IPv4 CIDR, `--service-cluster-ip-range`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: u32,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n`, the network address masked as Go's `ParseCIDR` masks it.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let bad = || format!("invalid CIDR address: {text}");
        let (ip, bits) = text.split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = bits.parse().ok().filter(|b| *b <= 32).ok_or_else(bad)?;
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        Ok(Cidr { network: u32::from(ip) & mask, prefix })
    }

    /// The bits of the address that are not the prefix's.
    pub fn host_bits(&self) -> u8 {
        32 - self.prefix
    }

    /// How many addresses the CIDR spans (`netutils.RangeSize`).
    fn size(&self) -> u64 {
        1u64 << (32 - self.prefix)
    }

    /// The first address services may hold (the network's own is never handed out): the one
    /// kube-apiserver gives its `default/kubernetes` Service.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network.wrapping_add(1))
    }

    /// The usable addresses, base and count: all but the network and broadcast addresses
    /// (K8S pkg/registry/core/service/ipallocator `New`).
    fn usable(&self) -> (u32, u64) {
        (self.network.wrapping_add(1), self.size().saturating_sub(2))
    }

    fn contains(&self, ip: u32) -> bool {
        let (base, max) = self.usable();
        ip >= base && u64::from(ip - base) < max
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// `--service-node-port-range`: `base-last`, or `base+size` as kube's `ParsePortRange` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    base: u32,
    size: u32,
}

impl PortRange {
    pub fn parse(text: &str) -> Result<PortRange, String> {
        let bad = || format!("invalid port range: {text:?}");
        let num = |s: &str| s.trim().parse::<u32>().ok().filter(|p| *p <= 65535).ok_or_else(bad);
        let (base, size) = if let Some((a, b)) = text.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(bad());
            }
            (a, b - a + 1)
        } else if let Some((a, n)) = text.split_once('+') {
            (num(a)?, num(n)?)
        } else {
            return Err(bad());
        };
        if base == 0 || size == 0 || base + size - 1 > 65535 {
            return Err(bad());
        }
        Ok(PortRange { base, size })
    }

    fn contains(&self, port: u32) -> bool {
        port >= self.base && port - self.base < self.size
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.base, self.base + self.size - 1)
    }
}

/// The ranges the flags name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranges {
    pub cluster_ips: Cidr,
    pub node_ports: PortRange,
}

impl Default for Ranges {
    /// kube-apiserver's defaults (K8S pkg/controlplane/apiserver/options: 10.96.0.0/12;
    /// `DefaultServiceNodePortRange` 30000-32767).
    fn default() -> Ranges {
        Ranges {
            cluster_ips: Cidr { network: u32::from(Ipv4Addr::new(10, 96, 0, 0)), prefix: 12 },
            node_ports: PortRange { base: 30000, size: 2768 },
        }
    }
}

/// The ranges and the lock every allocating write of this process holds from reading the
/// addresses in use to committing its own.
#[derive(Debug, Default)]
pub struct Addresses {
    pub ranges: Ranges,
    pub(super) lock: tokio::sync::Mutex<()>,
}

impl Addresses {
    pub fn new(ranges: Ranges) -> Addresses {
        Addresses { ranges, lock: tokio::sync::Mutex::new(()) }
    }
}

/// The addresses other objects hold.
#[derive(Debug, Default, Clone)]
pub struct InUse {
    ips: HashSet<u32>,
    ports: HashSet<u32>,
}

impl InUse {
    /// Counts what `obj` holds: its cluster IPs, node ports and health check node port.
    pub fn hold(&mut self, obj: &Value) {
        let Some(spec) = obj.get("spec").and_then(Value::as_object) else { return };
        for ip in list(spec, "clusterIPs").iter().chain([&field(spec, "clusterIP")]) {
            if let Ok(ip) = ip.parse::<Ipv4Addr>() {
                self.ips.insert(u32::from(ip));
            }
        }
        for port in ports(spec) {
            if let Some(np) = port.get("nodePort").and_then(Value::as_u64).filter(|p| *p != 0) {
                self.ports.insert(np as u32);
            }
        }
        if let Some(hc) =
            spec.get("healthCheckNodePort").and_then(Value::as_u64).filter(|p| *p != 0)
        {
            self.ports.insert(hc as u32);
        }
    }
}

/// Where random choices come from (tests fix it).
pub type Rng<'a> = &'a mut dyn FnMut(u64) -> u64;

/// The system's randomness: a uniform-enough value below `n` (> 0).
pub fn random(n: u64) -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).expect("system randomness");
    u64::from_le_bytes(bytes) % n
}

/// kube's `calculateRangeOffset`: the lower band of a range kept for static choices, picked
/// from only when the rest is full. IPs (ipallocator/bitmap.go): min(max(16, size/16), 256);
/// ports (portallocator/allocator.go): min(max(16, size/32), 128); 0 for ranges of 16 or fewer.
fn range_offset(size: u64, step: u64, max: u64) -> u64 {
    const MIN: u64 = 16;
    if size <= MIN {
        return 0;
    }
    (size / step).clamp(MIN, max)
}

/// kube's `randomScanStrategyWithOffset` (K8S pkg/registry/core/service/allocator/bitmap.go):
/// a random start in the upper band `[offset, max)`, scanning forward with wrap-around; then
/// the same in the lower band. The offset of a free slot, if any.
fn pick(max: u64, offset: u64, taken: impl Fn(u64) -> bool, rng: Rng<'_>) -> Option<u64> {
    let offset = offset.min(max);
    let upper = max - offset;
    if upper > 0 {
        let start = rng(upper);
        if let Some(at) = (0..upper).map(|i| offset + (start + i) % upper).find(|at| !taken(*at)) {
            return Some(at);
        }
    }
    if offset > 0 {
        let start = rng(offset);
        return (0..offset).map(|i| (start + i) % offset).find(|at| !taken(*at));
    }
    None
}

/// Allocation failures, in kube's words (K8S ipallocator/interfaces.go and
/// portallocator/allocator.go in 1.32).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    Full,
    IpAllocated,
    IpNotInRange(Ipv4Addr, Cidr),
    PortAllocated,
    PortNotInRange(PortRange),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Full => f.write_str("range is full"),
            Refusal::IpAllocated => f.write_str("provided IP is already allocated"),
            Refusal::IpNotInRange(ip, range) => write!(
                f,
                "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"
            ),
            Refusal::PortAllocated => f.write_str("provided port is already allocated"),
            Refusal::PortNotInRange(range) => write!(
                f,
                "provided port is not in the valid range. The range of valid ports is {range}"
            ),
        }
    }
}

/// One allocation over the addresses in use: what it has taken so far counts as in use too
/// (kube's `PortAllocationOperation`). A dry run checks what kube's dry-run allocators check
/// and takes nothing.
struct Op<'a> {
    ranges: &'a Ranges,
    in_use: &'a InUse,
    taken_ips: HashSet<u32>,
    taken_ports: HashSet<u32>,
    dry_run: bool,
    rng: Rng<'a>,
}

impl Op<'_> {
    /// `Range.Allocate`: a dry run checks only the range (ipallocator/bitmap.go `allocate`).
    fn allocate_ip(&mut self, ip: Ipv4Addr) -> Result<(), Refusal> {
        let n = u32::from(ip);
        if !self.ranges.cluster_ips.contains(n) {
            return Err(Refusal::IpNotInRange(ip, self.ranges.cluster_ips));
        }
        if self.dry_run {
            return Ok(());
        }
        if self.in_use.ips.contains(&n) || !self.taken_ips.insert(n) {
            return Err(Refusal::IpAllocated);
        }
        Ok(())
    }

    /// `Range.AllocateNext`; a dry run answers the range's network address, as kube's does.
    fn allocate_next_ip(&mut self) -> Result<Ipv4Addr, Refusal> {
        let cidr = self.ranges.cluster_ips;
        if self.dry_run {
            return Ok(Ipv4Addr::from(cidr.network));
        }
        let (base, max) = cidr.usable();
        let offset = range_offset(cidr.size(), 16, 256);
        let (in_use, taken) = (&self.in_use.ips, &self.taken_ips);
        let busy = |at: u64| {
            let ip = base.wrapping_add(at as u32);
            in_use.contains(&ip) || taken.contains(&ip)
        };
        let at = pick(max, offset, busy, &mut *self.rng).ok_or(Refusal::Full)?;
        let ip = base.wrapping_add(at as u32);
        self.taken_ips.insert(ip);
        Ok(Ipv4Addr::from(ip))
    }

    /// `PortAllocationOperation.Allocate`: a dry run checks only what is in use.
    fn allocate_port(&mut self, port: u32) -> Result<(), Refusal> {
        let range = self.ranges.node_ports;
        if !self.dry_run && !range.contains(port) {
            return Err(Refusal::PortNotInRange(range));
        }
        if self.in_use.ports.contains(&port) || !self.taken_ports.insert(port) {
            return Err(Refusal::PortAllocated);
        }
        Ok(())
    }

    fn allocate_next_port(&mut self) -> Result<u32, Refusal> {
        let range = self.ranges.node_ports;
        let offset = range_offset(u64::from(range.size), 32, 128);
        let (in_use, taken) = (&self.in_use.ports, &self.taken_ports);
        let busy = |at: u64| {
            let p = range.base + at as u32;
            in_use.contains(&p) || taken.contains(&p)
        };
        let at = pick(u64::from(range.size), offset, busy, &mut *self.rng).ok_or(Refusal::Full)?;
        let port = range.base + at as u32;
        self.taken_ports.insert(port);
        Ok(port)
    }
}

/// What an allocating write needs besides the object: the ranges, the addresses other objects
/// hold, whether it is a dry run, and where random choices come from.
pub struct Allocation<'a> {
    pub res: &'a ResourceInfo,
    pub ranges: &'a Ranges,
    pub in_use: &'a InUse,
    pub dry_run: bool,
    pub rng: Rng<'a>,
}

impl<'a> Allocation<'a> {
    fn op(self) -> (Op<'a>, &'a ResourceInfo) {
        let Allocation { res, ranges, in_use, dry_run, rng } = self;
        let op = Op {
            ranges,
            in_use,
            taken_ips: HashSet::new(),
            taken_ports: HashSet::new(),
            dry_run,
            rng,
        };
        (op, res)
    }

    /// A new object (`beginCreate`, then the strategy's validation of what it touched).
    pub fn create(self, obj: &mut Value) -> Result<(), ApiError> {
        let (mut op, res) = self.op();
        let name = name_of(obj);
        let spec = spec_mut(obj);
        normalize_cluster_ips(spec, None);
        init_ip_families(res, &name, spec, None)?;
        alloc_cluster_ips(res, &name, spec, &mut op)?;
        if needs_node_ports(spec) {
            init_node_ports(res, &name, spec, &mut op)?;
        }
        if needs_health_check(spec) {
            alloc_health_check_port(spec, &mut op)?;
        }
        validate(res, &name, spec, None)
    }

    /// An update of `old` (`beginUpdate`, the strategy's `dropTypeDependentFields`, then
    /// `ValidateServiceUpdate` for what those touched).
    pub fn update(self, old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        let (mut op, res) = self.op();
        let name = name_of(obj);
        let old = old.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
        let spec = spec_mut(obj);
        patch_allocated_values(spec, &old);
        normalize_cluster_ips(spec, Some(&old));
        if !matching_prefer_dual_stack(spec, &old) {
            init_ip_families(res, &name, spec, Some(&old))?;
            // Case A of `updateClusterIPs`: leaving ExternalName allocates; the other cases
            // release, which the stored state does by itself.
            if type_of(&old) == EXTERNAL_NAME && type_of(spec) != EXTERNAL_NAME {
                alloc_cluster_ips(res, &name, spec, &mut op)?;
            }
        }
        if needs_node_ports(spec) {
            update_node_ports(res, &name, spec, &old, &mut op)?;
        }
        update_health_check_port(spec, &old, &mut op)?;
        drop_type_dependent_fields(spec, &old);
        validate(res, &name, spec, Some(&old))
    }
}

/// The conditional parts of kube's `SetDefaults_Service` (K8S pkg/apis/core/v1/defaults.go),
/// applied on every decode as kube's defaulting is: `targetPort` = `port`, traffic policies,
/// `allocateLoadBalancerNodePorts`, and no `sessionAffinityConfig` without affinity. The
/// unconditional ones are the schema's.
pub fn default_fields(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    match spec.get("sessionAffinity").and_then(Value::as_str).unwrap_or("None") {
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP"
            if spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.at("/clientIP/timeoutSeconds"))
                .is_none_or(Value::is_null) =>
        {
            // `DefaultClientIPServiceAffinitySeconds`, three hours.
            let config = json!({"clientIP": {"timeoutSeconds": 10800}});
            spec.insert("sessionAffinityConfig".into(), config);
        }
        _ => {}
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            let unset = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if unset {
                if let Some(p) = port.get("port").cloned() {
                    port.insert("targetPort".into(), p);
                }
            }
        }
    }
    let type_ = type_of(spec).to_string();
    let external_ips = !strings(spec.get("externalIPs").unwrap_or(&Value::Null)).is_empty();
    // `service.ExternallyAccessible` (K8S pkg/api/service/util.go).
    let externally_accessible =
        type_ == LOAD_BALANCER || type_ == NODE_PORT || (type_ == CLUSTER_IP && external_ips);
    if externally_accessible
        && str_of(spec.get("externalTrafficPolicy").unwrap_or(&Value::Null)).is_empty()
    {
        spec.insert("externalTrafficPolicy".into(), "Cluster".into());
    }
    if spec.get("internalTrafficPolicy").is_none_or(Value::is_null)
        && [NODE_PORT, LOAD_BALANCER, CLUSTER_IP].contains(&type_.as_str())
    {
        spec.insert("internalTrafficPolicy".into(), "Cluster".into());
    }
    if type_ == LOAD_BALANCER
        && spec.get("allocateLoadBalancerNodePorts").is_none_or(Value::is_null)
    {
        spec.insert("allocateLoadBalancerNodePorts".into(), Value::Bool(true));
    }
}

type Spec = Map<String, Value>;

fn name_of(obj: &Value) -> String {
    obj.at("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string()
}

fn spec_mut(obj: &mut Value) -> &mut Spec {
    let Some(map) = obj.as_object_mut() else { unreachable!("objects are JSON objects") };
    let spec = map.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    spec.as_object_mut().expect("an object")
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(str_of).collect()).unwrap_or_default()
}

fn field(spec: &Spec, name: &str) -> String {
    spec.get(name).map(str_of).unwrap_or_default()
}

fn list(spec: &Spec, name: &str) -> Vec<String> {
    spec.get(name).map(strings).unwrap_or_default()
}

fn set_list(spec: &mut Spec, name: &str, values: &[String]) {
    if values.is_empty() {
        spec.remove(name);
    } else {
        spec.insert(name.into(), values.iter().map(|s| Value::String(s.clone())).collect());
    }
}

fn type_of(spec: &Spec) -> &str {
    spec.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()).unwrap_or(CLUSTER_IP)
}

fn policy(spec: &Spec) -> Option<String> {
    spec.get("ipFamilyPolicy").and_then(Value::as_str).map(str::to_string)
}

fn ports(spec: &Spec) -> Vec<Map<String, Value>> {
    spec.get("ports")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).cloned().collect())
        .unwrap_or_default()
}

fn node_port(port: &Map<String, Value>) -> u32 {
    port.get("nodePort").and_then(Value::as_u64).unwrap_or(0) as u32
}

fn port_number(port: &Map<String, Value>) -> i64 {
    port.get("port").and_then(Value::as_i64).unwrap_or(0)
}

fn set_node_port(spec: &mut Spec, i: usize, np: u32) {
    if let Some(port) =
        spec.get_mut("ports").and_then(|p| p.get_mut(i)).and_then(Value::as_object_mut)
    {
        if np == 0 {
            port.remove("nodePort");
        } else {
            port.insert("nodePort".into(), Value::from(np));
        }
    }
}

/// Go's `%#v` of a `[]string`, as field errors print one.
fn go_strings(list: &[String]) -> String {
    if list.is_empty() {
        return "[]string(nil)".into();
    }
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", items.join(", "))
}

fn invalid(res: &ResourceInfo, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(res, name, causes)
}

fn is_headless(spec: &Spec) -> bool {
    list(spec, "clusterIPs") == [NONE]
}

fn has_selector(spec: &Spec) -> bool {
    spec.get("selector").and_then(Value::as_object).is_some_and(|s| !s.is_empty())
}

fn needs_node_ports(spec: &Spec) -> bool {
    matches!(type_of(spec), NODE_PORT | LOAD_BALANCER)
}

/// `shouldAllocateNodePorts` (alloc.go).
fn should_allocate_node_ports(spec: &Spec) -> bool {
    match type_of(spec) {
        NODE_PORT => true,
        LOAD_BALANCER => {
            spec.get("allocateLoadBalancerNodePorts").and_then(Value::as_bool) != Some(false)
        }
        _ => false,
    }
}

/// `apiservice.NeedsHealthCheck`: a LoadBalancer that keeps traffic local.
fn needs_health_check(spec: &Spec) -> bool {
    type_of(spec) == LOAD_BALANCER && field(spec, "externalTrafficPolicy") == "Local"
}

/// storage.go `normalizeClusterIPs`: `clusterIP` and `clusterIPs` kept in step for clients
/// that know only the first.
fn normalize_cluster_ips(spec: &mut Spec, old: Option<&Spec>) {
    let (ip, ips) = (field(spec, "clusterIP"), list(spec, "clusterIPs"));
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            set_list(spec, "clusterIPs", &[ip]);
        }
        return;
    };
    let (old_ip, old_ips) = (field(old, "clusterIP"), list(old, "clusterIPs"));
    let mut ips = ips;
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        ips = old_ips.clone();
        set_list(spec, "clusterIPs", &ips);
    }
    if old_ip != ip {
        let same = old_ips == ips;
        if !old_ip.is_empty() && ip.is_empty() {
            if same {
                spec.remove("clusterIPs");
            }
        } else if same {
            set_list(spec, "clusterIPs", &[ip]);
        }
    }
}

/// storage.go `patchAllocatedValues`: a client resubmitting what it created keeps the addresses
/// it was given.
fn patch_allocated_values(spec: &mut Spec, old: &Spec) {
    if type_of(old) != EXTERNAL_NAME && type_of(spec) != EXTERNAL_NAME {
        if field(spec, "clusterIP").is_empty() {
            if let Some(v) = old.get("clusterIP") {
                spec.insert("clusterIP".into(), v.clone());
            }
        }
        if list(spec, "clusterIPs").is_empty() && !list(old, "clusterIPs").is_empty() {
            spec.insert("clusterIPs".into(), old["clusterIPs"].clone());
        }
    }
    if needs_node_ports(old) && needs_node_ports(spec) {
        let used = |s: &Spec| -> HashSet<u32> {
            ports(s).iter().map(node_port).filter(|p| *p != 0).collect()
        };
        let both: HashSet<u32> = used(old).intersection(&used(spec)).copied().collect();
        let by_name: BTreeMap<String, u32> = ports(old)
            .iter()
            .map(|p| (p.get("name").map(str_of).unwrap_or_default(), node_port(p)))
            .collect();
        for (i, p) in ports(spec).iter().enumerate() {
            if node_port(p) == 0 {
                let old_value = by_name.get(&p.get("name").map(str_of).unwrap_or_default());
                if let Some(&v) = old_value.filter(|v| !both.contains(v)) {
                    set_node_port(spec, i, v);
                }
            }
        }
    }
    if needs_health_check(old) && needs_health_check(spec) {
        let unset = spec.get("healthCheckNodePort").and_then(Value::as_u64).unwrap_or(0) == 0;
        if let Some(v) = old.get("healthCheckNodePort").filter(|_| unset) {
            spec.insert("healthCheckNodePort".into(), v.clone());
        }
    }
}

/// `isMatchingPreferDualStackClusterIPFields`: a PreferDualStack object whose addresses and
/// families did not change is left as it is.
fn matching_prefer_dual_stack(spec: &Spec, old: &Spec) -> bool {
    policy(spec).as_deref() == Some(PREFER_DUAL_STACK)
        && policy(old).as_deref() == Some(PREFER_DUAL_STACK)
        && list(spec, "clusterIPs") == list(old, "clusterIPs")
        && list(spec, "ipFamilies") == list(old, "ipFamilies")
}

/// alloc.go `initIPFamilyFields` on a cluster with one family, IPv4, preceded by validation's
/// `ValidateServiceClusterIPsRelatedFields` (K8S pkg/apis/core/validation/validation.go).
fn init_ip_families(
    res: &ResourceInfo,
    name: &str,
    spec: &mut Spec,
    old: Option<&Spec>,
) -> Result<(), ApiError> {
    if type_of(spec) == EXTERNAL_NAME {
        return Ok(());
    }
    if policy(spec).is_none() {
        let policy = match old.and_then(policy) {
            Some(p) => p,
            // Headless and selectorless defaults to dual.
            None if field(spec, "clusterIP") == NONE && !has_selector(spec) => {
                REQUIRE_DUAL_STACK.into()
            }
            None => SINGLE_STACK.into(),
        };
        spec.insert("ipFamilyPolicy".into(), Value::String(policy));
    }
    let causes = cluster_ip_causes(spec);
    if !causes.is_empty() {
        return Err(invalid(res, name, causes));
    }
    let ips = list(spec, "clusterIPs");
    let mut families = list(spec, "ipFamilies");
    let policy = policy(spec).unwrap_or_default();
    let mut causes = Vec::new();
    if policy == SINGLE_STACK {
        let detail = |what| {
            format!("must be 'RequireDualStack' or 'PreferDualStack' when multiple {what} are specified")
        };
        if ips.len() == 2 {
            causes.push(Cause::invalid(
                "spec.ipFamilyPolicy",
                &format!("{policy:?}"),
                &detail("cluster IPs"),
            ));
        }
        if families.len() == 2 {
            causes.push(Cause::invalid(
                "spec.ipFamilyPolicy",
                &format!("{policy:?}"),
                &detail("IP families"),
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip == NONE {
            break;
        }
        if i >= families.len() {
            if ip.parse::<Ipv4Addr>().is_ok() {
                families.push(IPV4.into());
            } else {
                causes.push(Cause::invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    &go_strings(&ips),
                    &format!("{IPV6} is not configured on this cluster"),
                ));
            }
        }
    }
    if !causes.is_empty() {
        return Err(invalid(res, name, causes));
    }
    if field(spec, "clusterIP") == NONE && !has_selector(spec) {
        if families.is_empty() {
            families.push(IPV4.into());
        }
        if families.len() < 2 && policy != SINGLE_STACK {
            let other = if families[0] == IPV4 { IPV6 } else { IPV4 };
            families.push(other.into());
        }
        set_list(spec, "ipFamilies", &families);
        return Ok(());
    }
    if policy == REQUIRE_DUAL_STACK {
        causes.push(Cause::invalid(
            "spec.ipFamilyPolicy",
            &format!("{policy:?}"),
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != IPV4 {
            causes.push(Cause::invalid(
                &format!("spec.ipFamilies[{i}]"),
                &format!("{family:?}"),
                "not configured on this cluster",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(invalid(res, name, causes));
    }
    if families.is_empty() {
        families.push(IPV4.into());
    }
    set_list(spec, "ipFamilies", &families);
    Ok(())
}

/// The address checks of `ValidateServiceClusterIPsRelatedFields` that need no second family.
fn cluster_ip_causes(spec: &Spec) -> Vec<Cause> {
    let (ip, ips) = (field(spec, "clusterIP"), list(spec, "clusterIPs"));
    let mut causes = Vec::new();
    if !ip.is_empty() {
        if ips.is_empty() {
            causes.push(Cause::required("spec.clusterIPs", ""));
        } else if ips[0] != ip {
            causes.push(Cause::invalid(
                "spec.clusterIPs",
                &go_strings(&ips),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        causes.push(Cause::invalid(
            "spec.clusterIPs",
            &go_strings(&ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == NONE {
            if ips.len() > 1 {
                causes.push(Cause::invalid(
                    "spec.clusterIPs",
                    &go_strings(&ips),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if ip.parse::<std::net::IpAddr>().is_err() {
            causes.push(Cause::invalid(
                &format!("spec.clusterIPs[{i}]"),
                &format!("{ip:?}"),
                INVALID_IP,
            ));
        }
    }
    if ips.len() > 2 {
        causes.push(Cause::invalid(
            "spec.clusterIPs",
            &go_strings(&ips),
            "may only hold up to 2 values",
        ));
    }
    causes
}

/// alloc.go `allocClusterIPs`/`allocIPs` for the one family.
fn alloc_cluster_ips(
    res: &ResourceInfo,
    name: &str,
    spec: &mut Spec,
    op: &mut Op<'_>,
) -> Result<(), ApiError> {
    if type_of(spec) == EXTERNAL_NAME || is_headless(spec) {
        return Ok(());
    }
    let mut ips = list(spec, "clusterIPs");
    let wanted = ips.first().cloned().unwrap_or_default();
    let ip = if wanted.is_empty() {
        op.allocate_next_ip()
            .map_err(|e| ApiError::Internal(format!("failed to allocate a serviceIP: {e}")))?
    } else {
        // Validated above: an IPv4 address (an IPv6 one failed as a family not configured).
        let parsed: Ipv4Addr = wanted.parse().map_err(|_| {
            invalid(
                res,
                name,
                vec![Cause::invalid("spec.clusterIPs[0]", &format!("{wanted:?}"), INVALID_IP)],
            )
        })?;
        op.allocate_ip(parsed).map_err(|e| {
            let detail = format!("failed to allocate IP {wanted}: {e}");
            invalid(res, name, vec![Cause::invalid("spec.clusterIPs", &go_strings(&ips), &detail)])
        })?;
        parsed
    };
    if ips.is_empty() {
        ips.push(String::new());
    }
    ips[0] = ip.to_string();
    spec.insert("clusterIP".into(), Value::String(ips[0].clone()));
    set_list(spec, "clusterIPs", &ips);
    Ok(())
}

/// The field error for a node port kube's allocator refused.
fn port_refused(res: &ResourceInfo, name: &str, i: usize, port: u32, e: Refusal) -> ApiError {
    let path = format!("spec.ports[{i}].nodePort");
    invalid(res, name, vec![Cause::invalid(&path, &port.to_string(), &e.to_string())])
}

fn next_port_failed(e: Refusal) -> ApiError {
    ApiError::Internal(format!("failed to allocate a nodePort: {e}"))
}

/// alloc.go `initNodePorts`: ports sharing a port number share a node port.
fn init_node_ports(
    res: &ResourceInfo,
    name: &str,
    spec: &mut Spec,
    op: &mut Op<'_>,
) -> Result<(), ApiError> {
    let all = ports(spec);
    let mut by_port: BTreeMap<i64, u32> = BTreeMap::new();
    for (i, port) in all.iter().enumerate() {
        let np = node_port(port);
        if np == 0 && !should_allocate_node_ports(spec) {
            continue;
        }
        let number = port_number(port);
        match by_port.get(&number).copied() {
            None => {
                // `findRequestedNodePort`: the first node port asked for this port number.
                let requested = all
                    .iter()
                    .find(|p| port_number(p) == number && node_port(p) != 0)
                    .map(node_port)
                    .unwrap_or(0);
                let chosen = if requested != 0 {
                    op.allocate_port(requested)
                        .map_err(|e| port_refused(res, name, i, requested, e))?;
                    requested
                } else {
                    op.allocate_next_port().map_err(next_port_failed)?
                };
                set_node_port(spec, i, chosen);
                by_port.insert(number, chosen);
            }
            Some(allocated) if np != allocated => {
                if np == 0 {
                    set_node_port(spec, i, allocated);
                } else {
                    op.allocate_port(np).map_err(|e| port_refused(res, name, i, np, e))?;
                }
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// alloc.go `updateNodePorts`: new node ports are allocated, those the object already held
/// are kept.
fn update_node_ports(
    res: &ResourceInfo,
    name: &str,
    spec: &mut Spec,
    old: &Spec,
    op: &mut Op<'_>,
) -> Result<(), ApiError> {
    let held: HashSet<u32> = ports(old).iter().map(node_port).filter(|p| *p != 0).collect();
    let mut seen: Vec<(String, u32)> = Vec::new();
    for (i, port) in ports(spec).iter().enumerate() {
        let mut np = node_port(port);
        if np == 0 && !should_allocate_node_ports(spec) {
            continue;
        }
        if np != 0 {
            if !held.contains(&np) && !op.taken_ports.contains(&np) {
                op.allocate_port(np).map_err(|e| port_refused(res, name, i, np, e))?;
            }
        } else {
            np = op.allocate_next_port().map_err(next_port_failed)?;
            set_node_port(spec, i, np);
        }
        let protocol = port.get("protocol").map(str_of).unwrap_or_else(|| "TCP".into());
        if seen.iter().any(|(p, n)| *p == protocol && *n == np) {
            // A plain error in kube: answered 500 with no reason.
            return Err(ApiError::Unknown(format!("duplicate nodePort: {{{protocol} {np}}}")));
        }
        seen.push((protocol, np));
    }
    Ok(())
}

/// alloc.go `allocHealthCheckNodePort`.
fn alloc_health_check_port(spec: &mut Spec, op: &mut Op<'_>) -> Result<(), ApiError> {
    let wanted = spec.get("healthCheckNodePort").and_then(Value::as_u64).unwrap_or(0) as u32;
    if wanted != 0 {
        return op.allocate_port(wanted).map_err(|e| {
            ApiError::Internal(format!(
                "failed to allocate requested HealthCheck NodePort {wanted}: {e}"
            ))
        });
    }
    let port = op.allocate_next_port().map_err(|e| {
        ApiError::Internal(format!("failed to allocate a HealthCheck NodePort 0: {e}"))
    })?;
    spec.insert("healthCheckNodePort".into(), Value::from(port));
    Ok(())
}

/// alloc.go `updateHealthCheckNodePort`, its first case: a LoadBalancer turning to local
/// traffic gets a port.
fn update_health_check_port(spec: &mut Spec, old: &Spec, op: &mut Op<'_>) -> Result<(), ApiError> {
    match (needs_health_check(old), needs_health_check(spec)) {
        (false, true) => alloc_health_check_port(spec, op),
        // Giving one up is the stored state's; `drop_type_dependent_fields` clears the field.
        _ => Ok(()),
    }
}

/// The strategy's `dropTypeDependentFields` (K8S pkg/registry/core/service/strategy.go): what
/// a type change makes meaningless goes, unless the client changed it too.
fn drop_type_dependent_fields(spec: &mut Spec, old: &Spec) {
    if type_of(old) != EXTERNAL_NAME && type_of(spec) == EXTERNAL_NAME {
        if field(old, "clusterIP") == field(spec, "clusterIP")
            && list(old, "clusterIPs") == list(spec, "clusterIPs")
        {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        if list(old, "ipFamilies") == list(spec, "ipFamilies") {
            spec.remove("ipFamilies");
        }
        if policy(old) == policy(spec) {
            spec.remove("ipFamilyPolicy");
        }
    }
    if needs_node_ports(old) && !needs_node_ports(spec) {
        let held: HashSet<u32> = ports(old).iter().map(node_port).filter(|p| *p != 0).collect();
        let all = ports(spec);
        if all.iter().map(node_port).filter(|p| *p != 0).all(|p| held.contains(&p)) {
            for i in 0..all.len() {
                set_node_port(spec, i, 0);
            }
        }
    }
    if needs_health_check(old)
        && !needs_health_check(spec)
        && old.get("healthCheckNodePort") == spec.get("healthCheckNodePort")
    {
        spec.remove("healthCheckNodePort");
    }
    if type_of(old) == LOAD_BALANCER && type_of(spec) != LOAD_BALANCER {
        let (o, n) =
            (old.get("allocateLoadBalancerNodePorts"), spec.get("allocateLoadBalancerNodePorts"));
        if o.is_some_and(Value::is_boolean) && o == n {
            spec.remove("allocateLoadBalancerNodePorts");
        }
        if old.get("loadBalancerClass") == spec.get("loadBalancerClass") {
            spec.remove("loadBalancerClass");
        }
    }
    if needs_node_ports(old)
        && !needs_node_ports(spec)
        && old.get("externalTrafficPolicy") == spec.get("externalTrafficPolicy")
    {
        spec.remove("externalTrafficPolicy");
    }
}

/// What `ValidateService`/`ValidateServiceUpdate` say of the fields allocation touches (K8S
/// pkg/apis/core/validation/validation.go): node ports only where the type uses them, and
/// cluster IPs that never change once set (`validateUpgradeDowngradeClusterIPs`).
fn validate(
    res: &ResourceInfo,
    name: &str,
    spec: &Spec,
    old: Option<&Spec>,
) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    if type_of(spec) == CLUSTER_IP {
        for (i, port) in ports(spec).iter().enumerate() {
            if node_port(port) != 0 {
                causes.push(Cause::forbidden(
                    &format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let old = old.filter(|o| type_of(o) != EXTERNAL_NAME && type_of(spec) != EXTERNAL_NAME);
    if let Some(old) = old.filter(|o| !(is_headless(o) && is_headless(spec))) {
        let (before, after) = (list(old, "clusterIPs"), list(spec, "clusterIPs"));
        let changed = "may not change once set";
        if before.len() == after.len() {
            for (i, ip) in before.iter().enumerate() {
                if *ip != after[i] {
                    causes.push(Cause::invalid(
                        &format!("spec.clusterIPs[{i}]"),
                        &go_strings(&after),
                        changed,
                    ));
                }
            }
        } else if before.len() > after.len() {
            if after.is_empty() {
                let detail = "primary clusterIP can not be unset";
                causes.push(Cause::invalid("spec.clusterIPs[0]", &go_strings(&after), detail));
            } else if after[0] != before[0] {
                causes.push(Cause::invalid("spec.clusterIPs[0]", &go_strings(&after), changed));
            }
        } else if !before.is_empty() && after[0] != before[0] {
            causes.push(Cause::invalid("spec.clusterIPs[0]", &go_strings(&after), changed));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(invalid(res, name, causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res() -> &'static ResourceInfo {
        &ResourceInfo::EXAMPLE
    }

    /// A fixed sequence of random values (each taken modulo the bound).
    fn seq(values: &[u64]) -> impl FnMut(u64) -> u64 + '_ {
        let mut i = 0;
        move |n| {
            let v = values[i % values.len()] % n;
            i += 1;
            v
        }
    }

    fn small() -> Ranges {
        Ranges {
            cluster_ips: Cidr::parse("10.0.0.0/24").unwrap(),
            node_ports: PortRange::parse("30000-30099").unwrap(),
        }
    }

    fn create(
        ranges: &Ranges,
        in_use: &InUse,
        obj: &mut Value,
        rng: Rng<'_>,
    ) -> Result<(), ApiError> {
        Allocation { res: res(), ranges, in_use, dry_run: false, rng }.create(obj)
    }

    fn message(e: &ApiError) -> String {
        e.to_status().message.unwrap_or_default()
    }

    #[test]
    fn flags_parse_as_kube_takes_them() {
        let cidr = Cidr::parse("10.96.0.0/12").unwrap();
        assert_eq!(cidr, Ranges::default().cluster_ips);
        assert_eq!(cidr.first(), Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(Cidr::parse("192.168.7.9/24").unwrap().to_string(), "192.168.7.0/24");
        for bad in ["10.96.0.0", "10.96.0.0/33", "x/12", "fd00::/108"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        let ports = PortRange::parse("30000-32767").unwrap();
        assert_eq!(
            (ports, ports.to_string()),
            (Ranges::default().node_ports, "30000-32767".into())
        );
        assert_eq!(PortRange::parse("30000+100").unwrap().to_string(), "30000-30099");
        for bad in ["30000", "2-1", "0-10", "1-70000", "a-b"] {
            assert!(PortRange::parse(bad).is_err(), "{bad}");
        }
    }

    /// The offsets kube computes (its allocator tests: a /12 keeps 256 addresses, the default
    /// port range 86 ports, for static choices).
    #[test]
    fn the_lower_band_is_kept_for_static_choices() {
        assert_eq!(range_offset(1 << 20, 16, 256), 256);
        assert_eq!(range_offset(256, 16, 256), 16);
        assert_eq!(range_offset(16, 16, 256), 0);
        assert_eq!(range_offset(2768, 32, 128), 86);
        // The upper band first, from a random start with wrap-around, then the lower band.
        let mut rng = seq(&[0]);
        assert_eq!(pick(10, 4, |_| false, &mut rng), Some(4));
        let mut rng = seq(&[5]);
        assert_eq!(pick(10, 4, |at| at == 9, &mut rng), Some(4));
        let mut rng = seq(&[1]);
        assert_eq!(pick(10, 4, |at| at >= 4 || at == 1, &mut rng), Some(2));
        assert_eq!(pick(10, 4, |_| true, &mut rng), None);
        assert_eq!(pick(3, 0, |at| at != 2, &mut rng), Some(2));
    }

    #[test]
    fn a_new_object_gets_an_address_and_node_ports_from_the_upper_bands() {
        let ranges = small();
        let mut obj = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort",
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"},
                      {"port": 81, "nodePort": 30005}]}});
        let mut rng = seq(&[0]);
        create(&ranges, &InUse::default(), &mut obj, &mut rng).unwrap();
        // A /24: 254 usable, 16 kept; the upper band starts at 10.0.0.17.
        assert_eq!(obj["spec"]["clusterIP"], "10.0.0.17");
        assert_eq!(obj["spec"]["clusterIPs"], json!(["10.0.0.17"]));
        assert_eq!(obj["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(obj["spec"]["ipFamilyPolicy"], "SingleStack");
        // 100 ports keep 16: the first dynamic one is 30016, shared by both protocols of 80.
        let nps: Vec<&Value> =
            obj["spec"]["ports"].as_array().unwrap().iter().map(|p| &p["nodePort"]).collect();
        assert_eq!(nps, [&json!(30016), &json!(30016), &json!(30005)]);
    }

    #[test]
    fn what_is_held_is_refused_in_kubes_words() {
        let ranges = small();
        let mut in_use = InUse::default();
        in_use.hold(&json!({"spec": {"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                                     "ports": [{"port": 1, "nodePort": 30001}]}}));
        let mut rng = seq(&[0]);
        let mut taken = json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.5"}});
        let e = create(&ranges, &in_use, &mut taken, &mut rng).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            message(&e),
            format!("{} \"s\" is invalid: spec.clusterIPs: Invalid value: []string{{\"10.0.0.5\"}}: failed to allocate IP 10.0.0.5: provided IP is already allocated", res().group_kind())
        );
        let mut outside = json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.1.5"}});
        let e = create(&ranges, &in_use, &mut outside, &mut rng).unwrap_err();
        assert!(message(&e).ends_with("failed to allocate IP 10.0.1.5: the provided IP (10.0.1.5) is not in the valid range. The range of valid IPs is 10.0.0.0/24"), "{}", message(&e));
        let mut port = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 1, "nodePort": 30001}]}});
        let e = create(&ranges, &in_use, &mut port, &mut rng).unwrap_err();
        assert!(
            message(&e).ends_with(
                "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"
            ),
            "{}",
            message(&e)
        );
        let mut port = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 1, "nodePort": 80}]}});
        let e = create(&ranges, &in_use, &mut port, &mut rng).unwrap_err();
        assert!(message(&e).ends_with("spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-30099"), "{}", message(&e));
        let mut cip =
            json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 1, "nodePort": 30050}]}});
        let e = create(&ranges, &in_use, &mut cip, &mut rng).unwrap_err();
        assert!(
            message(&e).ends_with(
                "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
            ),
            "{}",
            message(&e)
        );
    }

    #[test]
    fn a_full_range_is_an_internal_error_and_headless_takes_nothing() {
        let ranges = Ranges { cluster_ips: Cidr::parse("10.0.0.0/30").unwrap(), ..small() };
        let mut in_use = InUse::default();
        in_use.hold(&json!({"spec": {"clusterIPs": ["10.0.0.1"]}}));
        in_use.hold(&json!({"spec": {"clusterIPs": ["10.0.0.2"]}}));
        let mut rng = seq(&[0]);
        let mut obj = json!({"metadata": {"name": "s"}, "spec": {}});
        let e = create(&ranges, &in_use, &mut obj, &mut rng).unwrap_err();
        assert_eq!(
            (e.code(), message(&e)),
            (500, "Internal error occurred: failed to allocate a serviceIP: range is full".into())
        );
        let mut headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        create(&ranges, &in_use, &mut headless, &mut rng).unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        // Headless and selectorless: RequireDualStack and both families, as kube answers.
        assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    }

    #[test]
    fn an_update_keeps_what_was_allocated_and_type_changes_move_node_ports() {
        let ranges = small();
        let in_use = InUse::default();
        let mut rng = seq(&[3]);
        let mut old = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
        create(&ranges, &in_use, &mut old, &mut rng).unwrap();
        let update = |new: &mut Value, rng: Rng<'_>| {
            Allocation { res: res(), ranges: &ranges, in_use: &in_use, dry_run: false, rng }
                .update(&old, new)
        };
        // Resubmitting the created body keeps its address.
        let mut again = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
        update(&mut again, &mut rng).unwrap();
        assert_eq!(again["spec"]["clusterIPs"], old["spec"]["clusterIPs"]);
        let mut moved = again.clone();
        moved["spec"]["clusterIP"] = json!("10.0.0.99");
        moved["spec"]["clusterIPs"] = json!(["10.0.0.99"]);
        let e = update(&mut moved, &mut rng).unwrap_err();
        assert!(message(&e).ends_with("spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.99\"}: may not change once set"), "{}", message(&e));
        let mut node_port = again.clone();
        node_port["spec"]["type"] = json!("NodePort");
        update(&mut node_port, &mut rng).unwrap();
        let np = node_port["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
        assert!((30016..30100).contains(&np), "{np}");
        let before = std::mem::replace(&mut old, node_port.clone());
        let mut back = node_port.clone();
        back["spec"]["type"] = json!("ClusterIP");
        let update = |new: &mut Value, rng: Rng<'_>| {
            Allocation { res: res(), ranges: &ranges, in_use: &in_use, dry_run: false, rng }
                .update(&old, new)
        };
        update(&mut back, &mut rng).unwrap();
        assert_eq!(back["spec"]["ports"][0].get("nodePort"), None);
        assert_eq!(back["spec"]["clusterIPs"], before["spec"]["clusterIPs"]);
    }

    #[test]
    fn conditional_defaults_follow_the_type() {
        let mut obj = json!({"spec": {"type": "NodePort", "sessionAffinity": "None",
            "sessionAffinityConfig": {"clientIP": {}},
            "ports": [{"port": 80}, {"port": 81, "targetPort": "http"}, {"port": 82, "targetPort": 0}]}});
        default_fields(&mut obj);
        let spec = &obj["spec"];
        let targets: Vec<&Value> =
            spec["ports"].as_array().unwrap().iter().map(|p| &p["targetPort"]).collect();
        assert_eq!(targets, [&json!(80), &json!("http"), &json!(82)]);
        assert_eq!(
            (&spec["externalTrafficPolicy"], &spec["internalTrafficPolicy"]),
            (&json!("Cluster"), &json!("Cluster"))
        );
        assert_eq!(spec.get("sessionAffinityConfig"), None);
        let mut obj = json!({"spec": {"type": "ClusterIP", "sessionAffinity": "ClientIP"}});
        default_fields(&mut obj);
        assert_eq!(obj["spec"].get("externalTrafficPolicy"), None);
        assert_eq!(
            obj["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
        let mut obj = json!({"spec": {"type": "ExternalName", "externalName": "x.example"}});
        default_fields(&mut obj);
        assert_eq!(obj["spec"].get("internalTrafficPolicy"), None);
    }
}
