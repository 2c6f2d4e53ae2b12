//! The simulated guests: one per running VMI, met lazily (by its console, its agent's reads or
//! a power action) and kept until it powers off. A guest met within `BOOT_WINDOW` of its VMI's
//! Running boots then, writing its boot log to the serial console (a console attached during
//! boot sees it, then the login prompt); one met later is already up. Its serial console is
//! one port: a new connection cuts the old one, as virt-handler cuts it
//! (pkg/virt-handler/rest/console.go: the previous stream's stop channel closed, its
//! connection dropped without a close frame), and the port's session (the tty, who is logged
//! in) outlives the connections, as a getty's does.
//!
//! In-guest power goes through the registry as virt-handler sees it: a poweroff (or a reboot
//! under `rebootPolicy: Terminate`, converter/compute/reboot_policy.go: on_reboot=destroy) ends
//! the VMI Succeeded (the kind's `guest/poweroff` action, as virt-handler); a reboot otherwise
//! keeps it Running and boots again on the same console (QEMU keeps the serial port).
//!
//! Its VGA console (tty1) is another terminal with its own getty and session, drawn on a text
//! screen that VNC shows: one VNC connection at a time, a new one cutting the old unless it
//! asks to preserve it (pkg/virt-handler/rest/console.go: `preserveSession`).
//!
//! - `tty`: the serial line discipline; `shell`: login and the shell over any byte stream;
//! - `identity`: what the guest knows of itself, from its VMI (cloud-init's accounts);
//!   `credentials`: the accounts' keys and passwords from the VMI's access-credential Secrets;
//! - `screen`, `font`: the VGA text screen; `vnc`: QEMU's RFB server over it.

mod boot;
pub mod credentials;
mod font;
pub mod identity;
pub mod screen;
pub mod shell;
pub mod ssh;
pub mod tty;
pub mod vnc;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use lifecycle::Rng;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use self::credentials::Secrets;
use self::identity::{Account, Identity};
use self::screen::{Screen, Text};
use self::shell::{Machine, Power, Session};
use crate::object::meta::parse_rfc3339;
use crate::resource::ResourceInfo;

/// A guest met this long after its VMI turned Running is already up.
const BOOT_WINDOW: Duration = Duration::from_secs(10);

/// The serial console's session key in the guest's user list (an SSH session takes others).
const CONSOLE_SESSION: u64 = 0;

/// The VGA console's (tty1's) session key.
const TTY1_SESSION: u64 = u64::MAX;

/// SSH connections' session keys start here.
const SSH_SESSIONS: u64 = 1 << 32;

/// The guests of the running VMIs, by VMI UID.
#[derive(Debug, Clone)]
pub struct Guests {
    map: Arc<Mutex<HashMap<String, Arc<Guest>>>>,
    /// `--simulate-seed`: the boot logs' numbers repeat with it.
    seed: u64,
}

/// A guest and where it runs.
#[derive(Debug)]
pub struct Guest {
    /// Its VMI: kind, namespace, name, UID.
    pub res: &'static ResourceInfo,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// `spec.domain.rebootPolicy: Terminate`.
    terminate_on_reboot: bool,
    seed: u64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    machine: Machine,
    /// The accounts as the guest booted with them (cloud-init's), under the agent's changes.
    booted: Vec<Account>,
    console: Session,
    /// The connection on the serial port: dropping the sender ends it.
    attached: Option<(u64, mpsc::UnboundedSender<Bytes>)>,
    connections: u64,
    /// Bumped by each boot: a boot's writer stops once another began.
    boots: u64,
    booting: bool,
    down: bool,
    /// tty1: its session and screen, the VNC connection showing it, and a signal to the
    /// connection when the screen changed, it was cut or the guest went down.
    vga: Session,
    screen: Screen,
    display: Option<u64>,
    changed: watch::Sender<()>,
    /// The SSH shells, by session key.
    ssh: HashMap<u64, Session>,
}

impl State {
    /// Writes to both consoles (the kernel's messages).
    fn both(&mut self, bytes: Vec<u8>) {
        self.show(&bytes);
        self.write(bytes);
    }

    /// Draws on tty1.
    fn show(&mut self, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.screen.write(bytes);
            self.changed.send_replace(());
        }
    }

    fn write(&mut self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if let Some((_, out)) = &self.attached {
            if out.send(Bytes::from(bytes)).is_err() {
                self.attached = None;
            }
        }
    }
}

/// A connection to a guest's serial console: what the guest writes comes on `output` (closed
/// when the connection is cut or the guest goes down); what the client types goes to `input`.
#[derive(Debug)]
pub struct Console {
    pub guest: Arc<Guest>,
    pub output: mpsc::UnboundedReceiver<Bytes>,
    id: u64,
}

/// A VNC connection to a guest's display: `changed` wakes it when the screen may have changed
/// (or the connection was cut, or the guest went down).
#[derive(Debug)]
pub struct Display {
    pub guest: Arc<Guest>,
    pub changed: watch::Receiver<()>,
    id: u64,
}

impl Guests {
    pub fn new(seed: u64) -> Guests {
        Guests { map: Default::default(), seed }
    }

    /// The guest of `vmi` (of `res`), met now if it is Running; `None` otherwise. `secrets`:
    /// those its access credentials name, applied as the agent applies them.
    pub fn guest(
        &self,
        res: &'static ResourceInfo,
        vmi: &Value,
        secrets: &Secrets,
    ) -> Option<Arc<Guest>> {
        if vmi["status"]["phase"] != "Running" {
            return None;
        }
        let uid = vmi["metadata"]["uid"].as_str()?.to_string();
        let mut map = self.map.lock().expect("guests");
        map.retain(|_, g| !g.state.lock().expect("guest").down);
        if let Some(g) = map.get(&uid) {
            g.credentials(vmi, secrets);
            return Some(g.clone());
        }
        let since = vmi["status"]["phaseTransitionTimestamps"]
            .as_array()
            .and_then(|a| a.iter().rev().find(|t| t["phase"] == "Running"))
            .and_then(|t| parse_rfc3339(t["phaseTransitionTimestamp"].as_str()?));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let up = Duration::from_secs(since.map_or(0, |s| (now - s).max(0) as u64));
        let booting = up < BOOT_WINDOW;
        let booted = Instant::now().checked_sub(up).unwrap_or_else(Instant::now);
        let meta = &vmi["metadata"];
        // A VMI of the same name replaced the one a guest ran in: that guest is gone.
        let same = |g: &Guest| {
            meta["namespace"] == g.namespace.as_str() && meta["name"] == g.name.as_str()
        };
        map.retain(|_, g| !same(g));
        let mut id = Identity::of(vmi);
        credentials::at_boot(vmi, secrets, &mut id.accounts);
        let booted_accounts = std::mem::take(&mut id.accounts);
        id.accounts = credentials::by_agent(vmi, secrets, &booted_accounts);
        let machine = Machine { id, files: Default::default(), users: vec![], booted };
        let guest = Arc::new(Guest {
            res,
            namespace: meta["namespace"].as_str().unwrap_or_default().to_string(),
            name: meta["name"].as_str().unwrap_or_default().to_string(),
            uid: uid.clone(),
            terminate_on_reboot: vmi["spec"]["domain"]["rebootPolicy"] == "Terminate",
            seed: self.seed,
            state: Mutex::new(State {
                machine,
                booted: booted_accounts,
                console: Session::new(CONSOLE_SESSION),
                attached: None,
                connections: 0,
                boots: 0,
                booting: false,
                down: false,
                vga: Session::new(TTY1_SESSION),
                screen: Screen::default(),
                display: None,
                changed: watch::channel(()).0,
                ssh: HashMap::new(),
            }),
        });
        map.insert(uid, guest.clone());
        drop(map);
        if booting {
            guest.boot(false);
        } else {
            // Up already: its VGA console shows tty1's getty.
            let mut st = guest.state.lock().expect("guest");
            let banner = st.vga.banner_on(&st.machine, "tty1");
            st.show(&banner);
        }
        Some(guest)
    }

    /// What the guest of `vmi` reports through its agent (`$guest` in the actions): who is
    /// logged in and its filesystems; null when it is not running.
    pub fn report(&self, res: &'static ResourceInfo, vmi: &Value, secrets: &Secrets) -> Value {
        match self.guest(res, vmi, secrets) {
            Some(g) => g.report(),
            None => Value::Null,
        }
    }

    /// The guest of a VMI gone down is forgotten.
    fn forget(&self, uid: &str) {
        self.map.lock().expect("guests").remove(uid);
    }
}

impl Guest {
    /// Attaches a connection to the serial console, cutting the one attached before.
    pub fn attach(self: &Arc<Self>) -> Console {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut st = self.state.lock().expect("guest");
        st.connections += 1;
        let id = st.connections;
        // The previous connection's sender dropped: its stream ends, with no close frame.
        st.attached = Some((id, tx));
        Console { guest: self.clone(), output: rx, id }
    }

    /// Attaches a VNC connection to the display, cutting the one attached before; `None` when
    /// `preserve` and one is attached.
    pub fn display(self: &Arc<Self>, preserve: bool) -> Option<Display> {
        let mut st = self.state.lock().expect("guest");
        if preserve && st.display.is_some() {
            return None;
        }
        st.connections += 1;
        let id = st.connections;
        st.display = Some(id);
        // The previous connection wakes to find itself cut.
        st.changed.send_replace(());
        let changed = st.changed.subscribe();
        Some(Display { guest: self.clone(), changed, id })
    }

    /// What the display shows now (vnc/screenshot).
    pub fn screenshot(&self) -> Text {
        self.state.lock().expect("guest").screen.text
    }

    /// The agent's view: `userList` and `fsInfo` as virt-launcher builds them
    /// (pkg/virt-launcher/virtwrap/manager.go `GetGuestInfo`; api/types.go).
    pub fn report(&self) -> Value {
        let st = self.state.lock().expect("guest");
        let users: Vec<Value> = st
            .machine
            .users
            .iter()
            .map(|(_, u, t)| json!({"userName": u, "loginTime": t}))
            .collect();
        let fs = json!({
            "diskName": "vda1", "mountPoint": "/", "fileSystemType": "ext4",
            "usedBytes": shell::ROOT_USED, "totalBytes": shell::ROOT_TOTAL,
            "disk": [{"busType": "virtio"}],
        });
        json!({"users": users, "filesystems": [fs]})
    }

    /// Boots: the boot log on the console over its time, then the login prompt. `reboot`
    /// first ends the sessions and writes the kernel's restart line.
    pub fn boot(self: &Arc<Self>, reboot: bool) {
        let generation = {
            let mut st = self.state.lock().expect("guest");
            if reboot {
                let State { console, vga, machine, .. } = &mut *st;
                console.logout(machine);
                vga.logout(machine);
                machine.users.clear();
                machine.booted = Instant::now();
                st.both(tty::onlcr(boot::RESTART));
                // The firmware clears the VGA screen before the new boot's lines.
                st.screen.clear();
            }
            st.boots += 1;
            st.booting = true;
            st.boots
        };
        let lines = {
            let st = self.state.lock().expect("guest");
            let rng = Rng::derived(self.seed, &["guest", &self.namespace, &self.name]);
            boot::log(&st.machine.id, rng, generation)
        };
        let guest = self.clone();
        tokio::spawn(async move {
            for (delay, line) in lines {
                tokio::time::sleep(delay).await;
                let mut st = guest.state.lock().expect("guest");
                if st.boots != generation || st.down {
                    return;
                }
                st.both(tty::onlcr(&line));
            }
            let mut st = guest.state.lock().expect("guest");
            if st.boots == generation && !st.down {
                st.booting = false;
                let banner = st.console.banner(&st.machine);
                st.write(banner);
                let banner = st.vga.banner_on(&st.machine, "tty1");
                st.show(&banner);
            }
        });
    }

    /// Goes down: the console's connection dropped, the guest forgotten.
    pub fn halt(&self, guests: &Guests) {
        let mut st = self.state.lock().expect("guest");
        st.both(tty::onlcr(boot::POWER_DOWN));
        st.down = true;
        st.attached = None;
        st.display = None;
        st.ssh.clear();
        st.machine.users.clear();
        drop(st);
        guests.forget(&self.uid);
    }

    /// The agent's propagation of `vmi`'s credentials from `secrets`, as they are now.
    pub fn credentials(&self, vmi: &Value, secrets: &Secrets) {
        let mut st = self.state.lock().expect("guest");
        st.machine.id.accounts = credentials::by_agent(vmi, secrets, &st.booted);
    }

    /// What a power request does to the guest; `true` when the VMI ends (then the caller
    /// writes it Succeeded).
    pub fn power(self: &Arc<Self>, p: Power, guests: &Guests) -> bool {
        match (p, self.terminate_on_reboot) {
            (Power::Reboot, false) => {
                self.boot(true);
                false
            }
            _ => {
                self.halt(guests);
                true
            }
        }
    }
}

/// sshd's side of the guest (`ssh`): its host key, its accounts, the sessions of its
/// connections (each logged in while it lasts, as the agent's user list shows) and their shells.
impl Guest {
    /// The seed of the guest's host key: the same for the same VMI under the same
    /// `--simulate-seed`, so a client's known_hosts stays valid across runs.
    pub fn host_key_seed(&self) -> [u8; 32] {
        let mut rng = Rng::derived(self.seed, &["ssh-host-key", &self.namespace, &self.name]);
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            chunk.copy_from_slice(&rng.below(u64::MAX).to_le_bytes());
        }
        seed
    }

    /// The account `user` (for authentication).
    pub fn account(&self, user: &str) -> Option<identity::Account> {
        self.state.lock().expect("guest").machine.id.account(user).cloned()
    }

    pub fn is_down(&self) -> bool {
        self.state.lock().expect("guest").down
    }

    /// Whether sshd listens: the guest is up and done booting.
    pub fn sshd_up(&self) -> bool {
        let st = self.state.lock().expect("guest");
        !st.down && !st.booting
    }

    /// Logs `user` in for a new connection; its session key, `None` when the guest is down.
    pub fn ssh_login(&self, user: &str) -> Option<u64> {
        let mut st = self.state.lock().expect("guest");
        if st.down || st.booting {
            return None;
        }
        st.connections += 1;
        let id = SSH_SESSIONS + st.connections;
        let State { machine, ssh, .. } = &mut *st;
        ssh.insert(id, Session::logged_in(id, user, machine));
        Some(id)
    }

    /// The connection's end: its session logged out.
    pub fn ssh_logout(&self, id: u64) {
        let mut st = self.state.lock().expect("guest");
        let State { machine, ssh, .. } = &mut *st;
        if let Some(mut s) = ssh.remove(&id) {
            s.logout(machine);
        }
        machine.users.retain(|u| u.0 != id);
    }

    /// The shell's first prompt on session `id`.
    pub fn ssh_prompt(&self, id: u64) -> Vec<u8> {
        let st = self.state.lock().expect("guest");
        st.ssh.get(&id).map(|s| s.prompt_now(&st.machine)).unwrap_or_default()
    }

    /// Feeds a pty's input to session `id`: the output, a power request, and whether the
    /// shell goes on (an `exit` ends it).
    pub fn ssh_input(&self, id: u64, bytes: &[u8]) -> (Vec<u8>, Option<Power>, bool) {
        let mut st = self.state.lock().expect("guest");
        let State { machine, ssh, down, .. } = &mut *st;
        let Some(s) = ssh.get_mut(&id).filter(|_| !*down) else {
            return (Vec::new(), None, false);
        };
        let (out, power) = s.feed(bytes, machine);
        let open = s.in_shell();
        (out, power, open)
    }

    /// Runs `line` on session `id` as an `exec` request: output, exit status, power request.
    pub fn ssh_exec(&self, id: u64, line: &str) -> (String, u32, Option<Power>) {
        let mut st = self.state.lock().expect("guest");
        let State { machine, ssh, .. } = &mut *st;
        match ssh.get_mut(&id) {
            Some(s) => s.exec(line, machine),
            None => (String::new(), 255, None),
        }
    }

    /// `f` on the guest's machine (its files, for SFTP).
    pub fn with_machine<R>(&self, f: impl FnOnce(&mut Machine) -> R) -> R {
        f(&mut self.state.lock().expect("guest").machine)
    }
}

impl Console {
    /// Feeds what the client typed; a power request it made, if any. Input while the guest
    /// boots reaches nothing (no getty yet).
    pub fn input(&self, bytes: &[u8]) -> Option<Power> {
        let mut st = self.guest.state.lock().expect("guest");
        if st.attached.as_ref().is_none_or(|(id, _)| *id != self.id) || st.booting || st.down {
            return None;
        }
        let State { console, machine, .. } = &mut *st;
        let (out, power) = console.feed(bytes, machine);
        st.write(out);
        power
    }
}

#[cfg(test)]
mod tests;

impl Display {
    /// The screen's text, or `None` once this connection was cut or the guest went down.
    pub fn text(&self) -> Option<Text> {
        let st = self.guest.state.lock().expect("guest");
        (st.display == Some(self.id) && !st.down).then_some(st.screen.text)
    }

    /// Feeds what the client's keys typed into tty1; a power request it made, if any.
    pub fn input(&self, bytes: &[u8]) -> Option<Power> {
        let mut st = self.guest.state.lock().expect("guest");
        if st.display != Some(self.id) || st.booting || st.down || bytes.is_empty() {
            return None;
        }
        let State { vga, machine, .. } = &mut *st;
        let (out, power) = vga.feed(bytes, machine);
        st.show(&out);
        power
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let mut st = self.guest.state.lock().expect("guest");
        if st.display == Some(self.id) {
            st.display = None;
        }
    }
}
