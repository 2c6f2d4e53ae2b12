//! The `port-forward --stdio` subcommand: stdin and stdout bridged to a VMI's (or a VM's)
//! `portforward/{port}/{protocol}` websocket, as `virtctl port-forward --stdio=true` does, so
//! OpenSSH reaches the guest through `ProxyCommand` exactly as `virtctl ssh` sets it up
//! (pkg/virtctl/portforward/portforward.go, stdio.go; pkg/virtctl/ssh/ssh.go).

use std::io::{ErrorKind, Read, Write};
use std::sync::mpsc;

use tungstenite::Message;

#[derive(clap::Args, Debug, Clone)]
pub struct PortForwardArgs {
    #[command(flatten)]
    pub to: super::vnc::ServerArgs,
    /// Bridge stdin and stdout (the only mode: one connection, for a ProxyCommand).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true")]
    pub stdio: bool,
    /// `vmi/<name>/<namespace>` or `vm/<name>/<namespace>` (virtctl's kinds: vmi, vmis,
    /// virtualmachineinstance(s), vm, vms, virtualmachine(s)); the namespace may be left out.
    pub target: String,
    /// `[tcp|udp/]port`, or virtctl's `local:remote` (only the remote port is used).
    pub port: String,
}

/// The websocket's path for `args` (portforward.go `normalizeKind`: a kind's plural, singular
/// or short name; ports.go).
fn path(args: &PortForwardArgs) -> Result<String, String> {
    let mut parts = args.target.splitn(3, '/');
    let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let namespace = parts.next().filter(|n| !n.is_empty()).unwrap_or("default");
    let base = super::vnc::stream_base(Some(kind), "portforward")?;
    if name.is_empty() {
        return Err(format!("{}: no name", args.target));
    }
    let (protocol, ports) = match args.port.split_once('/') {
        Some((p, rest)) => (p, rest),
        None => ("tcp", args.port.as_str()),
    };
    let remote = ports.rsplit(':').next().unwrap_or(ports);
    if remote.parse::<u16>().is_err() || !matches!(protocol, "tcp" | "udp") {
        return Err(format!("{}: not a port", args.port));
    }
    Ok(format!("{}/{remote}/{protocol}", base(namespace, name)))
}

/// Copies stdin to the websocket and its binary frames to stdout until either side ends.
pub fn bridge(args: &PortForwardArgs) -> Result<String, String> {
    if !args.stdio {
        return Err("only --stdio is supported".into());
    }
    let mut ws = super::vnc::open(&args.to, args.to.tls()?, &path(args)?)?;
    // stdin blocks: a thread reads it; this one polls the websocket between its chunks.
    let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(n) => {
                    if tx.send(Some(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let mut stdout = std::io::stdout().lock();
    let idle = |e: &std::io::Error| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut);
    loop {
        loop {
            match rx.try_recv() {
                Ok(Some(bytes)) => {
                    ws.send(Message::binary(bytes)).map_err(|e| e.to_string())?;
                }
                Ok(None) | Err(mpsc::TryRecvError::Disconnected) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return Ok(String::new());
                }
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
        match ws.read() {
            Ok(Message::Binary(b)) => {
                stdout.write_all(&b).map_err(|e| e.to_string())?;
                stdout.flush().map_err(|e| e.to_string())?;
            }
            Ok(Message::Close(_)) => return Ok(String::new()),
            // Pings are answered by the next read or write; text frames carry nothing.
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if idle(&e) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                return Ok(String::new())
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(target: &str, port: &str) -> PortForwardArgs {
        PortForwardArgs {
            to: super::super::vnc::ServerArgs {
                server: "http://x".into(),
                token: None,
                certificate_authority: None,
            },
            stdio: true,
            target: target.into(),
            port: port.into(),
        }
    }

    #[test]
    fn targets_and_ports_as_virtctl_reads_them() {
        let base = "/apis/subresources.kubevirt.io/v1/namespaces";
        assert_eq!(
            path(&args("vmi/vm1/ns1", "22")).unwrap(),
            format!("{base}/ns1/virtualmachineinstances/vm1/portforward/22/tcp")
        );
        assert_eq!(
            path(&args("vm/vm1", "udp/2222:53")).unwrap(),
            format!("{base}/default/virtualmachines/vm1/portforward/53/udp")
        );
        assert!(path(&args("pod/x/y", "22")).is_err());
        assert!(path(&args("vmi/x/y", "ssh")).is_err());
    }
}
