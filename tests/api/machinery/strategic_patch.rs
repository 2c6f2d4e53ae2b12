//! Strategic merge patches of the built-in kinds (`x-virt-resource.strategicMergePatch`), as
//! kubectl sends them: `patch` (strategic by default) and client-side `apply` (a 3-way patch
//! with `$setElementOrder` and the last-applied annotation), beside `label` and `annotate`
//! (merge patches in kubectl 1.32); merge-key lists, directives, kube's answers to malformed
//! patches, and custom resources still refusing them with 415.

use serde_json::{json, Value};

use crate::common::{assert_status, object, preferred, Kubectl, TestServer};

const SMP: &str = "application/strategic-merge-patch+json";
const NS: &str = "sp";
const CM: &str = "/api/v1/namespaces/sp/configmaps";
const SECRETS: &str = "/api/v1/namespaces/sp/secrets";

fn server() -> TestServer {
    let s = TestServer::start();
    s.namespace(NS);
    s
}

fn config_map(s: &TestServer, name: &str, data: Value) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name, "namespace": NS}, "data": data});
    let r = s.post(CM, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|e| {
                    let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
                    (s("manager"), s("operation"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kubectl_label_and_annotate_patch_namespaces_and_config_maps() {
    let s = server();
    config_map(&s, "c", json!({"a": "1"}));
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["label", "namespace", NS, "team=blue", "tier=1"]);
    k.ok(&["label", "namespace", NS, "tier-", "team=red", "--overwrite"]);
    let ns = s.get_json("/api/v1/namespaces/sp");
    assert_eq!(ns["metadata"]["labels"]["team"], "red", "{ns}");
    assert!(ns["metadata"]["labels"].get("tier").is_none(), "{ns}");
    assert!(managers(&ns).contains(&("kubectl-label".into(), "Update".into())), "{ns}");

    k.ok(&["annotate", "configmap", "c", "note=hello", "other=x"]);
    k.ok(&["annotate", "configmap", "c", "other-"]);
    k.ok(&["label", "configmap", "c", "app=web"]);
    let cm = s.get_json(&format!("{CM}/c"));
    assert_eq!(cm["metadata"]["annotations"], json!({"note": "hello"}), "{cm}");
    assert_eq!(cm["metadata"]["labels"], json!({"app": "web"}), "{cm}");
    assert_eq!(cm["data"], json!({"a": "1"}), "the data is left alone: {cm}");
    let ms = managers(&cm);
    assert!(ms.contains(&("kubectl-annotate".into(), "Update".into())), "{cm}");
    assert!(ms.contains(&("kubectl-label".into(), "Update".into())), "{cm}");
}

#[test]
fn kubectl_patch_is_strategic_by_default_and_meets_every_write_rule() {
    let s = server();
    let created = config_map(&s, "c", json!({"a": "1", "b": "2"}));
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["patch", "configmap", "c", "-p", r#"{"data":{"b":null,"c":"3"}}"#]);
    let cm = s.get_json(&format!("{CM}/c"));
    assert_eq!(cm["data"], json!({"a": "1", "c": "3"}), "{cm}");
    assert!(managers(&cm).contains(&("kubectl-patch".into(), "Update".into())), "{cm}");

    // The data rules hold: a key that is not a config-map key is refused.
    let err = k.fails(&["patch", "configmap", "c", "-p", r#"{"data":{"no way":"x"}}"#]);
    assert!(err.contains("a valid config key must consist of"), "{err}");

    // A stale resourceVersion in the patch is a conflict, as for merge patches.
    let stale = created["metadata"]["resourceVersion"].as_str().unwrap();
    let body = json!({"metadata": {"resourceVersion": stale}, "data": {"d": "4"}});
    let st = assert_status(&s.patch(&format!("{CM}/c"), SMP, &body), 409, "Conflict");
    assert!(st["message"].as_str().unwrap().contains("the object has been modified"), "{st}");

    // Strict field validation names the unknown field and quotes the patch as Go prints it.
    let path = format!("{CM}/c?fieldValidation=Strict");
    let st = assert_status(&s.patch(&path, SMP, &json!({"bogus": 1})), 422, "Invalid");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "Invalid value: \"map[bogus:1]\": strict decoding error: unknown field \"bogus\"",
        "{st}"
    );
    let r = s.patch(&format!("{CM}/c?fieldValidation=Warn"), SMP, &json!({"bogus": 1}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Warning"), Some("299 - \"unknown field \\\"bogus\\\"\""));
}

#[test]
fn kubectl_apply_twice_removes_what_the_configuration_dropped() {
    let s = server();
    let k = Kubectl::in_namespace(&s, NS);
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    a: \"1\"\n    b: \"2\"\ndata:\n  keep: same\n  change: old\n  drop: gone\n";
    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    a: \"1\"\ndata:\n  keep: same\n  change: new\n  add: here\n";
    let f1 = k.file("cm1.yaml", v1);
    let f2 = k.file("cm2.yaml", v2);
    k.ok(&["apply", "-f", f1.to_str().unwrap()]);
    // Someone else's label survives the next apply: it was never in the configuration.
    k.ok(&["label", "configmap", "app", "extra=yes"]);
    let out = k.ok(&["apply", "-f", f2.to_str().unwrap()]);
    assert!(out.contains("configmap/app configured"), "{out}");
    let cm = s.get_json(&format!("{CM}/app"));
    assert_eq!(cm["data"], json!({"keep": "same", "change": "new", "add": "here"}), "{cm}");
    assert_eq!(cm["metadata"]["labels"], json!({"a": "1", "extra": "yes"}), "{cm}");
    let last = cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_else(|| panic!("no last-applied annotation: {cm}"));
    let last: Value = serde_json::from_str(last).unwrap();
    assert_eq!(last["data"]["change"], "new");
    assert!(managers(&cm).contains(&("kubectl-client-side-apply".into(), "Update".into())));
    // Applying the same configuration again changes nothing.
    let out = k.ok(&["apply", "-f", f2.to_str().unwrap()]);
    assert!(out.contains("configmap/app unchanged"), "{out}");

    // A merge list in the configuration: kubectl sends `$setElementOrder/finalizers` and
    // `$deleteFromPrimitiveList/finalizers`, and the result follows the configuration's order.
    let f1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fin\n  finalizers: [example.com/a, example.com/b]\n";
    let f2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fin\n  finalizers: [example.com/c, example.com/b]\n";
    k.ok(&["apply", "-f", k.file("f1.yaml", f1).to_str().unwrap()]);
    k.ok(&["apply", "-f", k.file("f2.yaml", f2).to_str().unwrap()]);
    let cm = s.get_json(&format!("{CM}/fin"));
    assert_eq!(cm["metadata"]["finalizers"], json!(["example.com/c", "example.com/b"]), "{cm}");

    let s1 = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\ndata:\n  user: YWRtaW4=\n  pass: c2VjcmV0\n";
    let s2 = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\nstringData:\n  token: abc\ndata:\n  user: cm9vdA==\n";
    k.ok(&["apply", "-f", k.file("s1.yaml", s1).to_str().unwrap()]);
    k.ok(&["apply", "-f", k.file("s2.yaml", s2).to_str().unwrap()]);
    let secret = s.get_json(&format!("{SECRETS}/creds"));
    // "abc" in base64; stringData is merged into data and never stored.
    assert_eq!(secret["data"], json!({"user": "cm9vdA==", "token": "YWJj"}), "{secret}");
    assert!(secret.get("stringData").is_none(), "{secret}");
}

#[test]
fn kubectl_apply_of_a_namespace_with_labels() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let v1 = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied\n  labels:\n    env: dev\n    owner: me\n";
    let v2 =
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied\n  labels:\n    env: prod\n";
    let out = k.ok(&["apply", "-f", k.file("ns1.yaml", v1).to_str().unwrap()]);
    assert!(out.contains("namespace/applied created"), "{out}");
    let out = k.ok(&["apply", "-f", k.file("ns2.yaml", v2).to_str().unwrap()]);
    assert!(out.contains("namespace/applied configured"), "{out}");
    let ns = s.get_json("/api/v1/namespaces/applied");
    // kube's own label for the name stays; `owner` went with the configuration.
    assert_eq!(
        ns["metadata"]["labels"],
        json!({"env": "prod", "kubernetes.io/metadata.name": "applied"}),
        "{ns}"
    );
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]), "{ns}");
}

#[test]
fn lists_with_a_merge_key_merge_by_it() {
    let s = server();
    let a = config_map(&s, "owner-a", json!({}));
    let b = config_map(&s, "owner-b", json!({}));
    config_map(&s, "child", json!({}));
    let path = format!("{CM}/child");
    let owner = |o: &Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
               "uid": o["metadata"]["uid"]})
    };
    let uid = |o: &Value| o["metadata"]["uid"].as_str().unwrap().to_string();
    for o in [&a, &b] {
        let body = json!({"metadata": {"ownerReferences": [owner(o)]}});
        let r = s.patch(&path, SMP, &body);
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let refs = |obj: &Value| -> Vec<String> {
        obj["metadata"]["ownerReferences"]
            .as_array()
            .map(|l| l.iter().map(|r| r["uid"].as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    // Merged by uid, the new one first as kube orders a patch's items without an order list.
    let got = s.get_json(&path);
    assert_eq!(refs(&got), [uid(&b), uid(&a)], "{got}");
    // Patching one owner by its uid changes it in place.
    let body =
        json!({"metadata": {"ownerReferences": [{"uid": uid(&a), "blockOwnerDeletion": true}]}});
    let r = s.patch(&path, SMP, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let got = r.json();
    assert_eq!(got["metadata"]["ownerReferences"].as_array().unwrap().len(), 2, "{got}");
    let patched = got["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uid"] == uid(&a).as_str())
        .unwrap();
    assert_eq!(patched["blockOwnerDeletion"], true, "{got}");
    assert_eq!(patched["name"], "owner-a", "{got}");
    // `$patch: delete` removes the item with that key; `$setElementOrder` orders the rest.
    let body = json!({"metadata": {"ownerReferences": [{"uid": uid(&a), "$patch": "delete"}]}});
    let r = s.patch(&path, SMP, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(refs(&r.json()), [uid(&b)]);

    // Finalizers merge as a set; a parallel list deletes from it.
    let r = s.patch(&path, SMP, &json!({"metadata": {"finalizers": ["example.com/a"]}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.patch(&path, SMP, &json!({"metadata": {"finalizers": ["example.com/b"]}}));
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["example.com/b", "example.com/a"]));
    let body = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a", "example.com/b"]}});
    let r = s.patch(&path, SMP, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let left = r.json()["metadata"].get("finalizers").cloned().unwrap_or(json!([]));
    assert_eq!(left, json!([]), "{}", r.text());

    // A namespace's status conditions merge by type through /status.
    let status = "/api/v1/namespaces/sp/status";
    let cond = |t: &str, st: &str| json!({"type": t, "status": st, "reason": "Testing"});
    for c in [cond("A", "True"), cond("B", "False"), cond("A", "False")] {
        let r = s.patch(status, SMP, &json!({"status": {"conditions": [c]}}));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let ns = s.get_json("/api/v1/namespaces/sp");
    let conds: Vec<(String, String)> = ns["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap().into(), c["status"].as_str().unwrap().into()))
        .collect();
    assert_eq!(conds, [("B".into(), "False".into()), ("A".into(), "False".into())], "{ns}");
    assert_eq!(ns["status"]["phase"], "Active", "{ns}");
}

#[test]
fn directives_replace_and_delete_maps() {
    let s = server();
    config_map(&s, "d", json!({"a": "1", "b": "2"}));
    let path = format!("{CM}/d");
    let r = s.patch(&path, SMP, &json!({"data": {"$patch": "replace", "c": "3"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"], json!({"c": "3"}));
    let r = s.patch(&path, SMP, &json!({"data": {"$patch": "delete"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json().get("data").cloned().unwrap_or(json!({}));
    assert_eq!(data, json!({}), "{}", r.text());
}

#[test]
fn malformed_strategic_patches_answer_as_kube() {
    let s = server();
    config_map(&s, "m", json!({"a": "1"}));
    let path = format!("{CM}/m");
    // kube answers the package's unclassified errors 500 with its StatusReasonUnknown, "",
    // which the Status omits.
    let r = s.patch(&path, SMP, &json!({"data": {"$patch": "nope"}}));
    assert_eq!(r.status, 500, "{}", r.text());
    let st = r.json();
    assert_eq!((&st["kind"], &st["code"]), (&json!("Status"), &json!(500)), "{st}");
    assert_eq!(st["message"], "unknown patch type: nope in map: map[$patch:nope]", "{st}");
    assert!(st.get("reason").is_none(), "{st}");
    let body = json!({"data": {"$retainKeys": ["a"], "b": "2"}});
    let st = assert_status(&s.patch(&path, SMP, &body), 422, "Invalid");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "patch content doesn't match retainKeys list"
    );
    let body = json!({"$deleteFromPrimitiveList": ["x"]});
    let st = assert_status(&s.patch(&path, SMP, &body), 400, "BadRequest");
    assert_eq!(st["message"], "invalid patch format of primitive list");
    let st = assert_status(&s.patch(&path, SMP, &json!([1])), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    // Nothing was written.
    assert_eq!(s.get_json(&path)["data"], json!({"a": "1"}));
    // A type no endpoint takes lists the built-in kinds' four.
    let r = s.request("PATCH", &path, &[], Some(("text/plain", b"{}")));
    let st = assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(
        st["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    );
}

#[test]
fn custom_resources_still_refuse_strategic_merge_patches() {
    let s = server();
    let vm = preferred("kubevirt.io", "virtualmachines");
    s.create(vm, &object(vm, NS, "vm1"));
    let path = format!("/apis/kubevirt.io/{}/namespaces/{NS}/virtualmachines/vm1", vm.version);
    let st = assert_status(
        &s.patch(&path, SMP, &json!({"metadata": {"labels": {"a": "b"}}})),
        415,
        "UnsupportedMediaType",
    );
    assert_eq!(
        st["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    // kubectl label sends merge patches, which every kind takes.
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["label", "virtualmachine", "vm1", "a=b"]);
    assert_eq!(s.get_json(&path)["metadata"]["labels"]["a"], "b");
}
