//! What a guest knows of itself, read from its VMI as the real guest learns it: its hostname
//! (virt-launcher's DHCP/cloud-init: `spec.hostname`, else the VMI's name), its OS (the agent's
//! `status.guestOSInfo`), its network as the guest sees it, and its accounts from
//! cloud-init's user data (cloudinit docs, modules `users_groups`, `set_passwords`, `ssh`).

use serde_json::Value;

/// One account of the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub password: Option<String>,
    pub keys: Vec<String>,
    /// In `wheel` (cloud-init's default user: `sudo: ALL=(ALL) NOPASSWD:ALL`).
    pub sudo: bool,
}

/// The guest's view of its first interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    pub mac: String,
    /// The address and prefix the guest holds.
    pub address: String,
    pub prefix: u8,
}

#[derive(Debug, Clone)]
pub struct Identity {
    pub hostname: String,
    /// `status.guestOSInfo` (id, name, prettyName, version, versionId, kernelRelease, …).
    pub os: Value,
    pub nic: Option<Nic>,
    pub accounts: Vec<Account>,
}

/// The distribution's default user (cloud-init's `default_user` of Fedora Cloud).
const DEFAULT_USER: &str = "fedora";

/// KV pkg/virt-launcher/virtwrap/api/defaults.go `DefaultVMCIDR` "10.0.2.0/24": behind
/// masquerade the guest holds the CIDR's second host address (the first is the gateway,
/// network/driver `GetHostAndGwAddressesFromCIDR`).
const MASQUERADE_ADDRESS: &str = "10.0.2.2";

impl Identity {
    pub fn of(vmi: &Value) -> Identity {
        let spec = &vmi["spec"];
        let hostname = spec["hostname"]
            .as_str()
            .or(vmi["metadata"]["name"].as_str())
            .unwrap_or("localhost")
            .to_string();
        let iface = &spec["domain"]["devices"]["interfaces"][0];
        let status = &vmi["status"]["interfaces"][0];
        let nic = status["mac"].as_str().map(|mac| {
            let masquerade = iface.get("masquerade").is_some() || iface.is_null();
            let (address, prefix) = match masquerade {
                true => (MASQUERADE_ADDRESS.to_string(), 24),
                false => (status["ipAddress"].as_str().unwrap_or_default().to_string(), 24),
            };
            Nic { mac: mac.to_string(), address, prefix }
        });
        let accounts = accounts(&user_data(spec));
        Identity { hostname, os: vmi["status"]["guestOSInfo"].clone(), nic, accounts }
    }

    pub fn account(&self, name: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.name == name)
    }
}

/// The cloud-config of the VMI's NoCloud or ConfigDrive volume, parsed (`{}` without one).
fn user_data(spec: &Value) -> Value {
    let volumes = spec["volumes"].as_array().map(Vec::as_slice).unwrap_or_default();
    for v in volumes {
        for source in ["cloudInitNoCloud", "cloudInitConfigDrive"] {
            let s = &v[source];
            let text = match (s["userData"].as_str(), s["userDataBase64"].as_str()) {
                (Some(t), _) => t.to_string(),
                (None, Some(b)) => {
                    use base64::Engine;
                    let bytes = base64::engine::general_purpose::STANDARD.decode(b.trim());
                    String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
                }
                _ => continue,
            };
            return serde_yaml::from_str(&text).unwrap_or(Value::Null);
        }
    }
    Value::Null
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
        _ => vec![],
    }
}

/// The accounts cloud-init makes of `data`: the default user (renamed by `user`, given
/// `password` and `ssh_authorized_keys`) unless `users` leaves out `default`, the `users`
/// entries (`plain_text_passwd`, `ssh_authorized_keys`, `sudo`), root, then `chpasswd`'s
/// passwords (`list` as `user:password` lines, or `users: [{name, password}]`).
pub fn accounts(data: &Value) -> Vec<Account> {
    let mut out =
        vec![Account { name: "root".into(), uid: 0, password: None, keys: vec![], sudo: true }];
    let default_name = match &data["user"] {
        Value::String(s) => s.clone(),
        Value::Object(o) => o.get("name").and_then(Value::as_str).unwrap_or(DEFAULT_USER).into(),
        _ => DEFAULT_USER.into(),
    };
    let listed = data["users"].as_array();
    let with_default = listed.is_none_or(|l| l.iter().any(|u| u.as_str() == Some("default")));
    if with_default {
        out.push(Account {
            name: default_name,
            uid: 1000,
            password: data["password"].as_str().map(str::to_string),
            keys: strings(&data["ssh_authorized_keys"]),
            sudo: true,
        });
    }
    for u in listed.into_iter().flatten() {
        let Some(name) = u["name"].as_str() else { continue };
        let uid = 1000 + out.len() as u32 - 1;
        out.push(Account {
            name: name.to_string(),
            uid,
            password: u["plain_text_passwd"].as_str().map(str::to_string),
            keys: strings(&u["ssh_authorized_keys"]),
            sudo: !u["sudo"].is_null() && u["sudo"] != Value::Bool(false),
        });
    }
    let chpasswd = &data["chpasswd"];
    let mut pairs: Vec<(String, String)> = match &chpasswd["list"] {
        Value::String(s) => s.lines().filter_map(pair).collect(),
        Value::Array(a) => a.iter().filter_map(|l| l.as_str().and_then(pair)).collect(),
        _ => vec![],
    };
    for u in chpasswd["users"].as_array().into_iter().flatten() {
        if let (Some(n), Some(p)) = (u["name"].as_str(), u["password"].as_str()) {
            pairs.push((n.to_string(), p.to_string()));
        }
    }
    for (name, password) in pairs {
        if let Some(a) = out.iter_mut().find(|a| a.name == name) {
            a.password = Some(password);
        }
    }
    out
}

fn pair(line: &str) -> Option<(String, String)> {
    let (u, p) = line.trim().split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user_data_vmi(text: &str) -> Value {
        json!({"metadata": {"name": "vm1"}, "spec": {"volumes": [
            {"name": "cloudinit", "cloudInitNoCloud": {"userData": text}}]}})
    }

    #[test]
    fn accounts_come_from_cloud_init_as_cloud_init_makes_them() {
        let id = Identity::of(&user_data_vmi(
            "#cloud-config\nuser: cirros\npassword: gocubsgo\nssh_authorized_keys: [ssh-ed25519 AAA k]\n",
        ));
        let a = id.account("cirros").unwrap();
        assert_eq!(a.password.as_deref(), Some("gocubsgo"));
        assert_eq!(a.keys, vec!["ssh-ed25519 AAA k"]);
        assert!(id.account("fedora").is_none());
        let id = Identity::of(&user_data_vmi(
            "#cloud-config\nusers:\n- name: alice\n  plain_text_passwd: a1\n  sudo: ALL=(ALL) NOPASSWD:ALL\n- name: bob\nchpasswd:\n  list: |\n    bob:b2\n    root:r0\n",
        ));
        assert!(id.account("fedora").is_none(), "users without default");
        assert_eq!(id.account("alice").unwrap().password.as_deref(), Some("a1"));
        assert!(id.account("alice").unwrap().sudo);
        assert_eq!(id.account("bob").unwrap().password.as_deref(), Some("b2"));
        assert!(!id.account("bob").unwrap().sudo);
        assert_eq!(id.account("root").unwrap().password.as_deref(), Some("r0"));
        let id = Identity::of(&user_data_vmi(
            "#cloud-config\nchpasswd: {users: [{name: fedora, password: f1, type: text}]}\n",
        ));
        assert_eq!(id.account("fedora").unwrap().password.as_deref(), Some("f1"));
    }

    #[test]
    fn the_guest_sees_masquerade_behind_nat_and_bridge_as_the_pod_does() {
        let vmi = |binding: &str| {
            json!({"metadata": {"name": "vm1"},
              "spec": {"hostname": "h1", "domain": {"devices": {"interfaces": [{"name": "default", binding: {}}]}}},
              "status": {"interfaces": [{"ipAddress": "10.244.1.7", "mac": "52:54:00:aa:bb:cc"}]}})
        };
        let m = Identity::of(&vmi("masquerade"));
        assert_eq!(m.hostname, "h1");
        assert_eq!(m.nic.as_ref().unwrap().address, "10.0.2.2");
        let b = Identity::of(&vmi("bridge")).nic.unwrap();
        assert_eq!((b.address.as_str(), b.mac.as_str()), ("10.244.1.7", "52:54:00:aa:bb:cc"));
    }
}
