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

/// A watch stream on a tokio socket, so one thread can follow hundreds: its body's lines, each
/// with the time the read that completed it returned.
pub struct AsyncLines {
    sock: tokio::net::TcpStream,
    /// Bytes read and not yet de-chunked.
    raw: Vec<u8>,
    /// De-chunked body bytes not yet handed out as lines.
    body: Vec<u8>,
    last_read: Instant,
}

impl AsyncLines {
    /// Sends `GET path` to `addr` and reads the head: a 200 with a chunked body, or an error.
    pub async fn open(addr: &str, path: &str) -> Result<AsyncLines, String> {
        use tokio::io::AsyncWriteExt;
        let mut sock = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        sock.set_nodelay(true).ok();
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: bench/1\r\n\r\n");
        sock.write_all(req.as_bytes()).await.map_err(|e| format!("send {path}: {e}"))?;
        let mut s =
            AsyncLines { sock, raw: Vec::new(), body: Vec::new(), last_read: Instant::now() };
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut res = httparse::Response::new(&mut headers);
            match res.parse(&s.raw).map_err(|e| format!("{path}: answer head: {e}"))? {
                httparse::Status::Complete(n) => {
                    if res.code != Some(200) {
                        return Err(format!("GET {path}: {:?}", res.code));
                    }
                    let chunked = res.headers.iter().any(|h| {
                        h.name.eq_ignore_ascii_case("transfer-encoding")
                            && h.value.eq_ignore_ascii_case(b"chunked")
                    });
                    if !chunked {
                        return Err(format!("GET {path}: not a chunked stream"));
                    }
                    s.raw.drain(..n);
                    return Ok(s);
                }
                httparse::Status::Partial => {
                    if !s.read().await? {
                        return Err(format!("GET {path}: closed before an answer"));
                    }
                }
            }
        }
    }

    /// Reads more into `raw`; false at the end of the connection.
    async fn read(&mut self) -> Result<bool, String> {
        use tokio::io::AsyncReadExt;
        self.raw.reserve(16 * 1024);
        let n = self.sock.read_buf(&mut self.raw).await.map_err(|e| format!("read: {e}"))?;
        self.last_read = Instant::now();
        Ok(n > 0)
    }

    /// The next non-empty line, or None where the stream ended (its last chunk, or the
    /// connection closed between chunks).
    pub async fn next_line(&mut self) -> Result<Option<(Vec<u8>, Instant)>, String> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.body) {
                let line: Vec<u8> = self.body.drain(..=i).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some((line, self.last_read)));
            }
            if let Some(nl) = memchr::memchr(b'\n', &self.raw) {
                let size = std::str::from_utf8(&self.raw[..nl]).unwrap_or("").trim();
                let size = size.split(';').next().unwrap_or("");
                let n =
                    usize::from_str_radix(size, 16).map_err(|_| format!("chunk size {size:?}"))?;
                if n == 0 {
                    return Ok(None);
                }
                if self.raw.len() >= nl + 1 + n + 2 {
                    self.body.extend_from_slice(&self.raw[nl + 1..nl + 1 + n]);
                    self.raw.drain(..nl + 1 + n + 2);
                    continue;
                }
            }
            if !self.read().await? {
                return if self.raw.is_empty() && self.body.is_empty() {
                    Ok(None)
                } else {
                    Err("connection closed amid a chunk".into())
                };
            }
        }
    }
}
