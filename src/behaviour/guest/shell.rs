//! The guest's login and shell over any byte stream: a `Session` takes the bytes a terminal
//! sends and answers the bytes the guest writes back, through a serial tty's line discipline
//! (`tty`). The serial console runs one from the login prompt; an SSH channel's pty feeds
//! one logged in already.
//! The answers read the guest (`Machine`): its identity, its files, who is logged in.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::identity::{Account, Identity};
use super::tty::{onlcr, Input, Tty};

/// The state a guest's sessions share.
#[derive(Debug)]
pub struct Machine {
    pub id: Identity,
    /// The files users made (`touch`, `echo … >`), by absolute path.
    pub files: BTreeMap<String, String>,
    /// Who is logged in: (session, user, login time in seconds since the epoch), in login order.
    pub users: Vec<(u64, String, f64)>,
    pub booted: Instant,
}

/// What a session's input asks of the machine beyond an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    Off,
    Reboot,
}

#[derive(Debug)]
enum State {
    Login,
    Password(String),
    Shell { user: String, root: bool },
}

/// One terminal's session: login prompt, then a shell.
#[derive(Debug)]
pub struct Session {
    /// Its key in `Machine::users`.
    pub id: u64,
    tty: Tty,
    state: State,
    /// A getty's session prompts for the next login after a logout; sshd's ends.
    getty: bool,
}

/// The root filesystem's top directories (`ls /`).
const ROOT_DIRS: &str = "afs  bin  boot  dev  etc  home  lib  lib64  media  mnt  opt  proc  root  run  sbin  srv  sys  tmp  usr  var";

/// The root filesystem as the guest agent reports it (`filesystemlist`) and `df` shows it.
pub const ROOT_TOTAL: u64 = 5_350_883_328;
pub const ROOT_USED: u64 = 1_231_552_512;

impl Session {
    /// A session at the login prompt.
    pub fn new(id: u64) -> Session {
        Session { id, tty: Tty::default(), state: State::Login, getty: true }
    }

    /// A session already logged in as `user` (sshd's, once it authenticated the user).
    pub fn logged_in(id: u64, user: &str, m: &mut Machine) -> Session {
        let mut s = Session { getty: false, ..Session::new(id) };
        s.login(user, m);
        s
    }

    /// The shell's prompt, or the login prompt.
    pub fn prompt_now(&self, m: &Machine) -> Vec<u8> {
        self.prompt(m)
    }

    /// Whether a user is logged in (an `exit` ends it).
    pub fn in_shell(&self) -> bool {
        matches!(self.state, State::Shell { .. })
    }

    /// Runs one command line as bash -c does for sshd's `exec`: its output (no tty, so
    /// newlines as they are), its exit status (127 for an unknown command, 1 for a refusal)
    /// and a power request.
    pub fn exec(&mut self, line: &str, m: &mut Machine) -> (String, u32, Option<Power>) {
        let (text, effect) = self.command(line.trim(), m);
        let status = if text.ends_with(": command not found\n") {
            127
        } else if ["No such file or directory", "Permission denied", "not in the sudoers"]
            .iter()
            .any(|e| text.contains(e))
        {
            1
        } else {
            0
        };
        match effect {
            Some(Effect::Power(p)) => (text, status, Some(p)),
            _ => (text, status, None),
        }
    }

    /// `/etc/issue` and the login prompt, as agetty writes them on the serial line.
    pub fn banner(&self, m: &Machine) -> Vec<u8> {
        self.banner_on(m, "ttyS0")
    }

    /// `/etc/issue` and the login prompt as agetty writes them on terminal `line` (`\l`).
    pub fn banner_on(&self, m: &Machine, line: &str) -> Vec<u8> {
        let os = &m.id.os;
        let pretty = os["prettyName"].as_str().unwrap_or("Linux");
        let kernel = os["kernelRelease"].as_str().unwrap_or("");
        let arch = os["machine"].as_str().unwrap_or("x86_64");
        let issue = format!("\n{pretty}\nKernel {kernel} on an {arch} ({line})\n\n");
        let mut out = onlcr(&issue);
        out.extend(self.prompt(m));
        out
    }

    fn prompt(&self, m: &Machine) -> Vec<u8> {
        let host = &m.id.hostname;
        match &self.state {
            State::Login => format!("{host} login: ").into_bytes(),
            State::Password(_) => b"Password: ".to_vec(),
            State::Shell { user, root } => {
                let (who, sign) = if *root { ("root", '#') } else { (user.as_str(), '$') };
                format!("[{who}@{host} ~]{sign} ").into_bytes()
            }
        }
    }

    fn login(&mut self, user: &str, m: &mut Machine) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        m.users.retain(|u| u.0 != self.id);
        m.users.push((self.id, user.to_string(), now));
        self.state = State::Shell { user: user.to_string(), root: user == "root" };
    }

    /// Ends the session's login (logout, or the machine going down).
    pub fn logout(&mut self, m: &mut Machine) {
        m.users.retain(|u| u.0 != self.id);
        self.state = State::Login;
        self.tty.silent = false;
    }

    /// Feeds what the terminal sent; answers what the guest writes back, and a power request.
    pub fn feed(&mut self, bytes: &[u8], m: &mut Machine) -> (Vec<u8>, Option<Power>) {
        let mut out = Vec::new();
        for input in self.tty.feed(bytes, &mut out) {
            let line = match input {
                Input::Line(l) => l,
                Input::Interrupt => {
                    if let State::Password(_) = self.state {
                        self.state = State::Login;
                        self.tty.silent = false;
                    }
                    out.extend(self.prompt(m));
                    continue;
                }
                Input::Eof => match self.state {
                    State::Shell { .. } => "exit".to_string(),
                    _ => continue,
                },
            };
            match std::mem::replace(&mut self.state, State::Login) {
                State::Login if line.trim().is_empty() => {}
                State::Login => {
                    self.state = State::Password(line.trim().to_string());
                    self.tty.silent = true;
                }
                State::Password(user) => {
                    self.tty.silent = false;
                    let ok =
                        m.id.account(&user).is_some_and(|a| a.password.as_deref() == Some(&line));
                    if ok {
                        self.login(&user, m);
                    } else {
                        out.extend(onlcr("\nLogin incorrect\n"));
                    }
                }
                State::Shell { user, root } => {
                    self.state = State::Shell { user: user.clone(), root };
                    let (text, effect) = self.command(line.trim(), m);
                    out.extend(onlcr(&text));
                    match effect {
                        Some(Effect::Logout) if !self.getty => {
                            // bash's goodbye on a login shell; sshd then closes the channel.
                            self.logout(m);
                            out.extend(onlcr("logout\n"));
                            return (out, None);
                        }
                        Some(Effect::Logout) => {
                            self.logout(m);
                            out.extend(onlcr("\n"));
                            out.extend(self.banner(m));
                            continue;
                        }
                        Some(Effect::Power(p)) => return (out, Some(p)),
                        None => {}
                    }
                }
            }
            out.extend(self.prompt(m));
        }
        (out, None)
    }

    fn command(&self, line: &str, m: &mut Machine) -> (String, Option<Effect>) {
        let State::Shell { user, root } = &self.state else { return (String::new(), None) };
        let account = m.id.account(user).cloned();
        let who = Who { user, root: *root, account: account.as_ref() };
        command(line, &who, m)
    }
}

enum Effect {
    Logout,
    Power(Power),
}

struct Who<'a> {
    user: &'a str,
    root: bool,
    account: Option<&'a Account>,
}

impl Who<'_> {
    fn name(&self) -> &str {
        if self.root {
            "root"
        } else {
            self.user
        }
    }

    fn home(&self) -> String {
        if self.root {
            "/root".into()
        } else {
            format!("/home/{}", self.user)
        }
    }

    fn uid(&self) -> u32 {
        if self.root {
            0
        } else {
            self.account.map_or(1000, |a| a.uid)
        }
    }
}

fn command(line: &str, who: &Who<'_>, m: &mut Machine) -> (String, Option<Effect>) {
    let (line, redirect) = match line.split_once(">>") {
        Some((l, f)) => (l.trim(), Some((f.trim().to_string(), true))),
        None => match line.split_once('>') {
            Some((l, f)) => (l.trim(), Some((f.trim().to_string(), false))),
            None => (line, None),
        },
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, args)) = words.split_first() else { return (String::new(), None) };
    let text = |s: String| (s, None);
    let out = match (cmd, args) {
        ("hostname", _) => text(format!("{}\n", m.id.hostname)),
        ("whoami", _) => text(format!("{}\n", who.name())),
        ("id", _) => text(id(who)),
        ("pwd", _) => text(format!("{}\n", who.home())),
        ("uname", a) => text(uname(a, m)),
        ("ip", ["addr" | "a" | "address", ..]) => text(ip_addr(m)),
        ("ip", _) => text("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n".into()),
        ("uptime", _) => text(uptime(m)),
        ("df", _) => text(df()),
        ("echo", a) => {
            let s = format!("{}\n", a.join(" "));
            if let Some((file, append)) = &redirect {
                return (write(who, m, file, &s, *append), None);
            }
            text(s)
        }
        ("touch", files) => {
            let mut out = String::new();
            for f in files {
                if !m.files.contains_key(&full(who, f)) {
                    out.push_str(
                        &write(who, m, f, "", true).replace("bash: ", "touch: cannot touch "),
                    );
                }
            }
            text(out)
        }
        ("cat", files) => text(files.iter().map(|f| cat(who, m, f)).collect()),
        ("ls", a) => text(ls(who, m, a)),
        ("sudo", []) => text("usage: sudo -h | -K | -k | -V\n".into()),
        ("sudo", rest) => {
            if !who.root && !who.account.is_some_and(|a| a.sudo) {
                let u = who.user;
                text(format!("{u} is not in the sudoers file.  This incident will be reported.\n"))
            } else {
                let root = Who { user: who.user, root: true, account: who.account };
                return command(&rest_of(&rest.join(" "), &redirect), &root, m);
            }
        }
        ("exit" | "logout", _) => (String::new(), Some(Effect::Logout)),
        ("poweroff" | "halt", _) | ("shutdown", ["-h" | "-P", ..]) => {
            (String::new(), Some(Effect::Power(Power::Off)))
        }
        ("shutdown", ["now"]) => (String::new(), Some(Effect::Power(Power::Off))),
        ("reboot", _) | ("shutdown", ["-r", ..]) => {
            (String::new(), Some(Effect::Power(Power::Reboot)))
        }
        (c, _) => text(format!("bash: {c}: command not found\n")),
    };
    out
}

/// `sudo`'s command line, with the redirection it was typed with.
fn rest_of(rest: &str, redirect: &Option<(String, bool)>) -> String {
    match redirect {
        Some((f, true)) => format!("{rest} >> {f}"),
        Some((f, false)) => format!("{rest} > {f}"),
        None => rest.to_string(),
    }
}

fn id(who: &Who<'_>) -> String {
    let (uid, name) = (who.uid(), who.name());
    if who.root {
        return "uid=0(root) gid=0(root) groups=0(root)\n".into();
    }
    let wheel = if who.account.is_some_and(|a| a.sudo) { ",10(wheel)" } else { "" };
    format!("uid={uid}({name}) gid={uid}({name}) groups={uid}({name}){wheel}\n")
}

fn uname(args: &[&str], m: &Machine) -> String {
    let os = &m.id.os;
    let release = os["kernelRelease"].as_str().unwrap_or("");
    let version = os["kernelVersion"].as_str().unwrap_or("");
    let machine = os["machine"].as_str().unwrap_or("x86_64");
    let host = &m.id.hostname;
    match args.first().copied() {
        Some("-a") => {
            format!("Linux {host} {release} {version} {machine} {machine} {machine} GNU/Linux\n")
        }
        Some("-r") => format!("{release}\n"),
        Some("-n") => format!("{host}\n"),
        Some("-m") => format!("{machine}\n"),
        _ => "Linux\n".into(),
    }
}

/// iproute2's `ip addr` of the loopback and the first interface, as the guest holds them.
fn ip_addr(m: &Machine) -> String {
    let mut out = String::from(
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n",
    );
    if let Some(nic) = &m.id.nic {
        let brd = match nic.address.rsplit_once('.') {
            Some((net, _)) => format!("{net}.255"),
            None => String::new(),
        };
        out.push_str(&format!(
            "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400 qdisc fq_codel state UP group default qlen 1000\n    link/ether {mac} brd ff:ff:ff:ff:ff:ff\n    inet {addr}/{prefix} brd {brd} scope global dynamic noprefixroute eth0\n       valid_lft 86313353sec preferred_lft 86313353sec\n",
            mac = nic.mac,
            addr = nic.address,
            prefix = nic.prefix,
        ));
    }
    out
}

fn uptime(m: &Machine) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let (h, mi, s) = ((now / 3600) % 24, (now / 60) % 60, now % 60);
    let up = m.booted.elapsed().as_secs() / 60;
    let up = match up {
        u if u < 60 => format!("{u} min"),
        u => format!("{}:{:02}", u / 60, u % 60),
    };
    let n = m.users.len();
    let users = if n == 1 { "1 user".to_string() } else { format!("{n} users") };
    format!(" {h:02}:{mi:02}:{s:02} up {up},  {users},  load average: 0.00, 0.00, 0.00\n")
}

/// coreutils' `df -h` size: one decimal below 10, powers of 1024, rounded up.
fn human(bytes: u64) -> String {
    let units = ["", "K", "M", "G", "T"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < units.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    match (i, v < 10.0) {
        (0, _) => format!("{bytes}"),
        (_, true) => format!("{:.1}{}", (v * 10.0).ceil() / 10.0, units[i]),
        (_, false) => format!("{}{}", v.ceil(), units[i]),
    }
}

fn df() -> String {
    let pct = (ROOT_USED * 100).div_ceil(ROOT_TOTAL);
    let row = |fs: &str, size: u64, used: u64, pct: u64, on: &str| {
        let (s, u, a) = (human(size), human(used), human(size - used));
        format!("{fs:<15} {s:>4} {u:>5} {a:>5} {:>4} {on}\n", format!("{pct}%"))
    };
    let mut out = String::from("Filesystem      Size  Used Avail Use% Mounted on\n");
    out.push_str(&row("/dev/vda1", ROOT_TOTAL, ROOT_USED, pct, "/"));
    out.push_str(&row("devtmpfs", 4 << 20, 0, 0, "/dev"));
    out.push_str(&row("tmpfs", 512 << 20, 0, 0, "/dev/shm"));
    out
}

fn cat(who: &Who<'_>, m: &Machine, f: &str) -> String {
    let p = full(who, f);
    match p.as_str() {
        "/etc/hostname" => format!("{}\n", m.id.hostname),
        "/etc/os-release" => os_release(m),
        _ => match authorized_keys(m, &p).or_else(|| m.files.get(&p).cloned()) {
            Some(c) => c,
            None => format!("cat: {f}: No such file or directory\n"),
        },
    }
}

/// `~/.ssh/authorized_keys` of an account with keys (cloud-init's `ssh` module, the agent's
/// `guest-ssh-add-authorized-keys`), one a line.
fn authorized_keys(m: &Machine, path: &str) -> Option<String> {
    let home = path.strip_suffix("/.ssh/authorized_keys")?;
    let name = match home {
        "/root" => "root",
        h => h.strip_prefix("/home/")?,
    };
    let a = m.id.account(name).filter(|a| !a.keys.is_empty())?;
    Some(a.keys.iter().map(|k| format!("{k}\n")).collect())
}

/// An absolute path for `f` typed in the user's home.
fn full(who: &Who<'_>, f: &str) -> String {
    if f.starts_with('/') {
        f.to_string()
    } else if let Some(r) = f.strip_prefix("~/") {
        format!("{}/{r}", who.home())
    } else {
        format!("{}/{f}", who.home())
    }
}

/// Writes `f`: a user only under their home and /tmp, root anywhere.
fn write(who: &Who<'_>, m: &mut Machine, f: &str, s: &str, append: bool) -> String {
    let p = full(who, f);
    let home = format!("{}/", who.home());
    if !who.root && !p.starts_with(&home) && !p.starts_with("/tmp/") {
        return format!("bash: {f}: Permission denied\n");
    }
    let entry = m.files.entry(p).or_default();
    if !append {
        entry.clear();
    }
    entry.push_str(s);
    String::new()
}

fn ls(who: &Who<'_>, m: &Machine, args: &[&str]) -> String {
    let dir = args.iter().find(|a| !a.starts_with('-')).map_or(who.home(), |d| full(who, d));
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() {
        return format!("{ROOT_DIRS}\n");
    }
    let prefix = format!("{dir}/");
    let names: Vec<&str> = m
        .files
        .keys()
        .filter_map(|k| k.strip_prefix(&prefix))
        .filter(|rest| !rest.contains('/'))
        .collect();
    match (names.is_empty(), dir) {
        (_, "/etc") => "hostname  os-release\n".into(),
        (true, _) => String::new(),
        (false, _) => format!("{}\n", names.join("  ")),
    }
}

/// `/etc/os-release` of the OS the agent reports (`guestOSInfo`).
fn os_release(m: &Machine) -> String {
    let os = &m.id.os;
    let get = |k: &str| os[k].as_str().unwrap_or("").to_string();
    format!(
        "NAME=\"{}\"\nVERSION=\"{}\"\nID={}\nVERSION_ID={}\nPRETTY_NAME=\"{}\"\n",
        get("name"),
        get("version"),
        get("id"),
        get("versionId"),
        get("prettyName")
    )
}
