//! In-guest power: a poweroff ends the VMI Succeeded and the VM restarts it or not by its run
//! strategy (pkg/virt-controller/watch/vm/vm.go); a reboot keeps it Running and boots again on
//! the same console (QEMU keeps the serial port), or ends it under `rebootPolicy: Terminate`
//! (converter/compute/reboot_policy.go); the `reset` action reboots it the same way.

use serde_json::json;

use super::client::{console, get, running, users, vm, vmi_when, Ended, KV, SUB};
use crate::common::simulating;

#[test]
fn poweroff_from_the_console_ends_the_vmi_and_the_run_strategy_decides_the_rest() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("po");
    for (name, strategy) in [("always", "Always"), ("manual", "Manual")] {
        let body = vm(name, strategy, "masquerade", json!({}));
        assert_eq!(s.post(&format!("{KV}/po/virtualmachines"), &body).status, 201);
    }
    // Manual waits for a start.
    let started = s.put(&format!("{SUB}/po/virtualmachines/manual/start"), &json!({}));
    assert_eq!(started.status, 202, "{}", started.text());
    for (name, how) in [("always", "poweroff"), ("manual", "sudo shutdown -h now")] {
        let first = vmi_when(&s, "po", name, running);
        let mut c = console(&s, "po", name);
        c.expect(&format!("{name} login: "));
        c.login(name, "fedora", "fedora-pw");
        c.send(&format!("{how}\r"));
        c.expect("reboot: Power down");
        assert_eq!(c.ends(), Ended::Abnormally);
        let uid = first["metadata"]["uid"].clone();
        if name == "always" {
            // Always: the final VMI is replaced by a new one, which runs.
            let next = vmi_when(&s, "po", name, |v| v["metadata"]["uid"] != uid && running(v));
            assert_ne!(next["metadata"]["uid"], uid);
        } else {
            // Manual: the Succeeded VMI stays, the VM is Stopped.
            let done = vmi_when(&s, "po", name, |v| v["status"]["phase"] == "Succeeded");
            assert_eq!(done["metadata"]["uid"], uid);
            let vm = crate::common::eventually(std::time::Duration::from_secs(20), || {
                let vm = get(&s, &format!("{KV}/po/virtualmachines/{name}"))?;
                (vm["status"]["printableStatus"] == "Stopped").then_some(vm)
            });
            assert_eq!(vm["spec"]["runStrategy"], "Manual");
            std::thread::sleep(std::time::Duration::from_secs(2));
            let still = get(&s, &format!("{KV}/po/virtualmachineinstances/{name}")).unwrap();
            assert_eq!(
                (&still["metadata"]["uid"], &still["status"]["phase"]),
                (&uid, &json!("Succeeded"))
            );
        }
    }
}

#[test]
fn reboot_boots_again_on_the_same_connection_unless_the_policy_terminates() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("rb");
    let body = vm("vm1", "Always", "masquerade", json!({}));
    assert_eq!(s.post(&format!("{KV}/rb/virtualmachines"), &body).status, 201);
    let terminate = vm("term", "Manual", "masquerade", json!({"rebootPolicy": "Terminate"}));
    assert_eq!(s.post(&format!("{KV}/rb/virtualmachines"), &terminate).status, 201);
    let first = vmi_when(&s, "rb", "vm1", running);
    let mut c = console(&s, "rb", "vm1");
    c.expect("vm1 login: ");
    c.login("vm1", "fedora", "fedora-pw");
    assert_eq!(users(&s, "rb", "vm1"), ["fedora"]);
    c.send("sudo reboot\r");
    let again = c.expect("vm1 login: ");
    assert!(again.contains("reboot: Restarting system"), "{again}");
    assert!(again.contains("Linux version"), "{again}");
    assert!(users(&s, "rb", "vm1").is_empty(), "a reboot ends the sessions");
    let vmi = get(&s, &format!("{KV}/rb/virtualmachineinstances/vm1")).unwrap();
    assert_eq!(
        (&vmi["metadata"]["uid"], &vmi["status"]["phase"]),
        (&first["metadata"]["uid"], &json!("Running"))
    );

    // The reset action reboots the guest the same way, on the same connection.
    let reset = s.put(&format!("{SUB}/rb/virtualmachineinstances/vm1/reset"), &json!({}));
    assert_eq!(reset.status, 200, "{}", reset.text());
    let again = c.expect("vm1 login: ");
    assert!(
        again.contains("reboot: Restarting system") && again.contains("Linux version"),
        "{again}"
    );

    // rebootPolicy Terminate: the reboot ends the VMI.
    assert_eq!(s.put(&format!("{SUB}/rb/virtualmachines/term/start"), &json!({})).status, 202);
    let term = vmi_when(&s, "rb", "term", running);
    let mut t = console(&s, "rb", "term");
    t.expect("term login: ");
    t.login("term", "fedora", "fedora-pw");
    t.send("reboot\r");
    assert_eq!(t.ends(), Ended::Abnormally);
    let done = vmi_when(&s, "rb", "term", |v| v["status"]["phase"] == "Succeeded");
    assert_eq!(done["metadata"]["uid"], term["metadata"]["uid"]);
}
