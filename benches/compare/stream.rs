//! A streaming HTTP/1.1 response read line by line on a raw connection: ureq 2 buffers nothing
//! per line and hides arrival times, and a watch's delivery latency is the time its line arrives.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc;
use std::time::Instant;

/// One open stream; dropping it closes the connection, which ends the server's side too.
pub struct Stream {
    conn: TcpStream,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.conn.shutdown(Shutdown::Both);
    }
}

/// Sends `method path` with `body` to `addr` (`host:port`), checks for a 200, then hands every
/// complete line of the chunked body to `tx` with its arrival time, from a thread of its own.
pub fn open(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    tx: mpsc::Sender<(Vec<u8>, Instant)>,
) -> Result<Stream, String> {
    let mut conn = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    conn.set_nodelay(true).ok();
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| format!("send {path}: {e}"))?;
    let mut r = BufReader::new(conn.try_clone().map_err(|e| e.to_string())?);
    let mut status = String::new();
    r.read_line(&mut status).map_err(|e| format!("read {path}: {e}"))?;
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("{method} {path}: {}", status.trim()));
    }
    let mut chunked = false;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| format!("read {path}: {e}"))?;
        if line.trim().is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
    }
    if !chunked {
        return Err(format!("{method} {path}: not a chunked stream"));
    }
    std::thread::spawn(move || read_chunks(r, tx));
    Ok(Stream { conn })
}

/// Chunk boundaries need not fall on line ends, so lines are cut from what has arrived so far.
fn read_chunks(mut r: BufReader<TcpStream>, tx: mpsc::Sender<(Vec<u8>, Instant)>) {
    let mut pending = Vec::new();
    loop {
        let mut size = String::new();
        if r.read_line(&mut size).unwrap_or(0) == 0 {
            return;
        }
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { return };
        if n == 0 {
            return;
        }
        let mut chunk = vec![0; n + 2];
        if r.read_exact(&mut chunk).is_err() {
            return;
        }
        let now = Instant::now();
        pending.extend_from_slice(&chunk[..n]);
        while let Some(i) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=i).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if tx.send((line, now)).is_err() {
                return;
            }
        }
    }
}
