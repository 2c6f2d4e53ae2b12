//! The benchmark's object: a realistic KubeVirt VirtualMachine (tests/manifests/vm.yaml's guest),
//! its cloud-init user data padded so the JSON body is 2 KB, as big as real VMs' specs run.
//! etcd stores the very same bytes as its value.

use serde_json::json;

/// The JSON body's size, in bytes, for a name of `NAME_LEN` characters.
pub const SIZE: usize = 2048;
/// Names are formatted to this length (`Body::name`), so every body is `SIZE` bytes.
const NAME_LEN: usize = 20;
const PLACEHOLDER: &str = "@@name@@";

pub struct Body {
    template: String,
}

impl Body {
    pub fn new() -> Body {
        let user_data = |pad: &str| {
            format!(
                "#cloud-config\nuser: fedora\npassword: fedora\nchpasswd: {{ expire: False }}\n\
                 ssh_authorized_keys:\n  - ssh-ed25519 {pad} bench@virt\n"
            )
        };
        let make = |pad: &str| {
            json!({
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {
                    "name": PLACEHOLDER,
                    "labels": {"app": "bench", "kubevirt.io/os": "fedora"},
                    "annotations": {"description": "a small Fedora guest"},
                },
                "spec": {
                    "runStrategy": "Halted",
                    "template": {
                        "metadata": {"labels": {
                            "kubevirt.io/domain": PLACEHOLDER, "kubevirt.io/size": "small"}},
                        "spec": {
                            "terminationGracePeriodSeconds": 180,
                            "domain": {
                                "cpu": {"cores": 2, "sockets": 1, "threads": 1},
                                "memory": {"guest": "2Gi"},
                                "resources": {"requests": {"memory": "2Gi"}},
                                "machine": {"type": "q35"},
                                "devices": {
                                    "disks": [
                                        {"name": "containerdisk", "disk": {"bus": "virtio"},
                                         "bootOrder": 1},
                                        {"name": "cloudinitdisk", "disk": {"bus": "virtio"}},
                                    ],
                                    "interfaces": [{"name": "default", "masquerade": {},
                                                    "model": "virtio"}],
                                    "rng": {},
                                },
                            },
                            "networks": [{"name": "default", "pod": {}}],
                            "volumes": [
                                {"name": "containerdisk", "containerDisk": {
                                    "image": "quay.io/containerdisks/fedora:40",
                                    "imagePullPolicy": "IfNotPresent"}},
                                {"name": "cloudinitdisk", "cloudInitNoCloud": {
                                    "userData": user_data(pad)}},
                            ],
                        },
                    },
                },
            })
            .to_string()
        };
        let named_len = |t: &str| t.len() - 2 * PLACEHOLDER.len() + 2 * NAME_LEN;
        let bare = make("");
        let pad = "A".repeat(SIZE.saturating_sub(named_len(&bare)));
        let template = make(&pad);
        assert_eq!(named_len(&template), SIZE, "the padded body");
        Body { template }
    }

    /// The `i`th object's name in `set` (a namespace for us, a key prefix for etcd).
    pub fn name(set: &str, i: usize) -> String {
        let prefix = format!("vm-{set}-");
        format!("{prefix}{i:0width$}", width = NAME_LEN.saturating_sub(prefix.len()))
    }

    pub fn json(&self, name: &str) -> String {
        self.template.replace(PLACEHOLDER, name)
    }
}
