//! The boot log a guest writes on its serial console (`console=ttyS0`): the kernel's lines,
//! then systemd's, with times and the root UUID drawn from the seeded generator (a seed and
//! a VMI repeat them), over about a second and a half of wall time.

use std::time::Duration;

use lifecycle::Rng;

use super::identity::Identity;

/// What the kernel writes as the guest restarts.
pub const RESTART: &str =
    "[  OK  ] Reached target reboot.target - System Reboot.\nreboot: Restarting system\n";
/// What the guest writes as it powers off.
pub const POWER_DOWN: &str =
    "[  OK  ] Reached target poweroff.target - System Power Off.\nreboot: Power down\n";

/// The boot's lines, each with the wait before it; `boot` (1 for the first) varies the draw.
pub fn log(id: &Identity, mut rng: Rng, boot: u64) -> Vec<(Duration, String)> {
    for _ in 1..boot {
        rng.next_u64();
    }
    let os = &id.os;
    let release = os["kernelRelease"].as_str().unwrap_or("6.8.5-301.fc40.x86_64");
    let version = os["kernelVersion"].as_str().unwrap_or("#1 SMP");
    let pretty = os["prettyName"].as_str().unwrap_or("Linux");
    let hex = |rng: &mut Rng, n: usize| -> String {
        (0..n).map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap_or('0')).collect()
    };
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        hex(&mut rng, 8),
        hex(&mut rng, 4),
        hex(&mut rng, 4),
        hex(&mut rng, 4),
        hex(&mut rng, 12)
    );
    let kernel = [
        format!("Linux version {release} (mockbuild@koji) (gcc (GCC) 14.0.1) {version}"),
        format!("Command line: BOOT_IMAGE=(hd0,gpt3)/vmlinuz-{release} root=UUID={uuid} ro console=tty1 console=ttyS0,115200n8"),
        "DMI: KubeVirt None/RHEL, BIOS 1.16.3-2.el9 04/01/2014".into(),
        "Hypervisor detected: KVM".into(),
        "kvm-clock: using sched offset of 2417783625 cycles".into(),
        "virtio_blk virtio2: [vda] 10485760 512-byte logical blocks (5.37 GB/5.00 GiB)".into(),
        "virtio_net virtio1 eth0: renamed from enp1s0".into(),
        format!("EXT4-fs (vda1): mounted filesystem {uuid} ro with ordered data mode."),
    ];
    let systemd = [
        format!("Welcome to {pretty}!"),
        "[  OK  ] Reached target local-fs.target - Local File Systems.".into(),
        "[  OK  ] Started systemd-journald.service - Journal Service.".into(),
        "[  OK  ] Started NetworkManager.service - Network Manager.".into(),
        "[  OK  ] Finished cloud-init-local.service - Cloud-init: Local Stage (pre-network)."
            .into(),
        "[  OK  ] Started qemu-guest-agent.service - QEMU Guest Agent.".into(),
        "[  OK  ] Started sshd.service - OpenSSH server daemon.".into(),
        "[  OK  ] Finished cloud-init.service - Cloud-init: Network Stage.".into(),
        "[  OK  ] Started serial-getty@ttyS0.service - Serial Getty on ttyS0.".into(),
        "[  OK  ] Reached target multi-user.target - Multi-User System.".into(),
    ];
    let mut out = Vec::new();
    let mut t = 0u64;
    for line in kernel {
        t += 1 + rng.below(400_000);
        out.push((
            Duration::from_millis(60),
            format!("[{:5}.{:06}] {line}\n", t / 1_000_000, t % 1_000_000),
        ));
    }
    for line in systemd {
        out.push((Duration::from_millis(80), format!("{line}\n")));
    }
    out
}
