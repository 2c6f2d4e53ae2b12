//! The benchmark's own HTTP/1.1 client, the same for both servers: keep-alive connections with
//! one request in flight each (no pipelining), each request sent in one write (head and body in
//! one buffer), each answer's head parsed with `httparse` and its body read by Content-Length or
//! the chunked transfer coding into a buffer the connection reuses. A load generator must cost
//! far less CPU than the server it measures (as wrk and h2load do): ureq 2 with a thread per
//! client cost as much per operation as our server did.
//!
//! `AsyncConn` is a connection on a tokio socket, for many connections driven from one thread
//! (`workload::spread`); `Conn` is the same on a runtime of its own, for the sequential measures
//! (lists, a watch's writes, polls).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A server's address (`host:port`), and its count of 429 answers, which every connection to it
/// adds to.
pub struct Endpoint {
    addr: String,
    throttled: Arc<AtomicU64>,
}

impl Endpoint {
    pub fn new(addr: &str) -> Endpoint {
        Endpoint { addr: addr.to_owned(), throttled: Arc::default() }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The server moved (a restart on another ephemeral port); the 429 count carries on.
    pub fn set_addr(&mut self, addr: &str) {
        addr.clone_into(&mut self.addr);
    }

    /// 429 answers seen so far.
    pub fn throttled(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }

    /// A request to this server: `method path` with the headers ureq sent (Host, User-Agent,
    /// Accept), and a JSON-typed (or `content_type`) body when there is one. The User-Agent
    /// names the field manager our server records in managedFields (`bench`; ureq's was `ureq`).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Request {
        let mut bytes = Vec::with_capacity(method.len() + path.len() + 128 + body.len());
        let _ = write!(
            bytes,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: bench/1\r\nAccept: */*\r\n",
            self.addr
        );
        if !body.is_empty() || method != "GET" {
            let ct = content_type.unwrap_or("application/json");
            let _ = write!(bytes, "Content-Type: {ct}\r\nContent-Length: {}\r\n", body.len());
        }
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(body);
        Request { bytes }
    }
}

/// A request's bytes, head and body, written to the connection in one write.
pub struct Request {
    bytes: Vec<u8>,
}

impl Request {
    /// `METHOD path`, for messages.
    fn what(&self) -> String {
        let line = self.bytes.split(|&b| b == b'\r').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        line.strip_suffix(" HTTP/1.1").unwrap_or(&line).to_owned()
    }
}

/// `s` as a query value, as ureq (the url crate's form encoding) wrote it: alphanumerics and
/// `*-._` as they are, space as `+`, every other byte as `%XX`.
pub fn query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Where the decoder is in an answer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Head,
    /// Body bytes still to come, by Content-Length.
    Sized(usize),
    /// Awaiting a chunk-size line.
    ChunkSize,
    /// Bytes of the current chunk still to come.
    ChunkData(usize),
    /// Awaiting the CRLF after a chunk's data.
    ChunkEnd,
    /// After the last (zero-size) chunk: trailer fields until an empty line.
    Trailers,
    /// No Content-Length and not chunked: the body runs to the connection's end.
    ToEof,
    Done,
}

/// The longest answer head or chunk-size/trailer line accepted.
const LINE_MAX: usize = 16 * 1024;

/// Decodes one HTTP/1.1 answer from bytes as they arrive, in any pieces: the status, whether
/// the connection stays open, and the body, de-chunked.
pub struct Decoder {
    state: State,
    status: u16,
    keep_alive: bool,
    body: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder { state: State::Done, status: 0, keep_alive: true, body: Vec::new() }
    }

    /// Starts on the next answer (the body's buffer is kept, emptied).
    pub fn start(&mut self) {
        self.state = State::Head;
        self.status = 0;
        self.keep_alive = true;
        self.body.clear();
    }

    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Decodes what it can of `input`; answers how many bytes it used. It stops at the
    /// answer's end (what follows is the next answer's) and before an incomplete head or line,
    /// which it wants again, completed, in the next call.
    pub fn feed(&mut self, input: &[u8]) -> Result<usize, String> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match self.state {
                State::Done => return Ok(used),
                State::Head => match self.head(rest)? {
                    Some(n) => used += n,
                    None => return Ok(used),
                },
                State::Sized(left) | State::ChunkData(left) => {
                    let take = left.min(rest.len());
                    self.body.extend_from_slice(&rest[..take]);
                    used += take;
                    let chunk = matches!(self.state, State::ChunkData(_));
                    self.state = match (left - take, chunk) {
                        (0, false) => State::Done,
                        (0, true) => State::ChunkEnd,
                        (n, false) => State::Sized(n),
                        (n, true) => State::ChunkData(n),
                    };
                    if take == rest.len() && !self.done() {
                        return Ok(used);
                    }
                }
                State::ChunkSize | State::ChunkEnd | State::Trailers => {
                    let Some(nl) = memchr::memchr(b'\n', rest) else {
                        if rest.len() > LINE_MAX {
                            return Err("a chunk-size or trailer line too long".into());
                        }
                        return Ok(used);
                    };
                    let line = &rest[..nl];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    used += nl + 1;
                    self.state = match self.state {
                        State::ChunkSize => match chunk_size(line)? {
                            0 => State::Trailers,
                            n => State::ChunkData(n),
                        },
                        State::ChunkEnd if line.is_empty() => State::ChunkSize,
                        State::ChunkEnd => {
                            return Err("a chunk's data not followed by CRLF".into());
                        }
                        _ if line.is_empty() => State::Done,
                        // A trailer field: not needed.
                        _ => State::Trailers,
                    };
                }
                State::ToEof => {
                    self.body.extend_from_slice(rest);
                    return Ok(input.len());
                }
            }
        }
    }

    /// Parses the head at the start of `input`: answers its length, or None while incomplete.
    fn head(&mut self, input: &[u8]) -> Result<Option<usize>, String> {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut res = httparse::Response::new(&mut headers);
        let n = match res.parse(input) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if input.len() > LINE_MAX => {
                return Err("an answer head too long".into())
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(format!("answer head: {e}")),
        };
        let status = res.code.unwrap_or(0);
        // HTTP/1.0 closes unless asked to keep alive.
        let mut keep_alive = res.version == Some(1);
        let (mut length, mut chunked) = (None, false);
        for h in res.headers.iter() {
            let value = std::str::from_utf8(h.value).unwrap_or("").trim();
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = value
                    .parse::<usize>()
                    .ok()
                    .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| format!("Content-Length {value:?}"))?;
                if length.is_some_and(|l| l != n) {
                    return Err("two different Content-Lengths".into());
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // The last coding must be chunked (RFC 9112 §6.3); no other is asked for.
                let last = value.rsplit(',').next().unwrap_or("").trim();
                if !last.eq_ignore_ascii_case("chunked") {
                    return Err(format!("Transfer-Encoding {value:?}"));
                }
                chunked = true;
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in value.split(',').map(str::trim) {
                    if token.eq_ignore_ascii_case("close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case("keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        self.status = status;
        self.keep_alive = keep_alive;
        // Framing, RFC 9112 §6.3: interim answers have no body and another head follows;
        // 204 and 304 have none; chunked wins over a Content-Length.
        self.state = match (status, chunked, length) {
            (100..=199, _, _) => State::Head,
            (204 | 304, _, _) => State::Done,
            (_, true, _) => State::ChunkSize,
            (_, false, Some(0)) => State::Done,
            (_, false, Some(n)) => State::Sized(n),
            (_, false, None) => {
                self.keep_alive = false;
                State::ToEof
            }
        };
        Ok(Some(n))
    }

    /// The connection ended: the answer is complete only if its body ran to that end.
    fn eof(&mut self) -> Result<(), String> {
        match self.state {
            State::ToEof => {
                self.state = State::Done;
                Ok(())
            }
            State::Head => Err("connection closed before an answer".into()),
            _ => Err("connection closed amid an answer".into()),
        }
    }
}

/// A chunk-size line's size (hex digits, then perhaps `;extensions`).
fn chunk_size(line: &[u8]) -> Result<usize, String> {
    let hex = line.split(|&b| b == b';').next().unwrap_or_default();
    let hex = hex.trim_ascii();
    let bad = || format!("chunk size {:?}", String::from_utf8_lossy(line));
    if hex.is_empty() || hex.len() > 15 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return Err(bad());
    }
    usize::from_str_radix(std::str::from_utf8(hex).map_err(|_| bad())?, 16).map_err(|_| bad())
}

/// A connection's read buffer: bytes read but not yet decoded are `buf[pos..end]`.
struct Inbox {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Inbox {
    fn new() -> Inbox {
        Inbox { buf: vec![0; 64 * 1024], pos: 0, end: 0 }
    }

    /// Hands the decoder what has arrived; answers whether the answer is complete.
    fn decode(&mut self, dec: &mut Decoder) -> Result<bool, String> {
        self.pos += dec.feed(&self.buf[self.pos..self.end])?;
        if self.pos == self.end {
            (self.pos, self.end) = (0, 0);
        }
        Ok(dec.done())
    }

    /// Room to read into, after what is kept (an incomplete head or line).
    fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            (self.pos, self.end) = (0, self.end - self.pos);
        }
        &mut self.buf[self.end..]
    }

    fn clear(&mut self) {
        (self.pos, self.end) = (0, 0);
    }
}

/// What to do with a complete answer.
enum Verdict {
    Done,
    /// A 429: counted, and sent again after a pause, as a client honouring Retry-After would.
    Retry,
}

fn verdict(dec: &Decoder, req: &Request, throttled: &AtomicU64) -> Result<Verdict, String> {
    match dec.status() {
        200..=299 => Ok(Verdict::Done),
        429 => {
            throttled.fetch_add(1, Ordering::Relaxed);
            Ok(Verdict::Retry)
        }
        code => {
            let text = String::from_utf8_lossy(dec.body());
            Err(format!("{}: {code}: {}", req.what(), text.chars().take(300).collect::<String>()))
        }
    }
}

/// How long a read may wait (ureq's timeout before).
const TIMEOUT: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(50);
const TRIES: usize = 100;

/// Why an exchange failed: `Stale` when a kept-alive connection failed before any byte of the
/// answer (the server closed it as idle: the request is sent again on a new connection, once).
enum Failure {
    Stale(String),
    Other(String),
}

impl Failure {
    fn io(stale: bool, what: String) -> Failure {
        if stale {
            Failure::Stale(what)
        } else {
            Failure::Other(what)
        }
    }
}

/// A blocking keep-alive connection (the sequential measures: lists, a watch's writes, polls):
/// an `AsyncConn` on a current-thread runtime of its own, so one implementation serves both.
pub struct Conn {
    rt: tokio::runtime::Runtime,
    conn: AsyncConn,
}

impl Conn {
    pub fn open(ep: &Endpoint) -> Result<Conn, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("a runtime for a connection: {e}"))?;
        let conn = rt.block_on(AsyncConn::open(ep))?;
        Ok(Conn { rt, conn })
    }

    /// As `AsyncConn::call`.
    pub fn call(&mut self, req: &Request) -> Result<&[u8], String> {
        self.rt.block_on(self.conn.call(req))
    }
}

/// A keep-alive connection on a tokio socket, so that one thread can drive many of them.
pub struct AsyncConn {
    addr: String,
    throttled: Arc<AtomicU64>,
    stream: Option<tokio::net::TcpStream>,
    /// Whether `stream` has carried an answer already.
    reused: bool,
    inbox: Inbox,
    dec: Decoder,
}

async fn connect(addr: &str) -> Result<tokio::net::TcpStream, String> {
    let s =
        tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
    Ok(s)
}

impl AsyncConn {
    pub async fn open(ep: &Endpoint) -> Result<AsyncConn, String> {
        Ok(AsyncConn {
            addr: ep.addr.clone(),
            throttled: ep.throttled.clone(),
            stream: Some(connect(&ep.addr).await?),
            reused: false,
            inbox: Inbox::new(),
            dec: Decoder::new(),
        })
    }

    /// Sends `req` and answers the body of its 2xx answer; a 429 is counted and retried;
    /// anything else is a failure.
    pub async fn call(&mut self, req: &Request) -> Result<&[u8], String> {
        for _ in 0..TRIES {
            match self.exchange_in_time(req).await {
                Ok(()) => {}
                Err(Failure::Stale(_)) => {
                    self.stream = None;
                    if let Err(Failure::Stale(e) | Failure::Other(e)) =
                        self.exchange_in_time(req).await
                    {
                        self.stream = None;
                        return Err(e);
                    }
                }
                Err(Failure::Other(e)) => {
                    // What is left of the answer must not be read as the next one's.
                    self.stream = None;
                    return Err(e);
                }
            }
            match verdict(&self.dec, req, &self.throttled)? {
                Verdict::Done => return Ok(self.dec.body()),
                Verdict::Retry => tokio::time::sleep(RETRY_PAUSE).await,
            }
        }
        Err(format!("{}: still 429 after {TRIES} tries", req.what()))
    }

    /// `exchange`, failing after `TIMEOUT`.
    async fn exchange_in_time(&mut self, req: &Request) -> Result<(), Failure> {
        match tokio::time::timeout(TIMEOUT, self.exchange(req)).await {
            Ok(r) => r,
            Err(_) => {
                self.stream = None;
                Err(Failure::Other(format!("{}: no answer within {TIMEOUT:?}", req.what())))
            }
        }
    }

    async fn exchange(&mut self, req: &Request) -> Result<(), Failure> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let what = || req.what();
        if self.stream.is_none() {
            self.stream = Some(connect(&self.addr).await.map_err(Failure::Other)?);
            self.reused = false;
            self.inbox.clear();
        }
        let stream = self.stream.as_mut().unwrap();
        let stale = self.reused;
        stream
            .write_all(&req.bytes)
            .await
            .map_err(|e| Failure::io(stale, format!("{}: send: {e}", what())))?;
        self.dec.start();
        let mut got = false;
        while !self
            .inbox
            .decode(&mut self.dec)
            .map_err(|e| Failure::Other(format!("{}: {e}", what())))?
        {
            match stream.read(self.inbox.spare()).await {
                Ok(0) => self
                    .dec
                    .eof()
                    .map_err(|e| Failure::io(stale && !got, format!("{}: {e}", what())))?,
                Ok(n) => {
                    self.inbox.end += n;
                    got = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::io(stale && !got, format!("{}: {e}", what()))),
            }
        }
        self.reused = true;
        if !self.dec.keep_alive {
            self.stream = None;
        }
        Ok(())
    }
}

/// Checks of the decoder and the connection, against servers on loopback sockets of their own.
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// Feeds `input` in pieces of `step` bytes (keeping what the decoder leaves, as `Inbox`
    /// does); answers the status, body and the bytes left after the answer.
    fn decode_in_steps(input: &[u8], step: usize) -> Result<(u16, Vec<u8>, Vec<u8>), String> {
        let mut dec = Decoder::new();
        dec.start();
        let (mut pending, mut fed) = (Vec::new(), 0);
        while !dec.done() {
            if fed == input.len() {
                dec.eof()?;
                break;
            }
            let next = (fed + step).min(input.len());
            pending.extend_from_slice(&input[fed..next]);
            fed = next;
            let used = dec.feed(&pending)?;
            pending.drain(..used);
        }
        pending.extend_from_slice(&input[fed..]);
        Ok((dec.status(), dec.body().to_vec(), pending))
    }

    #[test]
    fn sized_body() {
        let input = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\
                      Content-Length: 11\r\n\r\n{\"a\":\"b c\"}";
        for step in [1, 2, 7, 64, 4096] {
            let (status, body, rest) = decode_in_steps(input, step).unwrap();
            assert_eq!(
                (status, body.as_slice(), rest.as_slice()),
                (201, &b"{\"a\":\"b c\"}"[..], &[][..])
            );
        }
    }

    /// A chunked body of `parts`, each a chunk.
    fn chunked(parts: &[&[u8]], trailer: &str) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for p in parts {
            out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("0\r\n{trailer}\r\n").as_bytes());
        out
    }

    #[test]
    fn chunked_body_in_every_split() {
        let big = vec![b'x'; 70_000];
        let input = chunked(&[b"{\"items\":[", b"1,2", &big, b"]}\r\n"], "");
        let want: Vec<u8> = [&b"{\"items\":[1,2"[..], &big, b"]}\r\n"].concat();
        for step in [1, 2, 3, 5, 17, 1000, 65_536, input.len()] {
            let (status, body, rest) = decode_in_steps(&input, step).unwrap();
            assert_eq!(status, 200);
            assert!(body == want, "step {step}");
            assert!(rest.is_empty());
        }
        // Every cut of a small answer into two reads.
        let small = chunked(&[b"ab", b"c\r\nd", b"0123456789abcdef0"], "");
        for cut in 0..small.len() {
            let mut dec = Decoder::new();
            dec.start();
            let used = dec.feed(&small[..cut]).unwrap();
            let mut rest = small[used..cut].to_vec();
            rest.extend_from_slice(&small[cut..]);
            assert_eq!(dec.feed(&rest).unwrap(), rest.len(), "cut {cut}");
            assert!(dec.done());
            assert_eq!(dec.body(), b"abc\r\nd0123456789abcdef0");
        }
    }

    #[test]
    fn chunked_extensions_and_trailers() {
        let input = b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n\
                      3;name=value\r\nabc\r\n00A \r\n0123456789\r\n0;last\r\n\
                      X-Trailer: 1\r\nY: 2\r\n\r\nHTTP/1.1";
        for step in [1, 4, 1000] {
            let (_, body, rest) = decode_in_steps(input, step).unwrap();
            assert_eq!(body, b"abc0123456789");
            assert_eq!(rest, b"HTTP/1.1");
        }
    }

    #[test]
    fn several_answers_in_one_input() {
        let mut input = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none".to_vec();
        input.extend_from_slice(&chunked(&[b"two"], "T: x\r\n"));
        input.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 5\r\n\r\nthree");
        let mut dec = Decoder::new();
        let mut at = 0;
        for (status, body) in [(200, &b"one"[..]), (200, b"two"), (404, b"three")] {
            dec.start();
            at += dec.feed(&input[at..]).unwrap();
            assert!(dec.done());
            assert_eq!((dec.status(), dec.body()), (status, body));
        }
        assert_eq!(at, input.len());
    }

    #[test]
    fn no_body_statuses_and_interim() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\
                      Content-Length: 10\r\n\r\nHTTP/1.1 304";
        let (status, body, rest) = decode_in_steps(input, 1).unwrap();
        assert_eq!((status, body.len(), rest.as_slice()), (204, 0, &b"HTTP/1.1 304"[..]));
    }

    #[test]
    fn body_to_eof() {
        let mut dec = Decoder::new();
        dec.start();
        let input = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it";
        assert_eq!(dec.feed(input).unwrap(), input.len());
        assert!(!dec.done());
        dec.eof().unwrap();
        assert_eq!((dec.body(), dec.keep_alive), (&b"all of it"[..], false));
        // A sized body cut short is a failure.
        dec.start();
        dec.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nall").unwrap();
        assert!(dec.eof().is_err());
        // HTTP/1.0 closes.
        dec.start();
        dec.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(dec.done() && !dec.keep_alive);
    }

    #[test]
    fn bad_framing() {
        let bad: [&[u8]; 7] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+3\r\nabc\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
        ];
        for input in bad {
            assert!(decode_in_steps(input, 1000).is_err(), "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn request_in_one_buffer() {
        let ep = Endpoint::new("127.0.0.1:1");
        let req = ep.request("POST", "/v3/kv/put", None, b"{}");
        assert_eq!(
            req.bytes,
            b"POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUser-Agent: bench/1\r\n\
              Accept: */*\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(req.what(), "POST /v3/kv/put");
        let req = ep.request("GET", "/x?a=1", None, b"");
        assert_eq!(
            req.bytes,
            b"GET /x?a=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUser-Agent: bench/1\r\nAccept: */*\r\n\r\n"
        );
        let req = ep.request("PATCH", "/y", Some("application/merge-patch+json"), b"{}");
        assert!(req.bytes.windows(42).any(|w| w == b"Content-Type: application/merge-patch+json"));
    }

    #[test]
    fn query_values() {
        assert_eq!(query_value("abc-._*09"), "abc-._*09");
        assert_eq!(query_value("a b+c/d=="), "a+b%2Bc%2Fd%3D%3D");
        assert_eq!(query_value("é"), "%C3%A9");
    }

    /// A server on an ephemeral port that answers each request (read up to its blank line and
    /// `Content-Length` body) with the next of `answers`, written in pieces of `step` bytes.
    fn serve(answers: Vec<Vec<u8>>, step: usize, close_after: usize) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let mut answers = answers.into_iter();
            'conns: while let Ok((mut s, _)) = l.accept() {
                for _ in 0..close_after {
                    let mut req = Vec::new();
                    let mut byte = [0u8; 1];
                    while !req.ends_with(b"\r\n\r\n") {
                        if s.read(&mut byte).unwrap_or(0) == 0 {
                            continue 'conns;
                        }
                        req.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&req).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    let mut body = vec![0; len];
                    s.read_exact(&mut body).unwrap();
                    let Some(a) = answers.next() else { return };
                    for piece in a.chunks(step) {
                        s.write_all(piece).unwrap();
                        s.flush().unwrap();
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            }
        });
        addr
    }

    fn answers() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let big: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut sized =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", big.len()).into_bytes();
        sized.extend_from_slice(&big);
        let parts: Vec<&[u8]> = big.chunks(7_777).collect();
        let answers = vec![sized, chunked(&parts, "X: y\r\n"), chunked(&[b"small"], "")];
        (answers, vec![big.clone(), big, b"small".to_vec()])
    }

    #[test]
    fn conn_over_a_socket() {
        let (answers, bodies) = answers();
        let ep = Endpoint::new(&serve(answers, 3_001, usize::MAX));
        let mut conn = Conn::open(&ep).unwrap();
        for body in bodies {
            let req = ep.request("POST", "/p", None, b"{\"x\":1}");
            assert!(conn.call(&req).unwrap() == body.as_slice());
        }
        assert!(conn.conn.reused);
    }

    #[test]
    fn conn_reconnects_after_close() {
        // The server closes each connection after one answer, without saying so.
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        let ep = Endpoint::new(&serve(vec![ok; 3], 1000, 1));
        let mut conn = Conn::open(&ep).unwrap();
        for _ in 0..3 {
            assert_eq!(conn.call(&ep.request("GET", "/", None, b"")).unwrap(), b"ok");
            std::thread::sleep(Duration::from_millis(20));
        }
        // A close it announces.
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi".to_vec();
        let ep = Endpoint::new(&serve(vec![close.clone(), close], 1000, usize::MAX));
        let mut conn = Conn::open(&ep).unwrap();
        for _ in 0..2 {
            assert_eq!(conn.call(&ep.request("GET", "/", None, b"")).unwrap(), b"hi");
            assert!(conn.conn.stream.is_none());
        }
    }

    #[test]
    fn async_conn_over_a_socket() {
        let (answers, bodies) = answers();
        let ep = Endpoint::new(&serve(answers, 5_000, usize::MAX));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut conn = AsyncConn::open(&ep).await.unwrap();
            for body in bodies {
                let req = ep.request("GET", "/", None, b"");
                assert!(conn.call(&req).await.unwrap() == body.as_slice());
            }
        });
    }

    #[test]
    fn statuses_fail_and_429_retries() {
        let answers = vec![
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nslow".to_vec(),
            b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}".to_vec(),
            b"HTTP/1.1 409 Conflict\r\nContent-Length: 6\r\n\r\nexists".to_vec(),
        ];
        let ep = Endpoint::new(&serve(answers, 1000, usize::MAX));
        let mut conn = Conn::open(&ep).unwrap();
        let req = ep.request("POST", "/c", None, b"{}");
        assert_eq!(conn.call(&req).unwrap(), b"{}");
        assert_eq!(ep.throttled(), 1);
        let e = conn.call(&req).unwrap_err();
        assert!(e.contains("POST /c: 409: exists"), "{e}");
    }
}
