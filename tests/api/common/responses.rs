//! Responses and what tests assert of them: `Resp`, Status bodies, names, resourceVersions,
//! conditions, managers, and `eventually` for what the server does in the background.

use super::*;

/// One HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The `field` of each cause of a Status's details, in order.
pub fn cause_fields(status: &Value) -> Vec<&str> {
    let causes = status["details"]["causes"].as_array();
    let causes = causes.unwrap_or_else(|| panic!("a Status with causes: {status}"));
    causes.iter().map(|c| c["field"].as_str().expect("a cause's field")).collect()
}

/// Polls `f` until it returns Some, for at most `timeout`. A timeout names the caller's line.
#[track_caller]
pub fn eventually<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "condition not met within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `metadata.name` of every item of a list.
pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list has items: {list}"))
        .iter()
        .map(|o| o["metadata"]["name"].as_str().expect("item name").to_string())
        .collect()
}

/// An object's `metadata.resourceVersion` as a number.
pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
        .parse()
        .expect("numeric resourceVersion")
}

/// Asserts a Failure `metav1.Status` with `code` and `reason` and returns it.
pub fn assert_status(resp: &Resp, code: u16, reason: &str) -> Value {
    assert_eq!(resp.status, code, "HTTP code; body: {}", resp.text());
    let ct = resp.header("Content-Type").unwrap_or("");
    assert!(ct.starts_with("application/json"), "Status content type {ct:?}: {}", resp.text());
    let s = resp.json();
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["apiVersion"], "v1", "{s}");
    assert_eq!(s["metadata"], serde_json::json!({}), "{s}");
    assert_eq!(s["status"], "Failure", "{s}");
    assert_eq!(s["code"], code, "{s}");
    assert_eq!(s["reason"], reason, "{s}");
    s
}

/// Asserts Go's plain `404 page not found` (no Status) for paths nothing serves.
pub fn assert_plain_404(resp: &Resp) {
    assert_eq!(resp.status, 404, "{}", resp.text());
    let ct = resp.header("Content-Type").unwrap_or("");
    assert!(ct.starts_with("text/plain"), "content type {ct:?}");
    assert_eq!(resp.text().trim_end(), "404 page not found");
}

/// The object at `path`, if it exists.
pub fn found(server: &TestServer, path: &str) -> Option<Value> {
    let r = server.get(path);
    (r.status == 200).then(|| r.json())
}

/// The status condition of `type_`, if the object has one.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

/// The field managers that wrote the object.
pub fn managers(obj: &Value) -> Vec<&str> {
    let entries =
        obj["metadata"]["managedFields"].as_array().map(Vec::as_slice).unwrap_or_default();
    entries.iter().filter_map(|m| m["manager"].as_str()).collect()
}
