//! The objects each owner controls (the owner reference with `controller: true`), by the
//! owner's uid: the simulated runtime's index for a lifecycle's `by: controller` relation, so a
//! change of an owner finds the objects it controls in the time of their number, not of a scan
//! of the namespace (1 000 VMs in one namespace made every VM write read every VMI).
//!
//! It is kept from the events the runtime already follows, in their order, and rebuilt from a
//! list when it starts or lags. It may trail the store by the events not yet taken, which is
//! enough for a reverse lookup: an object whose controller changed in an event not yet taken is
//! evaluated when that event is.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

#[derive(Debug, Default)]
pub struct Controlled {
    /// Owner uid → the keys of the objects it controls.
    by_owner: HashMap<String, BTreeSet<String>>,
    /// Key → its controller's uid.
    owner_of: HashMap<String, String>,
}

/// The uid of the owner that controls `obj`, if any.
pub fn controller(obj: &Value) -> Option<&str> {
    let refs = obj.pointer("/metadata/ownerReferences")?.as_array()?;
    let r = refs.iter().find(|r| r.get("controller") == Some(&Value::Bool(true)))?;
    r.get("uid")?.as_str().filter(|u| !u.is_empty())
}

impl Controlled {
    /// Records the object at `key` as it now is (`None`: gone).
    pub fn set(&mut self, key: &str, obj: Option<&Value>) {
        let uid = obj.and_then(controller);
        if self.owner_of.get(key).map(String::as_str) == uid {
            return;
        }
        if let Some(old) = self.owner_of.remove(key) {
            if let Some(keys) = self.by_owner.get_mut(&old) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_owner.remove(&old);
                }
            }
        }
        if let Some(uid) = uid {
            self.owner_of.insert(key.to_string(), uid.to_string());
            self.by_owner.entry(uid.to_string()).or_default().insert(key.to_string());
        }
    }

    pub fn clear(&mut self) {
        self.by_owner.clear();
        self.owner_of.clear();
    }

    /// The keys under `prefix` of the objects owner `uid` controls, in key order.
    pub fn keys(&self, uid: &str, prefix: &str) -> Vec<String> {
        let Some(keys) = self.by_owner.get(uid) else { return Vec::new() };
        let from = (std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded);
        keys.range::<str, _>(from).take_while(|k| k.starts_with(prefix)).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn owned(uid: &str, controller: bool) -> Value {
        json!({"metadata": {"ownerReferences": [
            {"uid": "other", "controller": false},
            {"uid": uid, "controller": controller},
        ]}})
    }

    #[test]
    fn follows_each_objects_controller_through_changes_and_deletes() {
        let mut c = Controlled::default();
        c.set("g/vmis/a/x", Some(&owned("u1", true)));
        c.set("g/vmis/a/y", Some(&owned("u1", true)));
        c.set("g/vmis/b/z", Some(&owned("u1", true)));
        c.set("g/pods/a/p", Some(&owned("u1", true)));
        // Not controlled: an owner that is not the controller, or none at all.
        c.set("g/vmis/a/w", Some(&owned("u1", false)));
        c.set("g/vmis/a/v", Some(&json!({"metadata": {}})));
        assert_eq!(c.keys("u1", "g/vmis/a/"), ["g/vmis/a/x", "g/vmis/a/y"]);
        assert_eq!(c.keys("u1", "g/vmis/"), ["g/vmis/a/x", "g/vmis/a/y", "g/vmis/b/z"]);
        assert_eq!(c.keys("u1", "g/pods/a/"), ["g/pods/a/p"]);
        assert!(c.keys("other", "g/").is_empty());
        assert!(c.keys("u2", "g/").is_empty());
        assert_eq!(c.owner_of.len(), 4);

        // Another controller, none any more, gone: each key is under one owner at most.
        c.set("g/vmis/a/x", Some(&owned("u2", true)));
        c.set("g/vmis/a/y", Some(&owned("u1", false)));
        c.set("g/vmis/b/z", None);
        assert_eq!(c.keys("u1", "g/vmis/"), Vec::<String>::new());
        assert_eq!(c.keys("u2", "g/vmis/"), ["g/vmis/a/x"]);
        assert_eq!(c.owner_of.len(), 2);
        c.set("g/vmis/a/x", None);
        c.set("g/pods/a/p", None);
        assert_eq!((c.owner_of.len(), c.by_owner.len()), (0, 0));

        c.set("g/vmis/a/x", Some(&owned("u3", true)));
        c.clear();
        assert!(c.keys("u3", "g/").is_empty());
    }

    #[test]
    fn the_controller_is_the_reference_marked_so() {
        assert_eq!(controller(&owned("u1", true)), Some("u1"));
        assert_eq!(controller(&owned("u1", false)), None);
        assert_eq!(controller(&json!({"metadata": {"ownerReferences": null}})), None);
        assert_eq!(controller(&json!({})), None);
    }
}
