//! The simulated runtime's reverse lookups: the objects of a kind by a value each holds that
//! a lifecycle relation reads (the uid of its controller for `by: controller`, the name a field
//! holds for `by: {field}`), so a change of an object finds the objects that relate to it in
//! the time of their number, not of a scan of the namespace (1 000 VMs in one namespace made
//! every VM write read every VMI).
//!
//! Each is kept from the events the runtime already follows, in their order, and rebuilt from
//! a list when it starts or lags. It may trail the store by the events not yet taken, which is
//! enough for a reverse lookup: an object whose value changed in an event not yet taken is
//! evaluated when that event is.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// Keys by the value each holds.
#[derive(Debug, Default)]
pub struct Reverse {
    /// Value → the keys holding it.
    by_value: HashMap<String, BTreeSet<String>>,
    /// Key → its value.
    value_of: HashMap<String, String>,
}

/// The uid of the owner that controls `obj`, if any.
pub fn controller(obj: &Value) -> Option<&str> {
    crate::object::meta::controller_ref(obj)?.get("uid")?.as_str().filter(|u| !u.is_empty())
}

impl Reverse {
    /// Records the value the object at `key` now holds (`None`: none, or gone).
    pub fn set(&mut self, key: &str, value: Option<&str>) {
        if self.value_of.get(key).map(String::as_str) == value {
            return;
        }
        if let Some(old) = self.value_of.remove(key) {
            if let Some(keys) = self.by_value.get_mut(&old) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_value.remove(&old);
                }
            }
        }
        if let Some(value) = value {
            self.value_of.insert(key.to_string(), value.to_string());
            self.by_value.entry(value.to_string()).or_default().insert(key.to_string());
        }
    }

    /// The keys it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.value_of.len()
    }

    pub fn clear(&mut self) {
        self.by_value.clear();
        self.value_of.clear();
    }

    /// The keys under `prefix` holding `value`, in key order.
    pub fn keys(&self, value: &str, prefix: &str) -> Vec<String> {
        let Some(keys) = self.by_value.get(value) else { return Vec::new() };
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
        let mut c = Reverse::default();
        let c_set = |c: &mut Reverse, key: &str, obj: Option<&Value>| {
            c.set(key, obj.and_then(controller));
        };
        c_set(&mut c, "g/vmis/a/x", Some(&owned("u1", true)));
        c_set(&mut c, "g/vmis/a/y", Some(&owned("u1", true)));
        c_set(&mut c, "g/vmis/b/z", Some(&owned("u1", true)));
        c_set(&mut c, "g/pods/a/p", Some(&owned("u1", true)));
        // Not controlled: an owner that is not the controller, or none at all.
        c_set(&mut c, "g/vmis/a/w", Some(&owned("u1", false)));
        c_set(&mut c, "g/vmis/a/v", Some(&json!({"metadata": {}})));
        assert_eq!(c.keys("u1", "g/vmis/a/"), ["g/vmis/a/x", "g/vmis/a/y"]);
        assert_eq!(c.keys("u1", "g/vmis/"), ["g/vmis/a/x", "g/vmis/a/y", "g/vmis/b/z"]);
        assert_eq!(c.keys("u1", "g/pods/a/"), ["g/pods/a/p"]);
        assert!(c.keys("other", "g/").is_empty());
        assert!(c.keys("u2", "g/").is_empty());
        assert_eq!(c.value_of.len(), 4);

        // Another controller, none any more, gone: each key is under one owner at most.
        c_set(&mut c, "g/vmis/a/x", Some(&owned("u2", true)));
        c_set(&mut c, "g/vmis/a/y", Some(&owned("u1", false)));
        c_set(&mut c, "g/vmis/b/z", None);
        assert_eq!(c.keys("u1", "g/vmis/"), Vec::<String>::new());
        assert_eq!(c.keys("u2", "g/vmis/"), ["g/vmis/a/x"]);
        assert_eq!(c.value_of.len(), 2);
        c_set(&mut c, "g/vmis/a/x", None);
        c_set(&mut c, "g/pods/a/p", None);
        assert_eq!((c.value_of.len(), c.by_value.len()), (0, 0));

        c_set(&mut c, "g/vmis/a/x", Some(&owned("u3", true)));
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

    #[test]
    fn keys_by_a_value_each_holds() {
        let mut names = Reverse::default();
        names.set("s/snapshots/a/s1", Some("vm1"));
        names.set("s/snapshots/a/s2", Some("vm1"));
        names.set("s/snapshots/ab/s3", Some("vm1"));
        names.set("s/snapshots/a/s4", Some("vm2"));
        // A prefix is a namespace: `a/` holds none of `ab/`.
        assert_eq!(names.keys("vm1", "s/snapshots/a/"), ["s/snapshots/a/s1", "s/snapshots/a/s2"]);
        assert_eq!(names.keys("vm1", "s/snapshots/").len(), 3);
        names.set("s/snapshots/a/s1", Some("vm2"));
        names.set("s/snapshots/a/s2", None);
        assert_eq!(names.keys("vm1", "s/snapshots/a/"), Vec::<String>::new());
        assert_eq!(names.keys("vm2", "s/snapshots/a/"), ["s/snapshots/a/s1", "s/snapshots/a/s4"]);
    }
}
