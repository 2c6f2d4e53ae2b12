use std::time::Instant;

use serde_json::json;

use super::identity::Identity;
use super::shell::{Machine, Power, Session};

fn machine() -> Machine {
    let vmi = json!({
        "metadata": {"name": "vm1", "namespace": "ns1"},
        "spec": {
            "domain": {"devices": {"interfaces": [{"name": "default", "bridge": {}}]}},
            "volumes": [{"name": "ci", "cloudInitNoCloud": {"userData": "#cloud-config\npassword: pw\nchpasswd: {expire: false}\n"}}],
        },
        "status": {
            "interfaces": [{"ipAddress": "10.244.0.9", "mac": "52:54:00:12:34:56"}],
            "guestOSInfo": {"id": "fedora", "name": "Fedora Linux", "prettyName": "Fedora Linux 40 (Cloud Edition)",
                "version": "40 (Cloud Edition)", "versionId": "40", "kernelRelease": "6.8.5-301.fc40.x86_64",
                "kernelVersion": "#1 SMP", "machine": "x86_64"},
        },
    });
    Machine {
        id: Identity::of(&vmi),
        files: Default::default(),
        users: vec![],
        booted: Instant::now(),
    }
}

/// Types `text` and answers what the guest wrote, as text.
fn typed(s: &mut Session, m: &mut Machine, text: &str) -> (String, Option<Power>) {
    let (out, power) = s.feed(text.as_bytes(), m);
    (String::from_utf8(out).unwrap(), power)
}

#[test]
fn a_login_on_the_serial_console_reaches_a_shell_that_answers_as_the_guest() {
    let (mut m, mut s) = (machine(), Session::new(0));
    let banner = String::from_utf8(s.banner(&m)).unwrap();
    assert!(banner.ends_with("\r\nvm1 login: "), "{banner:?}");
    assert!(banner.contains("Fedora Linux 40 (Cloud Edition)\r\nKernel 6.8.5-301.fc40.x86_64"));
    // The password is not echoed; a wrong one is refused.
    assert_eq!(typed(&mut s, &mut m, "fedora\r").0, "fedora\r\nPassword: ");
    assert_eq!(typed(&mut s, &mut m, "nope\r").0, "\r\n\r\nLogin incorrect\r\nvm1 login: ");
    typed(&mut s, &mut m, "fedora\r");
    assert_eq!(typed(&mut s, &mut m, "pw\r").0, "\r\n[fedora@vm1 ~]$ ");
    assert_eq!(m.users.iter().map(|u| u.1.as_str()).collect::<Vec<_>>(), ["fedora"]);
    let run = |s: &mut Session, m: &mut Machine, cmd: &str| {
        let out = typed(s, m, &format!("{cmd}\r")).0;
        let out = out.strip_prefix(&format!("{cmd}\r\n")).unwrap().to_string();
        out.strip_suffix("[fedora@vm1 ~]$ ").unwrap_or(&out).to_string()
    };
    assert_eq!(run(&mut s, &mut m, "hostname"), "vm1\r\n");
    assert_eq!(run(&mut s, &mut m, "whoami"), "fedora\r\n");
    assert_eq!(
        run(&mut s, &mut m, "id"),
        "uid=1000(fedora) gid=1000(fedora) groups=1000(fedora),10(wheel)\r\n"
    );
    assert_eq!(run(&mut s, &mut m, "sudo whoami"), "root\r\n");
    assert!(run(&mut s, &mut m, "uname -a")
        .starts_with("Linux vm1 6.8.5-301.fc40.x86_64 #1 SMP x86_64"));
    let ip = run(&mut s, &mut m, "ip addr");
    assert!(
        ip.contains("link/ether 52:54:00:12:34:56")
            && ip.contains("inet 10.244.0.9/24 brd 10.244.0.255"),
        "{ip}"
    );
    assert!(run(&mut s, &mut m, "cat /etc/os-release")
        .contains("PRETTY_NAME=\"Fedora Linux 40 (Cloud Edition)\""));
    let df = run(&mut s, &mut m, "df -h");
    assert!(df.contains("/dev/vda1       5.0G  1.2G  3.9G  24% /"), "{df}");
    assert_eq!(run(&mut s, &mut m, "echo hello > notes.txt"), "");
    assert_eq!(run(&mut s, &mut m, "touch empty"), "");
    assert_eq!(run(&mut s, &mut m, "ls"), "empty  notes.txt\r\n");
    assert_eq!(run(&mut s, &mut m, "cat notes.txt"), "hello\r\n");
    assert_eq!(
        run(&mut s, &mut m, "touch /etc/x"),
        "touch: cannot touch /etc/x: Permission denied\r\n"
    );
    assert_eq!(run(&mut s, &mut m, "frobnicate --now"), "bash: frobnicate: command not found\r\n");
    assert!(run(&mut s, &mut m, "uptime").contains("up 0 min,  1 user,  load average"));
    // Logging out leaves the user list and shows the login prompt again.
    let out = typed(&mut s, &mut m, "exit\r").0;
    assert!(out.ends_with("vm1 login: "), "{out:?}");
    assert!(m.users.is_empty());
    typed(&mut s, &mut m, "fedora\rpw\r");
    assert_eq!(typed(&mut s, &mut m, "sudo reboot\r").1, Some(Power::Reboot));
    assert_eq!(typed(&mut s, &mut m, "shutdown -h now\r").1, Some(Power::Off));
    assert_eq!(typed(&mut s, &mut m, "poweroff\r").1, Some(Power::Off));
}

#[test]
fn the_boot_log_repeats_with_the_seed() {
    let m = machine();
    let a = super::boot::log(&m.id, lifecycle::Rng::derived(7, &["guest", "ns1", "vm1"]), 1);
    let b = super::boot::log(&m.id, lifecycle::Rng::derived(7, &["guest", "ns1", "vm1"]), 1);
    let c = super::boot::log(&m.id, lifecycle::Rng::derived(8, &["guest", "ns1", "vm1"]), 1);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a[0].1.contains("Linux version 6.8.5-301.fc40.x86_64"), "{:?}", a[0]);
}

#[tokio::test]
async fn a_replaced_vmi_leaves_no_guest_behind() {
    static VMI: crate::resource::ResourceInfo = crate::resource::ResourceInfo::EXAMPLE;
    let guests = super::Guests::new(1);
    let vmi = |uid: &str| {
        json!({"metadata": {"name": "vm1", "namespace": "ns1", "uid": uid},
               "status": {"phase": "Running"}})
    };
    let first = guests.guest(&VMI, &vmi("a"), &Default::default()).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &first,
        &guests.guest(&VMI, &vmi("a"), &Default::default()).unwrap()
    ));
    let second = guests.guest(&VMI, &vmi("b"), &Default::default()).unwrap();
    assert_eq!(second.uid, "b");
    assert_eq!(guests.map.lock().unwrap().len(), 1);
    let pending = json!({"metadata": {"uid": "c"}, "status": {"phase": "Pending"}});
    assert!(guests.guest(&VMI, &pending, &Default::default()).is_none());
}

#[tokio::test]
async fn one_display_at_a_time_with_tty1_its_own_session() {
    static VMI: crate::resource::ResourceInfo = crate::resource::ResourceInfo::EXAMPLE;
    let guests = super::Guests::new(1);
    // Running for an hour: already up, no boot (the guest shows its prompts once booted).
    let vmi = json!({"metadata": {"name": "vm1", "namespace": "ns1", "uid": "u"},
                     "status": {"phase": "Running", "phaseTransitionTimestamps": [
                         {"phase": "Running", "phaseTransitionTimestamp": "2000-01-01T00:00:00Z"}]}});
    let guest = guests.guest(&VMI, &vmi, &Default::default()).unwrap();
    let first = guest.display(false).unwrap();
    // preserveSession: refused while one is attached; otherwise the old one is cut.
    assert!(guest.display(true).is_none());
    let second = guest.display(false).unwrap();
    assert!(first.text().is_none());
    assert!(first.input(b"x").is_none());
    let lines = |t: super::screen::Text| -> Vec<String> {
        t.iter().map(|r| String::from_utf8_lossy(r).trim_end().to_string()).collect()
    };
    // Up already: tty1's getty is on the screen.
    let shown = lines(second.text().unwrap());
    assert_eq!(shown[..5], ["", "Linux", "Kernel  on an x86_64 (tty1)", "", "vm1 login:"]);
    // Keys typed reach tty1's session, drawn on the screen; the serial console sees nothing.
    let console = guest.attach();
    second.input(b"root\r");
    assert!(second.changed.has_changed().unwrap());
    assert_eq!(lines(second.text().unwrap())[4..6], ["vm1 login: root", "Password:"]);
    let mut output = console.output;
    assert!(output.try_recv().is_err());
    // A closed connection frees the display for a preserving one.
    drop((first, second));
    assert!(guest.display(true).is_some());
}
