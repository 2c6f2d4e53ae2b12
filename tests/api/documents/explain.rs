//! `kubectl explain` answers from our OpenAPI document: kinds' spec and status fields, their types,
//! enums and list keys, as kubectl 1.32 reads them from `/openapi/v3`, and from `/openapi/v2` as
//! protobuf with `--output plaintext-openapiv2`.

use crate::common::{Kubectl, TestServer};

/// The `FIELDS:` entries of an explain answer: `(name, type)` in order.
fn fields(explained: &str) -> Vec<(String, String)> {
    explained
        .split("FIELDS:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    ") && l.contains('\t'))
        .map(|l| {
            let (name, ty) = l.trim().split_once('\t').expect("name<TAB>type");
            (name.to_string(), ty.trim().to_string())
        })
        .collect()
}

#[test]
fn explain_vm_spec_lists_the_declared_fields() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vm.spec"]);
    assert!(out.contains("KIND:       VirtualMachine"), "{out}");
    assert!(out.contains("VERSION:    v1"), "{out}");
    assert!(out.contains("Desired state of the VirtualMachine."), "{out}");
    let names: Vec<(String, String)> = fields(&out);
    let want = [
        ("dataVolumeTemplates", "<[]Object>"),
        ("instancetype", "<Object>"),
        ("preference", "<Object>"),
        ("runStrategy", "<string>"),
        ("running", "<boolean>"),
        ("template", "<Object>"),
        ("updateVolumesStrategy", "<string>"),
    ];
    let want: Vec<(String, String)> =
        want.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    assert_eq!(names, want, "{out}");
    assert!(out.contains("enum: Always, RerunOnFailure, Manual, Halted, ...."), "{out}");

    let out = k.ok(&["explain", "vm.spec.runStrategy"]);
    let enum_block: Vec<&str> = out
        .split("ENUM:")
        .nth(1)
        .expect("an ENUM block")
        .lines()
        .skip(1)
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        enum_block,
        ["Always", "RerunOnFailure", "Manual", "Halted", "Once", "WaitAsReceiver"],
        "{out}"
    );
}

#[test]
fn explain_status_nested_fields_and_other_groups() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vm.status.conditions"]);
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["lastProbeTime", "lastTransitionTime", "message", "reason", "status", "type"],
        "{out}"
    );
    assert!(out.contains("type\t<string> -required-"), "{out}");

    let out = k.ok(&["explain", "vm.spec.instancetype"]);
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["inferFromVolume", "inferFromVolumeFailurePolicy", "kind", "name", "revisionName"],
        "{out}"
    );

    let out = k.ok(&["explain", "dv.spec"]);
    assert!(out.contains("GROUP:      cdi.kubevirt.io"), "{out}");
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    for f in ["contentType", "preallocation", "pvc", "source", "sourceRef", "storage"] {
        assert!(names.iter().any(|n| n == f), "dv.spec lists {f}: {out}");
    }
    assert!(out.contains("enum: kubevirt, archive"), "{out}");

    let out = k.ok(&["explain", "dv.status.restartCount"]);
    assert!(out.contains("FIELD: restartCount <integer>"), "{out}");

    let out = k.ok(&["explain", "vmirs.spec.replicas"]);
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");

    let out = k.ok(&["explain", "vmim.spec"]);
    assert!(fields(&out).iter().any(|(n, t)| n == "vmiName" && t == "<string>"), "{out}");

    // Another version of the same kind answers from its own definition.
    let out = k.ok(&["explain", "vm.spec.runStrategy", "--api-version=kubevirt.io/v1alpha3"]);
    assert!(out.contains("VERSION:    v1alpha3"), "{out}");
    assert!(out.contains("WaitAsReceiver"), "{out}");
}

#[test]
fn explain_vm_metadata_and_the_openapi_v2_protobuf() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vm"]);
    assert!(out.contains("GROUP:      kubevirt.io"), "{out}");
    assert!(out.contains("KIND:       VirtualMachine"), "{out}");
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["apiVersion", "kind", "metadata", "spec", "status"], "{out}");

    let out = k.ok(&["explain", "vm.metadata.labels"]);
    assert!(out.contains("FIELD: labels <map[string]string>"), "{out}");
    assert!(out.contains("Map of string keys and values"), "{out}");

    // The v2 path: client-go's OpenAPISchema() reads /openapi/v2 as gnostic protobuf.
    let out = k.ok(&["explain", "vm", "--output", "plaintext-openapiv2"]);
    assert!(out.contains("KIND:     VirtualMachine"), "{out}");
    assert!(out.contains("VERSION:  kubevirt.io/v1"), "{out}");
    for field in
        ["apiVersion\t<string>", "metadata\t<Object>", "spec\t<Object>", "status\t<Object>"]
    {
        assert!(out.contains(field), "{field}: {out}");
    }
    assert!(out.contains("Desired state of the VirtualMachine."), "{out}");
    let out = k.ok(&["explain", "vm.metadata.labels", "--output", "plaintext-openapiv2"]);
    assert!(out.contains("FIELD:    labels <map[string]string>"), "{out}");
    let out = k.ok(&["explain", "dv.spec", "--output", "plaintext-openapiv2"]);
    assert!(out.contains("KIND:     DataVolume"), "{out}");
    assert!(out.contains("Desired DataVolume."), "{out}");
}

/// `spec.domain.rebootPolicy` (KubeVirt pkg/virt-launcher/virtwrap/converter/compute/
/// reboot_policy.go reads it; the simulated guest honours it) is declared, not only kept.
#[test]
fn explain_shows_the_domains_reboot_policy() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vmi.spec.domain.rebootPolicy"]);
    assert!(out.contains("FIELD: rebootPolicy <string>"), "{out}");
    assert!(out.contains("Terminate ends the VMI"), "{out}");
    let out = k.ok(&["explain", "vm.spec.template.spec.domain"]);
    assert!(fields(&out).contains(&("rebootPolicy".to_string(), "<string>".to_string())), "{out}");
}
