//! The RFB server QEMU runs for a KubeVirt VMI's display, over any byte stream (sans I/O).
//! KubeVirt gives QEMU a VNC socket with no password
//! (pkg/virt-launcher/virtwrap/converter/compute/graphics.go), so QEMU (ui/vnc.c) says
//! "RFB 003.008\n", accepts clients of 3.3 (3.4, 3.5 read as 3.3), 3.7 and 3.8
//! (`protocol_version`), offers the one security type 1 (None) and, to 3.8 clients, a
//! SecurityResult 0 (`protocol_client_auth`); 3.3 clients are told the type. ServerInit names
//! the desktop `QEMU (<domain>)`, the domain `<ns>_<name>` (`protocol_client_init`; KubeVirt's
//! VMINamespaceKeyFunc), in QEMU's native pixel format (32 bpp, depth 24, little-endian,
//! true colour, shifts R16 G8 B0). It honours SetPixelFormat, takes SetEncodings (sending Raw
//! only, which every client accepts), answers FramebufferUpdateRequests (a full one at once,
//! an incremental one when the text changed), and turns KeyEvents into the bytes a
//! keyboard's keys type on the guest's VT; pointer events and cut text change nothing.

use super::font::CELL_H;
use super::screen::{self, Text, HEIGHT, ROWS, WIDTH};

pub const VERSION: &[u8; 12] = b"RFB 003.008\n";

/// A client's pixel format (RFB §7.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelFormat {
    pub bits_per_pixel: u8,
    pub depth: u8,
    pub big_endian: bool,
    pub true_colour: bool,
    pub max: [u16; 3],
    pub shift: [u8; 3],
}

/// QEMU's surface, x8r8g8b8 little-endian.
pub const QEMU_FORMAT: PixelFormat = PixelFormat {
    bits_per_pixel: 32,
    depth: 24,
    big_endian: false,
    true_colour: true,
    max: [255, 255, 255],
    shift: [16, 8, 0],
};

impl PixelFormat {
    fn encode(&self) -> [u8; 16] {
        let mut o = [0u8; 16];
        o[0] = self.bits_per_pixel;
        o[1] = self.depth;
        o[2] = u8::from(self.big_endian);
        o[3] = u8::from(self.true_colour);
        for i in 0..3 {
            o[4 + 2 * i..6 + 2 * i].copy_from_slice(&self.max[i].to_be_bytes());
            o[10 + i] = self.shift[i];
        }
        o
    }

    fn decode(b: &[u8]) -> PixelFormat {
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        PixelFormat {
            bits_per_pixel: b[0],
            depth: b[1],
            big_endian: b[2] != 0,
            true_colour: b[3] != 0,
            max: [u16_at(4), u16_at(6), u16_at(8)],
            shift: [b[10], b[11], b[12]],
        }
    }

    /// `rgb` as one pixel's bytes in this format.
    pub fn pixel(&self, rgb: [u8; 3]) -> Vec<u8> {
        let mut v: u32 = 0;
        for (i, c) in rgb.iter().enumerate() {
            let scaled = u32::from(*c) * u32::from(self.max[i]) / 255;
            v |= scaled.checked_shl(u32::from(self.shift[i])).unwrap_or(0);
        }
        let n = usize::from(self.bits_per_pixel / 8).clamp(1, 4);
        let le = v.to_le_bytes();
        let mut out: Vec<u8> = le[..n].to_vec();
        if self.big_endian {
            out.reverse();
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Version,
    /// 3.7 and 3.8: the client's choice of security type.
    Security {
        minor: u8,
    },
    ClientInit,
    Normal,
}

/// One RFB connection's server side.
#[derive(Debug)]
pub struct Rfb {
    name: String,
    stage: Stage,
    buf: Vec<u8>,
    pub format: PixelFormat,
    /// The outstanding FramebufferUpdateRequest: whether it is incremental.
    requested: Option<bool>,
    /// The text the client was last sent.
    shown: Option<Text>,
    ctrl: bool,
    shift: bool,
}

impl Rfb {
    /// A connection to the display of domain `domain` (`<ns>_<name>`); what to send first.
    pub fn new(domain: &str) -> (Rfb, Vec<u8>) {
        let rfb = Rfb {
            name: format!("QEMU ({domain})"),
            stage: Stage::Version,
            buf: Vec::new(),
            format: QEMU_FORMAT,
            requested: None,
            shown: None,
            ctrl: false,
            shift: false,
        };
        (rfb, VERSION.to_vec())
    }

    /// Feeds the client's bytes: what to answer and the bytes its keys typed, or why QEMU
    /// drops the connection.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut typed = Vec::new();
        loop {
            let used = self.step(&mut out, &mut typed)?;
            if used == 0 {
                break;
            }
            self.buf.drain(..used);
        }
        Ok((out, typed))
    }

    /// One message if all of it is there: the bytes it took (0: wait for more).
    fn step(&mut self, out: &mut Vec<u8>, typed: &mut Vec<u8>) -> Result<usize, String> {
        let b = &self.buf;
        match self.stage {
            Stage::Version => {
                if b.len() < 12 {
                    return Ok(0);
                }
                let v = std::str::from_utf8(&b[..12]).unwrap_or_default();
                let parsed = v
                    .strip_prefix("RFB ")
                    .and_then(|v| v.strip_suffix('\n'))
                    .and_then(|v| v.split_once('.'))
                    .and_then(|(a, b)| Some((a.parse::<u8>().ok()?, b.parse::<u8>().ok()?)));
                // ui/vnc.c protocol_version: "Unsupported client version".
                match parsed {
                    Some((3, 3..=5)) => {
                        out.extend_from_slice(&1u32.to_be_bytes());
                        self.stage = Stage::ClientInit;
                    }
                    Some((3, minor @ (7 | 8))) => {
                        out.extend_from_slice(&[1, 1]);
                        self.stage = Stage::Security { minor };
                    }
                    _ => return Err(format!("Unsupported client version {v:?}")),
                }
                Ok(12)
            }
            Stage::Security { minor } => {
                let Some(&choice) = b.first() else { return Ok(0) };
                if choice != 1 {
                    // protocol_client_auth: "Reject auth", then close.
                    if minor == 8 {
                        out.extend_from_slice(&1u32.to_be_bytes());
                        let reason = b"Authentication failed";
                        out.extend_from_slice(&(reason.len() as u32).to_be_bytes());
                        out.extend_from_slice(reason);
                    }
                    return Err(format!("security type {choice} rejected"));
                }
                if minor == 8 {
                    out.extend_from_slice(&0u32.to_be_bytes());
                }
                self.stage = Stage::ClientInit;
                Ok(1)
            }
            Stage::ClientInit => {
                if b.is_empty() {
                    return Ok(0);
                }
                out.extend_from_slice(&(WIDTH as u16).to_be_bytes());
                out.extend_from_slice(&(HEIGHT as u16).to_be_bytes());
                out.extend_from_slice(&QEMU_FORMAT.encode());
                out.extend_from_slice(&(self.name.len() as u32).to_be_bytes());
                out.extend_from_slice(self.name.as_bytes());
                self.stage = Stage::Normal;
                Ok(1)
            }
            Stage::Normal => self.message(typed),
        }
    }

    fn message(&mut self, typed: &mut Vec<u8>) -> Result<usize, String> {
        let b = &self.buf;
        let Some(&kind) = b.first() else { return Ok(0) };
        let need = match kind {
            0 => 20,
            2 if b.len() >= 4 => 4 + 4 * usize::from(u16::from_be_bytes([b[2], b[3]])),
            2 => 4,
            3 => 10,
            4 => 8,
            5 => 6,
            6 if b.len() >= 8 => 8 + u32::from_be_bytes([b[4], b[5], b[6], b[7]]) as usize,
            6 => 8,
            // ui/vnc.c protocol_client_msg: an unknown message drops the client.
            k => return Err(format!("Msg: {k}")),
        };
        if b.len() < need {
            return Ok(0);
        }
        match kind {
            0 => {
                self.format = PixelFormat::decode(&b[4..20]);
                // A new format needs a whole picture.
                self.shown = None;
            }
            3 => {
                let incremental = b[1] != 0;
                self.requested = Some(self.requested.unwrap_or(true) && incremental);
            }
            4 => {
                let down = b[1] != 0;
                let key = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                self.key(down, key, typed);
            }
            // SetEncodings (Raw is always allowed), PointerEvent, ClientCutText.
            _ => {}
        }
        Ok(need)
    }

    /// An X11 keysym pressed or released: the bytes a VT keyboard types for it.
    fn key(&mut self, down: bool, key: u32, typed: &mut Vec<u8>) {
        match key {
            0xffe3 | 0xffe4 => self.ctrl = down,
            0xffe1 | 0xffe2 => self.shift = down,
            _ if !down => {}
            0xff0d | 0xff8d => typed.push(b'\r'),
            0xff08 => typed.push(0x7f),
            0xff09 => typed.push(b'\t'),
            0xff1b => typed.push(0x1b),
            0xffff => typed.extend_from_slice(b"\x1b[3~"),
            0x20..=0x7e => {
                let mut c = key as u8;
                if self.shift && c.is_ascii_lowercase() {
                    c = c.to_ascii_uppercase();
                }
                if self.ctrl && c.is_ascii_alphabetic() {
                    c = c.to_ascii_uppercase() - b'@';
                }
                typed.push(c);
            }
            _ => {}
        }
    }

    /// A FramebufferUpdate of `text` if one is requested and due: everything for a full
    /// request (or a client never sent it), else the rows of cells that changed.
    pub fn update(&mut self, text: &Text) -> Option<Vec<u8>> {
        let incremental = self.requested?;
        let rows = match (&self.shown, incremental) {
            (Some(shown), true) => {
                let changed: Vec<usize> = (0..ROWS).filter(|&r| shown[r] != text[r]).collect();
                let (first, last) = (*changed.first()?, *changed.last()?);
                first..last + 1
            }
            _ => 0..ROWS,
        };
        self.requested = None;
        self.shown = Some(*text);
        let (y, h) = (rows.start * CELL_H, rows.len() * CELL_H);
        let fg = self.format.pixel(screen::FOREGROUND);
        let bg = self.format.pixel(screen::BACKGROUND);
        let mut out = Vec::with_capacity(16 + WIDTH * h * fg.len());
        out.extend_from_slice(&[0, 0, 0, 1]);
        for v in [0, y, WIDTH, h] {
            out.extend_from_slice(&(v as u16).to_be_bytes());
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        for py in y..y + h {
            for px in 0..WIDTH {
                out.extend_from_slice(if screen::lit(text, px, py) { &fg } else { &bg });
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connected() -> Rfb {
        let (mut rfb, hello) = Rfb::new("ns_vm1");
        assert_eq!(hello, b"RFB 003.008\n");
        let (out, _) = rfb.feed(b"RFB 003.008\n").unwrap();
        assert_eq!(out, [1, 1]);
        let (out, _) = rfb.feed(&[1]).unwrap();
        assert_eq!(out, [0, 0, 0, 0]);
        let (out, _) = rfb.feed(&[1]).unwrap();
        assert_eq!(&out[..4], &[0x02, 0xd0, 0x01, 0x90]);
        assert_eq!(&out[4..20], &[32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);
        assert_eq!(&out[24..], b"QEMU (ns_vm1)");
        rfb
    }

    #[test]
    fn handshakes_as_qemu_for_each_version() {
        connected();
        let (mut rfb, _) = Rfb::new("a_b");
        // 3.3: the server names the type, no SecurityResult; ClientInit next.
        assert_eq!(rfb.feed(b"RFB 003.003\n").unwrap().0, [0, 0, 0, 1]);
        assert_eq!(rfb.feed(&[0]).unwrap().0.len(), 24 + 10);
        let (mut rfb, _) = Rfb::new("a_b");
        assert_eq!(rfb.feed(b"RFB 003.007\n").unwrap().0, [1, 1]);
        assert_eq!(rfb.feed(&[1]).unwrap().0, b"");
        let (mut rfb, _) = Rfb::new("a_b");
        assert!(rfb.feed(b"RFB 004.000\n").is_err());
        let (mut rfb, _) = Rfb::new("a_b");
        rfb.feed(b"RFB 003.008\n").unwrap();
        assert!(rfb.feed(&[2]).is_err());
    }

    #[test]
    fn keys_type_and_updates_follow_requests_in_the_clients_format() {
        let mut rfb = connected();
        let mut text = [[b' '; screen::COLS]; ROWS];
        assert_eq!(rfb.update(&text), None);
        // noVNC's format: 32/24 LE, R0 G8 B16.
        let mut msg = vec![0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0];
        msg.extend_from_slice(&[2, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x21]);
        msg.extend_from_slice(&[3, 1, 0, 0, 0, 0, 2, 0xd0, 1, 0x90]);
        // Shift-a, Return, Ctrl-c.
        for (down, key) in [(1, 0xffe1u32), (1, 0x61), (0, 0x61), (0, 0xffe1), (1, 0xff0d)] {
            msg.extend_from_slice(&[4, down, 0, 0]);
            msg.extend_from_slice(&key.to_be_bytes());
        }
        for (down, key) in [(1, 0xffe3u32), (1, 0x63), (0, 0xffe3)] {
            msg.extend_from_slice(&[4, down, 0, 0]);
            msg.extend_from_slice(&key.to_be_bytes());
        }
        msg.extend_from_slice(&[5, 0, 0, 1, 0, 1, 6, 0, 0, 0, 0, 0, 0, 1, b'x']);
        let (out, typed) = rfb.feed(&msg[..7]).unwrap();
        assert!(out.is_empty() && typed.is_empty());
        let (_, typed) = rfb.feed(&msg[7..]).unwrap();
        assert_eq!(typed, b"A\r\x03");
        // An incremental request before anything was shown is answered in full.
        let full = rfb.update(&text).unwrap();
        assert_eq!(&full[..16], &[0, 0, 0, 1, 0, 0, 0, 0, 2, 0xd0, 1, 0x90, 0, 0, 0, 0]);
        assert_eq!(full.len(), 16 + 720 * 400 * 4);
        // Nothing changed: an incremental request waits.
        rfb.feed(&[3, 1, 0, 0, 0, 0, 2, 0xd0, 1, 0x90]).unwrap();
        assert_eq!(rfb.update(&text), None);
        text[2][0] = b'I';
        let part = rfb.update(&text).unwrap();
        assert_eq!(&part[4..12], &[0, 0, 0, 32, 2, 0xd0, 0, 16]);
        // Row 0 of 'I': x 1 is lit, light grey in R0 G8 B16 little-endian.
        assert_eq!(&part[16 + 4..16 + 8], &[0xaa, 0xaa, 0xaa, 0]);
        assert_eq!(&part[16..16 + 4], &[0, 0, 0, 0]);
    }
}
