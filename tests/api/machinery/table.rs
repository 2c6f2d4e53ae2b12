//! Table output (B.8): list, get and watch as `meta.k8s.io` Tables with the kind's printer
//! columns, `includeObject`, paging metadata, YAML, and 406 for Tables nobody offers.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

const TABLE_V1: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
/// What kubectl sends for human-readable output.
const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const MERGE: &str = "application/merge-patch+json";

fn get_with(s: &TestServer, path: &str, accept: &str) -> Resp {
    s.request("GET", path, &[("Accept", accept)], None)
}

fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .unwrap_or_else(|| panic!("column definitions in {table}"))
        .iter()
        .map(|c| c["name"].as_str().expect("a column name").to_string())
        .collect()
}

/// A VM with a printable status and a Ready condition, set through `/status`.
fn vm_with_status(s: &TestServer, ns: &str, name: &str, printable: &str) -> Value {
    let res = preferred("kubevirt.io", "virtualmachines");
    s.create(res, &object(res, ns, name));
    let status = json!({"status": {"printableStatus": printable,
        "conditions": [{"type": "Paused", "status": "False"}, {"type": "Ready", "status": "True"}]}});
    let r = s.patch(&format!("{}/status", item_path(res, ns, name)), MERGE, &status);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn list_as_table_has_name_printer_columns_and_metadata_rows() {
    let s = TestServer::start();
    s.namespace("tables");
    let res = preferred("kubevirt.io", "virtualmachines");
    vm_with_status(&s, "tables", "vm-a", "Stopped");
    vm_with_status(&s, "tables", "vm-b", "Running");

    let r = get_with(&s, &collection_path(res, Some("tables")), KUBECTL_ACCEPT);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let t = r.json();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    let mut want = vec!["Name".to_string()];
    want.extend(res.printer_columns.iter().map(|c| c.name.to_string()));
    assert_eq!(column_names(&t), want);
    // The document's VM columns, as KubeVirt declares them.
    assert_eq!(want, ["Name", "Age", "Status", "Ready"]);
    let name_col = &t["columnDefinitions"][0];
    assert_eq!(
        (name_col["type"].as_str(), name_col["format"].as_str()),
        (Some("string"), Some("name"))
    );
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    assert!(t["metadata"]["resourceVersion"].as_str().is_some_and(|v| !v.is_empty()), "{t}");

    let rows = t["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{t}");
    let cells = &rows[0]["cells"];
    assert_eq!(cells[0], "vm-a");
    let age = cells[1].as_str().expect("the age is a string");
    assert!(age.ends_with('s') && age[..age.len() - 1].parse::<u32>().is_ok(), "age {age}");
    assert_eq!(cells[2], "Stopped");
    assert_eq!(cells[3], "True", "the Ready condition's status");
    assert_eq!(rows[1]["cells"][2], "Running");
    // Rows carry the metadata by default, for -A and --show-labels.
    let obj = &rows[0]["object"];
    assert_eq!(obj["kind"], "PartialObjectMetadata");
    assert_eq!(obj["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(obj["metadata"]["name"], "vm-a");
    assert_eq!(obj["metadata"]["namespace"], "tables");
    assert!(obj.get("spec").is_none(), "{obj}");
}

#[test]
fn include_object_no_headers_and_v1beta1() {
    let s = TestServer::start();
    s.namespace("tables");
    let res = preferred("kubevirt.io", "virtualmachines");
    vm_with_status(&s, "tables", "vm-a", "Stopped");
    let list = collection_path(res, Some("tables"));

    let t = get_with(&s, &format!("{list}?includeObject=Object"), TABLE_V1).json();
    let obj = &t["rows"][0]["object"];
    assert_eq!(
        (obj["kind"].as_str(), obj["apiVersion"].as_str()),
        (Some("VirtualMachine"), Some("kubevirt.io/v1"))
    );
    assert!(obj.get("spec").is_some(), "{obj}");

    let t = get_with(&s, &format!("{list}?includeObject=None"), TABLE_V1).json();
    assert_eq!(t["rows"][0]["object"], Value::Null);

    let r = get_with(&s, &format!("{list}?includeObject=Everything"), TABLE_V1);
    assert_status(&r, 400, "BadRequest");

    let t = get_with(&s, &format!("{list}?noHeaders=true"), TABLE_V1).json();
    assert_eq!(t["columnDefinitions"], Value::Null);
    assert_eq!(t["rows"][0]["cells"][0], "vm-a");

    let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
    let t = get_with(&s, &list, beta).json();
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

    // A YAML Table, as kube offers Tables in JSON and YAML.
    let r = get_with(&s, &list, "application/yaml;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/yaml"));
    let t: Value = serde_yaml::from_str(&r.text()).expect("YAML");
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["rows"][0]["cells"][0], "vm-a");
}

#[test]
fn unknown_table_versions_are_not_acceptable() {
    let s = TestServer::start();
    s.namespace("tables");
    let res = preferred("kubevirt.io", "virtualmachines");
    vm_with_status(&s, "tables", "vm-a", "Stopped");
    let list = collection_path(res, Some("tables"));
    for accept in [
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        "application/json;as=Table;v=v1;g=example.com",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "text/plain;as=Table;v=v1;g=meta.k8s.io",
    ] {
        let r = get_with(&s, &list, accept);
        let st = assert_status(&r, 406, "NotAcceptable");
        assert!(st["message"].as_str().unwrap_or("").contains("application/json"), "{st}");
        let r = get_with(&s, &item_path(res, "tables", "vm-a"), accept);
        assert_status(&r, 406, "NotAcceptable");
    }
    // Another clause the server can serve is taken instead.
    let r = get_with(&s, &list, "application/json;as=Table;v=v2;g=meta.k8s.io, application/json");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "VirtualMachineList");
}

#[test]
fn paged_tables_keep_the_list_metadata_and_get_is_one_row() {
    let s = TestServer::start();
    s.namespace("tables");
    let res = preferred("kubevirt.io", "virtualmachines");
    for n in ["vm-a", "vm-b", "vm-c"] {
        vm_with_status(&s, "tables", n, "Stopped");
    }
    let list = collection_path(res, Some("tables"));
    let t = get_with(&s, &format!("{list}?limit=2"), TABLE_V1).json();
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(2), "{t}");
    assert_eq!(t["metadata"]["remainingItemCount"], 1, "{t}");
    let token = t["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let t2 = get_with(&s, &format!("{list}?limit=2&continue={token}"), TABLE_V1).json();
    assert_eq!(t2["rows"].as_array().map(Vec::len), Some(1), "{t2}");
    assert_eq!(t2["rows"][0]["cells"][0], "vm-c");
    assert_eq!(t2["metadata"]["resourceVersion"], t["metadata"]["resourceVersion"]);
    assert!(t2["metadata"].get("continue").is_none(), "{t2}");

    let vm = s.get_json(&item_path(res, "tables", "vm-b"));
    let t = get_with(&s, &item_path(res, "tables", "vm-b"), KUBECTL_ACCEPT).json();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["metadata"]["resourceVersion"], vm["metadata"]["resourceVersion"]);
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(t["rows"][0]["cells"][0], "vm-b");
    assert_eq!(column_names(&t)[0], "Name");
}

#[test]
fn integer_columns_are_numbers_and_missing_values_null() {
    let s = TestServer::start();
    s.namespace("tables");
    // Columns of other types come out typed; a missing value is null.
    let rs = kind_with_integer_spec_column();
    let mut obj = object(rs, "tables", "rs-a");
    let col = rs
        .printer_columns
        .iter()
        .find(|c| c.type_ == "integer" && c.json_path.starts_with(".spec."))
        .unwrap();
    let field = col.json_path.trim_start_matches(".spec.");
    obj["spec"][field] = json!(3);
    s.create(rs, &obj);
    let t = get_with(&s, &collection_path(rs, Some("tables")), TABLE_V1).json();
    let i = column_names(&t).iter().position(|n| n == col.name).expect("the column");
    assert_eq!(t["rows"][0]["cells"][i], json!(3), "{t}");
    let status_col =
        rs.printer_columns.iter().position(|c| c.json_path.starts_with(".status.")).unwrap();
    assert_eq!(t["rows"][0]["cells"][status_col + 1], Value::Null, "{t}");
}

/// A kind with an integer printer column read from its spec (the replica sets).
fn kind_with_integer_spec_column() -> &'static virt_apiserver::resource::ResourceInfo {
    virt_apiserver::RESOURCES
        .iter()
        .find(|r| {
            r.version == r.storage_version
                && r.printer_columns
                    .iter()
                    .any(|c| c.type_ == "integer" && c.json_path.starts_with(".spec."))
        })
        .expect("a kind with an integer spec column")
}

#[test]
fn watch_events_are_one_row_tables_with_headers_once() {
    let s = TestServer::start();
    s.namespace("tables");
    let res = preferred("kubevirt.io", "virtualmachines");
    let list = collection_path(res, Some("tables"));
    let start = get_with(&s, &list, KUBECTL_ACCEPT).json();
    let rv = start["metadata"]["resourceVersion"].as_str().expect("rv").to_string();
    let w = s.watch_with(
        &format!("{list}?watch=true&resourceVersion={rv}"),
        &[("Accept", KUBECTL_ACCEPT)],
    );
    vm_with_status(&s, "tables", "vm-a", "Stopped");

    let first = w.expect();
    assert_eq!(first["type"], "ADDED");
    let t = &first["object"];
    assert_eq!(t["kind"], "Table", "{first}");
    assert_eq!(column_names(t)[0], "Name");
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(t["rows"][0]["cells"][0], "vm-a");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert!(t["metadata"]["resourceVersion"].as_str().is_some(), "{t}");

    // The status write: MODIFIED, without column definitions this time.
    let second = w.expect();
    assert_eq!(second["type"], "MODIFIED");
    assert_eq!(second["object"]["kind"], "Table");
    assert_eq!(second["object"]["columnDefinitions"], Value::Null, "{second}");
    assert_eq!(second["object"]["rows"][0]["cells"][2], "Stopped");

    let r = s.delete(&item_path(res, "tables", "vm-a"));
    assert_eq!(r.status, 200, "{}", r.text());
    let third = w.expect();
    assert_eq!(third["type"], "DELETED");
    assert_eq!(third["object"]["rows"][0]["cells"][0], "vm-a");
    w.expect_none(Duration::from_millis(300));

    // The watch-list stream has no Table form: 406, unless plain JSON is acceptable too.
    let watch_list = format!(
        "{list}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    let r = get_with(&s, &watch_list, TABLE_V1);
    assert_status(&r, 406, "NotAcceptable");
    let w = s.watch_with(&watch_list, &[("Accept", KUBECTL_ACCEPT)]);
    let ev = w.expect();
    assert_eq!(ev["type"], "BOOKMARK", "plain events: {ev}");
    assert_eq!(ev["object"]["kind"], "VirtualMachine");
}

/// kube's printers for its built-in kinds declare every column `string`
/// (`pkg/printers/internalversion/printers.go`: Namespace, ConfigMap, Secret and Event column
/// definitions) and fill them with typed values: an age string, DATA and COUNT as integers;
/// the CRD convertor's `date` columns stay those of the custom resources.
#[test]
fn built_in_kinds_columns_are_strings_as_kubes_printers_declare_them() {
    let s = TestServer::start();
    s.namespace("printed");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"a": "1", "b": "2"}});
    assert_eq!(s.post("/api/v1/namespaces/printed/configmaps", &cm).status, 201);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"},
                        "type": "Opaque", "data": {"a": "AA=="}});
    assert_eq!(s.post("/api/v1/namespaces/printed/secrets", &secret).status, 201);
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "printed"},
        "reason": "Made", "message": "made", "type": "Normal", "count": 2,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        "source": {"component": "test"}});
    assert_eq!(s.post("/api/v1/namespaces/printed/events", &event).status, 201);
    let cases = [
        ("/api/v1/namespaces", vec!["Name", "Status", "Age"]),
        ("/api/v1/namespaces/printed/configmaps", vec!["Name", "Data", "Age"]),
        ("/api/v1/namespaces/printed/secrets", vec!["Name", "Type", "Data", "Age"]),
        (
            "/api/v1/namespaces/printed/events",
            vec![
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
        ),
    ];
    for (path, names) in cases {
        let t = get_with(&s, path, TABLE_V1).json();
        assert_eq!(column_names(&t), names, "{path}");
        for c in t["columnDefinitions"].as_array().unwrap() {
            assert_eq!(c["type"], "string", "{path}: {c}");
        }
    }
    let row = |path: &str, name: &str| -> Value {
        let t = get_with(&s, path, TABLE_V1).json();
        let rows = t["rows"].as_array().unwrap().clone();
        rows.into_iter()
            .find(|r| r["object"]["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {t}"))["cells"]
            .clone()
    };
    let is_age = |v: &Value| {
        v.as_str().is_some_and(|a| a.ends_with(['s', 'm', 'h', 'd', 'y']) && a != "<unknown>")
    };
    let ns = row("/api/v1/namespaces", "printed");
    assert_eq!(ns[1], "Active");
    assert!(is_age(&ns[2]), "{ns}");
    let cm = row("/api/v1/namespaces/printed/configmaps", "c");
    assert_eq!(cm[1], 2, "DATA is an integer in a string column: {cm}");
    assert!(is_age(&cm[2]), "{cm}");
    let secret = row("/api/v1/namespaces/printed/secrets", "t");
    assert_eq!((&secret[1], &secret[2]), (&json!("Opaque"), &json!(1)), "{secret}");
    assert!(is_age(&secret[3]), "{secret}");
    let ev = row("/api/v1/namespaces/printed/events", "e");
    assert!(is_age(&ev[0]) && is_age(&ev[7]), "{ev}");
    assert_eq!((&ev[3], &ev[8], &ev[9]), (&json!("configmap/c"), &json!(2), &json!("e")), "{ev}");
    // A custom resource keeps its printer columns' declared types.
    let vms = get_with(&s, "/apis/kubevirt.io/v1/namespaces/printed/virtualmachines", TABLE_V1);
    assert_eq!(vms.json()["columnDefinitions"][1]["type"], "date");
}
