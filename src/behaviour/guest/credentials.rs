//! A guest's access credentials from the Secrets its VMI's `spec.accessCredentials` name,
//! as KubeVirt delivers them:
//!
//! - `sshPublicKey` with `noCloud` or `configDrive`: the Secret's keys go into cloud-init's
//!   metadata (`public-keys`, pkg/cloud-init/cloud-init.go), which cloud-init reads once at
//!   boot and gives the default user: read when the guest is met, never again;
//! - `sshPublicKey` with `qemuGuestAgent: {users}`, and `userPassword` (key = user, value =
//!   password): virt-launcher watches the Secrets' mounts and re-applies them through the agent
//!   while the guest runs (pkg/virt-launcher/virtwrap/access-credentials/access_credentials.go:
//!   the keys replace the user's authorized keys, `guest-ssh-add-authorized-keys` with reset;
//!   the passwords through `guest-set-user-password`, which fails for a user the guest lacks,
//!   so such a user is not created). Applied on every read of the guest's VMI, which the
//!   console's liveness check makes each second (KubeVirt polls every 15 s).
//!
//! Every Secret value may hold several keys, one a line.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::identity::Account;

/// The VMI kind's related objects (openapi/lifecycles.yaml) holding the Secrets named by its
/// `sshPublicKey` credentials and by its `userPassword` ones.
pub const RELATED: [&str; 2] = ["accessSecrets", "passwordSecrets"];

/// The Secrets the credentials name, found among a VMI's related objects: name → data, decoded.
#[derive(Debug, Default, Clone)]
pub struct Secrets(BTreeMap<String, BTreeMap<String, String>>);

impl Secrets {
    /// The Secrets among `related` (the VMI's related objects, by relation name).
    pub fn among(related: &BTreeMap<String, Arc<Value>>) -> Secrets {
        let mut out = BTreeMap::new();
        let lists = RELATED.iter().filter_map(|r| related.get(*r)?.as_array());
        for secret in lists.flatten() {
            let name = secret["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let data = secret["data"].as_object().into_iter().flatten();
            let decoded = data.filter_map(|(k, v)| Some((k.clone(), decode(v.as_str()?))));
            out.insert(name, decoded.collect());
        }
        Secrets(out)
    }

    /// Every key the Secret `name` holds, one a line, in its keys' order.
    fn keys(&self, name: &str) -> Vec<String> {
        let values = self.0.get(name).into_iter().flat_map(|d| d.values());
        values
            .flat_map(|v| v.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }
}

fn decode(b64: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn credentials(vmi: &Value) -> &[Value] {
    vmi["spec"]["accessCredentials"].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn secret_name(source: &Value) -> &str {
    source["secret"]["secretName"].as_str().unwrap_or_default()
}

/// At boot: cloud-init gives the default user (uid 1000, when cloud-init made one) the keys of
/// the `noCloud` and `configDrive` credentials, after its own.
pub fn at_boot(vmi: &Value, secrets: &Secrets, accounts: &mut [Account]) {
    let Some(default) = accounts.iter_mut().find(|a| a.uid == 1000) else { return };
    for cred in credentials(vmi) {
        let key = &cred["sshPublicKey"];
        let method = &key["propagationMethod"];
        if method.get("noCloud").is_some() || method.get("configDrive").is_some() {
            for k in secrets.keys(secret_name(&key["source"])) {
                if !default.keys.contains(&k) {
                    default.keys.push(k);
                }
            }
        }
    }
}

/// The agent's propagation over the accounts the guest booted with (`booted`): the users'
/// authorized keys replaced by the keys of their Secrets, the passwords set; a user the guest
/// lacks gets nothing.
pub fn by_agent(vmi: &Value, secrets: &Secrets, booted: &[Account]) -> Vec<Account> {
    let mut accounts = booted.to_vec();
    let mut replaced: Vec<String> = Vec::new();
    for cred in credentials(vmi) {
        let key = &cred["sshPublicKey"];
        if let Some(users) = key["propagationMethod"]["qemuGuestAgent"]["users"].as_array() {
            let keys = secrets.keys(secret_name(&key["source"]));
            for user in users.iter().filter_map(Value::as_str) {
                let Some(a) = accounts.iter_mut().find(|a| a.name == user) else { continue };
                // Several credentials for one user: their keys together replace the file's.
                if !replaced.iter().any(|r| r == user) {
                    a.keys.clear();
                    replaced.push(user.to_string());
                }
                a.keys.extend(
                    keys.iter().filter(|k| !a.keys.contains(k)).cloned().collect::<Vec<_>>(),
                );
            }
        }
        let pw = &cred["userPassword"];
        if pw["propagationMethod"].get("qemuGuestAgent").is_some() {
            let data = secrets.0.get(secret_name(&pw["source"])).into_iter().flatten();
            for (user, password) in data {
                if let Some(a) = accounts.iter_mut().find(|a| &a.name == user) {
                    a.password = Some(password.clone());
                }
            }
        }
    }
    accounts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::behaviour::guest::identity::accounts;

    fn b64(s: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn keys_reach_the_default_user_at_boot_and_the_agent_users_while_running() {
        let secret = |name: &str, data: Value| json!({"metadata": {"name": name}, "data": data});
        let related = BTreeMap::from([
            (
                "accessSecrets".to_string(),
                Arc::new(json!([
                    secret("boot", json!({"a": b64("ssh-ed25519 AAA one\nssh-ed25519 BBB two\n")})),
                    secret("agent", json!({"k": b64("ssh-rsa CCC three")})),
                ])),
            ),
            (
                "passwordSecrets".to_string(),
                Arc::new(json!([secret(
                    "pw",
                    json!({"fedora": b64("s3cret"), "nobody": b64("x")})
                ),])),
            ),
        ]);
        let src = |n: &str| json!({"secret": {"secretName": n}});
        let vmi = json!({"spec": {"accessCredentials": [
            {"sshPublicKey": {"source": src("boot"), "propagationMethod": {"noCloud": {}}}},
            {"sshPublicKey": {"source": src("agent"), "propagationMethod": {"qemuGuestAgent": {"users": ["root", "ghost"]}}}},
            {"userPassword": {"source": src("pw"), "propagationMethod": {"qemuGuestAgent": {}}}},
        ]}});
        let secrets = Secrets::among(&related);
        let mut booted = accounts(&json!({"ssh_authorized_keys": ["ssh-ed25519 ZZZ own"]}));
        at_boot(&vmi, &secrets, &mut booted);
        let fedora = booted.iter().find(|a| a.name == "fedora").unwrap();
        assert_eq!(
            fedora.keys,
            ["ssh-ed25519 ZZZ own", "ssh-ed25519 AAA one", "ssh-ed25519 BBB two"]
        );
        let now = by_agent(&vmi, &secrets, &booted);
        let get = |n: &str| now.iter().find(|a| a.name == n).unwrap();
        assert_eq!(get("root").keys, ["ssh-rsa CCC three"]);
        assert_eq!(get("fedora").password.as_deref(), Some("s3cret"));
        assert!(now.iter().all(|a| a.name != "ghost" && a.name != "nobody"), "no user is made");
    }
}
