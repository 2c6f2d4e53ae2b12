//! The guest's sshd, reached on port 22 through virt-api's port-forward (`virtctl ssh` runs
//! OpenSSH with a `port-forward --stdio` ProxyCommand, pkg/virtctl/ssh/ssh.go): an SSH server
//! (russh) with the guest's host key (Ed25519, from `--simulate-seed` and the VMI, so
//! known_hosts stays valid), its accounts' keys and passwords (cloud-init's), the same shell
//! the consoles run for `shell` (with a pty) and `exec`, and the `sftp` subsystem over the
//! guest's files, which scp speaks since OpenSSH 9.0. Each connection is a login: its user is
//! in the agent's user list while it lasts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::keys::{PrivateKey, PublicKey};
use russh::server::{self, Auth, ChannelOpenHandle, Msg, Session};
use russh::{Channel, ChannelId, SshId};
use russh_sftp::protocol::{
    Attrs, Data, File, FileAttributes, FileMode, Handle, Name, OpenFlags, Status, StatusCode,
    Version,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::shell::{Machine, Power};
use super::tty::onlcr;
use super::Guest;

/// Fedora 40's sshd identifies itself so.
const SERVER_ID: &str = "SSH-2.0-OpenSSH_9.6";

/// Runs one SSH connection over `stream` until it ends; a power request made in it goes to
/// `power`.
pub async fn serve<S>(guest: Arc<Guest>, stream: S, power: mpsc::UnboundedSender<Power>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let key = PrivateKey::from(Ed25519Keypair::from_seed(&guest.host_key_seed()));
    let config = Arc::new(server::Config {
        server_id: SshId::Standard(SERVER_ID.into()),
        keys: vec![key],
        // OpenSSH's `none` probe comes first on every connection: answered at once.
        auth_rejection_time: Duration::from_millis(200),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: None,
        ..Default::default()
    });
    let sshd = Sshd {
        guest,
        power,
        user: None,
        session: None,
        channels: HashMap::new(),
        shells: Default::default(),
        sftp: Default::default(),
    };
    match server::run_stream(config, stream, sshd).await {
        Ok(running) => {
            if let Err(e) = running.await {
                log::debug!("guest sshd: {e}");
            }
        }
        Err(e) => log::debug!("guest sshd: {e}"),
    }
}

/// One connection's server side.
struct Sshd {
    guest: Arc<Guest>,
    power: mpsc::UnboundedSender<Power>,
    /// The user authenticating or authenticated.
    user: Option<String>,
    /// The connection's session key in the guest, once logged in.
    session: Option<u64>,
    /// Channels opened and not yet given a request: kept only for the `sftp` subsystem
    /// (a kept channel must be read, or the connection stalls).
    channels: HashMap<ChannelId, (Channel<Msg>, bool)>,
    /// The channels running the shell: their data is typed into it.
    shells: std::collections::HashSet<ChannelId>,
    /// The channels running the sftp subsystem.
    sftp: std::collections::HashSet<ChannelId>,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        if let Some(id) = self.session {
            self.guest.ssh_logout(id);
        }
    }
}

/// Whether `key` is among `keys` (authorized_keys lines: type, base64, comment).
fn authorized(keys: &[String], key: &PublicKey) -> bool {
    let Ok(offered) = key.to_openssh() else { return false };
    let offered: Vec<&str> = offered.split_whitespace().take(2).collect();
    keys.iter().any(|k| k.split_whitespace().take(2).eq(offered.iter().copied()))
}

impl Sshd {
    fn accept(&mut self, user: &str) -> Auth {
        self.user = Some(user.to_string());
        Auth::Accept
    }

    /// Sends `out` on `channel`, if there is any.
    fn send(session: &mut Session, channel: ChannelId, out: &[u8]) -> Result<(), russh::Error> {
        if !out.is_empty() {
            session.data(channel, out.to_vec())?;
        }
        Ok(())
    }

    fn end(session: &mut Session, channel: ChannelId, status: u32) -> Result<(), russh::Error> {
        session.exit_status_request(channel, status)?;
        session.eof(channel)?;
        session.close(channel)
    }

    fn request_power(&self, p: Option<Power>) {
        if let Some(p) = p {
            let _ = self.power.send(p);
        }
    }
}

impl server::Handler for Sshd {
    type Error = russh::Error;

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        let ok = self.guest.account(user).is_some_and(|a| a.password.as_deref() == Some(password));
        Ok(if ok { self.accept(user) } else { Auth::reject() })
    }

    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: server::PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        let ok = self.guest.account(user).is_some_and(|a| authorized(&a.keys, offer.public_key));
        Ok(if ok { Auth::Accept } else { Auth::reject() })
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: server::VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        let ok = self.guest.account(user).is_some_and(|a| authorized(&a.keys, key.public_key));
        Ok(if ok { self.accept(user) } else { Auth::reject() })
    }

    async fn auth_succeeded(&mut self, _session: &mut Session) -> Result<(), Self::Error> {
        if let Some(user) = &self.user {
            self.session = self.guest.ssh_login(user);
        }
        match self.session {
            Some(_) => Ok(()),
            // The guest went down meanwhile: its sshd with it.
            None => Err(russh::Error::Disconnect),
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.insert(channel.id(), (channel, false));
        reply.accept().await;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _cols: u32,
        _rows: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if let Some((_, pty)) = self.channels.get_mut(&channel) {
            *pty = true;
        }
        session.channel_success(channel)
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        _value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        // sshd's AcceptEnv takes LANG and LC_* only; a refusal is what OpenSSH expects of others.
        session.channel_failure(channel)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.remove(&channel);
        let Some(id) = self.session else { return session.channel_failure(channel) };
        self.shells.insert(channel);
        session.channel_success(channel)?;
        Self::send(session, channel, &self.guest.ssh_prompt(id))
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let pty = self.channels.remove(&channel).is_some_and(|(_, pty)| pty);
        let Some(id) = self.session else { return session.channel_failure(channel) };
        session.channel_success(channel)?;
        let line = String::from_utf8_lossy(data);
        let (out, status, power) = self.guest.ssh_exec(id, &line);
        let out = if pty { onlcr(&out) } else { out.into_bytes() };
        Self::send(session, channel, &out)?;
        Self::end(session, channel, status)?;
        self.request_power(power);
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let (Some((chan, _)), Some(user)) = (self.channels.remove(&channel), self.user.clone())
        else {
            return session.channel_failure(channel);
        };
        if name != "sftp" {
            return session.channel_failure(channel);
        }
        session.channel_success(channel)?;
        self.sftp.insert(channel);
        let sftp = Sftp { guest: self.guest.clone(), user, handles: HashMap::new(), next: 0 };
        russh_sftp::server::run(chan.into_stream(), sftp).await;
        Ok(())
    }

    /// The client is done sending: sftp-server (or the shell, its stdin gone) exits 0.
    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if self.sftp.remove(&channel) || self.shells.remove(&channel) {
            Self::end(session, channel, 0)?;
        }
        Ok(())
    }

    async fn data(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        // An exec's stdin is read by no one; the sftp subsystem reads its own channel.
        let Some(id) = self.session.filter(|_| self.shells.contains(&channel)) else {
            return Ok(());
        };
        let (out, power, open) = self.guest.ssh_input(id, data);
        Self::send(session, channel, &out)?;
        if !open && power.is_none() {
            // `exit`: bash ends, and sshd closes the channel with its status.
            self.shells.remove(&channel);
            Self::end(session, channel, 0)?;
        }
        self.request_power(power);
        Ok(())
    }
}

/// The `sftp` subsystem over the guest's files: what the shell's `ls`/`cat` see.
struct Sftp {
    guest: Arc<Guest>,
    user: String,
    /// Open handles: a file's path and, for a directory, whether it was listed.
    handles: HashMap<String, (String, bool)>,
    next: u64,
}

impl Sftp {
    fn home(&self) -> String {
        match self.user.as_str() {
            "root" => "/root".into(),
            u => format!("/home/{u}"),
        }
    }

    /// An absolute, normalised path (`.` and `..` resolved) for `path` as the user gives it.
    fn absolute(&self, path: &str) -> String {
        let joined = match path {
            "" | "." => self.home(),
            p if p.starts_with('/') => p.to_string(),
            p => format!("{}/{p}", self.home()),
        };
        let mut parts: Vec<&str> = Vec::new();
        for seg in joined.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        format!("/{}", parts.join("/"))
    }

    /// Whether `path` is a directory of the guest: the root's, a home, or one holding files.
    fn is_dir(&self, m: &Machine, path: &str) -> bool {
        let fixed = ["/", "/home", "/tmp", "/etc", "/root", "/var", "/usr"];
        let prefix = format!("{}/", path.trim_end_matches('/'));
        fixed.contains(&path)
            || path == self.home()
            || m.id.accounts.iter().any(|a| path == format!("/home/{}", a.name))
            || m.files.keys().any(|k| k.starts_with(&prefix))
    }

    fn writable(&self, path: &str) -> bool {
        self.user == "root"
            || path.starts_with(&format!("{}/", self.home()))
            || path.starts_with("/tmp/")
    }

    fn attrs(&self, m: &Machine, path: &str) -> Option<FileAttributes> {
        let uid = m.id.account(&self.user).map_or(0, |a| a.uid);
        let mut attrs = FileAttributes {
            uid: Some(uid),
            gid: Some(uid),
            atime: Some(0),
            mtime: Some(0),
            ..FileAttributes::empty()
        };
        if let Some(content) = m.files.get(path) {
            attrs.size = Some(content.len() as u64);
            attrs.permissions = Some(0o644 | FileMode::REG.bits());
        } else if self.is_dir(m, path) {
            attrs.size = Some(4096);
            attrs.permissions = Some(0o755 | FileMode::DIR.bits());
        } else {
            return None;
        }
        Some(attrs)
    }

    fn stat(&self, id: u32, path: &str) -> Result<Attrs, StatusCode> {
        let path = self.absolute(path);
        let attrs = self.guest.with_machine(|m| self.attrs(m, &path));
        attrs.map(|attrs| Attrs { id, attrs }).ok_or(StatusCode::NoSuchFile)
    }

    fn handle(&mut self, path: String) -> String {
        self.next += 1;
        let h = self.next.to_string();
        self.handles.insert(h.clone(), (path, false));
        h
    }

    fn ok(id: u32) -> Status {
        Status {
            id,
            status_code: StatusCode::Ok,
            error_message: "Ok".into(),
            language_tag: "en-US".into(),
        }
    }
}

impl russh_sftp::server::Handler for Sftp {
    type Error = StatusCode;

    fn unimplemented(&self) -> Self::Error {
        StatusCode::OpUnsupported
    }

    async fn init(
        &mut self,
        _version: u32,
        _extensions: HashMap<String, String>,
    ) -> Result<Version, Self::Error> {
        Ok(Version::new())
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        Ok(Name { id, files: vec![File::dummy(self.absolute(&path))] })
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        Sftp::stat(self, id, &path)
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        Sftp::stat(self, id, &path)
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, Self::Error> {
        let path = self.handles.get(&handle).ok_or(StatusCode::Failure)?.0.clone();
        Sftp::stat(self, id, &path)
    }

    async fn setstat(
        &mut self,
        id: u32,
        path: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Sftp::stat(self, id, &path).map(|_| Self::ok(id))
    }

    async fn fsetstat(
        &mut self,
        id: u32,
        _handle: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Ok(Self::ok(id))
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, Self::Error> {
        let path = self.absolute(&filename);
        let writes = pflags.intersects(OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE);
        let exists = self.guest.with_machine(|m| m.files.contains_key(&path));
        if writes {
            if !self.writable(&path) {
                return Err(StatusCode::PermissionDenied);
            }
            let truncate = pflags.contains(OpenFlags::TRUNCATE);
            if !exists && !pflags.contains(OpenFlags::CREATE) {
                return Err(StatusCode::NoSuchFile);
            }
            self.guest.with_machine(|m| {
                let f = m.files.entry(path.clone()).or_default();
                if truncate {
                    f.clear();
                }
            });
        } else if !exists {
            return Err(StatusCode::NoSuchFile);
        }
        Ok(Handle { id, handle: self.handle(path) })
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Self::Error> {
        self.handles.remove(&handle);
        Ok(Self::ok(id))
    }

    async fn read(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        len: u32,
    ) -> Result<Data, Self::Error> {
        let path = self.handles.get(&handle).ok_or(StatusCode::Failure)?.0.clone();
        let content = self.guest.with_machine(|m| m.files.get(&path).cloned());
        let bytes = content.ok_or(StatusCode::NoSuchFile)?.into_bytes();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start >= bytes.len() {
            return Err(StatusCode::Eof);
        }
        let end = bytes.len().min(start + len as usize);
        Ok(Data { id, data: bytes[start..end].to_vec() })
    }

    async fn write(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<Status, Self::Error> {
        let path = self.handles.get(&handle).ok_or(StatusCode::Failure)?.0.clone();
        self.guest.with_machine(|m| {
            // The guest keeps text: bytes that are not UTF-8 are kept as their replacement.
            let f = m.files.entry(path).or_default();
            let mut bytes = std::mem::take(f).into_bytes();
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
            let end = start + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[start..end].copy_from_slice(&data);
            *f = String::from_utf8_lossy(&bytes).into_owned();
        });
        Ok(Self::ok(id))
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, Self::Error> {
        let path = self.absolute(&path);
        if !self.guest.with_machine(|m| self.is_dir(m, &path)) {
            return Err(StatusCode::NoSuchFile);
        }
        Ok(Handle { id, handle: self.handle(path) })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Self::Error> {
        let (path, listed) = self.handles.get(&handle).cloned().ok_or(StatusCode::Failure)?;
        if listed {
            return Err(StatusCode::Eof);
        }
        self.handles.insert(handle, (path.clone(), true));
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let files = self.guest.with_machine(|m| {
            let mut names: Vec<String> = m
                .files
                .keys()
                .filter_map(|k| k.strip_prefix(&prefix))
                .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
                .collect();
            names.dedup();
            names
                .into_iter()
                .filter_map(|n| {
                    let attrs = self.attrs(m, &format!("{prefix}{n}"))?;
                    Some(File::new(n, attrs))
                })
                .collect::<Vec<_>>()
        });
        Ok(Name { id, files })
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, Self::Error> {
        let path = self.absolute(&filename);
        if !self.writable(&path) {
            return Err(StatusCode::PermissionDenied);
        }
        match self.guest.with_machine(|m| m.files.remove(&path)) {
            Some(_) => Ok(Self::ok(id)),
            None => Err(StatusCode::NoSuchFile),
        }
    }

    async fn rename(
        &mut self,
        id: u32,
        oldpath: String,
        newpath: String,
    ) -> Result<Status, Self::Error> {
        let (from, to) = (self.absolute(&oldpath), self.absolute(&newpath));
        if !self.writable(&from) || !self.writable(&to) {
            return Err(StatusCode::PermissionDenied);
        }
        self.guest.with_machine(|m| match m.files.remove(&from) {
            Some(c) => {
                m.files.insert(to, c);
                Ok(Self::ok(id))
            }
            None => Err(StatusCode::NoSuchFile),
        })
    }
}
