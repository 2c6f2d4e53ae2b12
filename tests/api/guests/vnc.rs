//! VNC: virt-api's checks before the upgrade (pkg/virt-api/rest/vnc.go `vmiHasDisplay`), an
//! RFB client speaking to QEMU's server as noVNC or vncdotool do (qemu ui/vnc.c), the guest's
//! tty1 on a 720x400 text screen: a login typed by key events, a command's output read back
//! from the framebuffer by decoding it with the font; one session per VMI (stolen by default,
//! refused with preserveSession, pkg/virt-handler/rest/console.go); vnc/screenshot's PNG.

use std::time::{Duration, Instant};

use serde_json::json;
use tungstenite::Message;

use super::client::{console, open, running, users, vm, vmi_when, Console, Ended, KV, PLAIN, SUB};
use crate::common::{simulating, TestServer};

const W: usize = 720;
const H: usize = 400;

fn vnc_path(ns: &str, name: &str) -> String {
    format!("{SUB}/{ns}/virtualmachineinstances/{name}/vnc")
}

/// An RFB client over the websocket; the framebuffer as lit/unlit pixels.
struct Rfb {
    c: Console,
    fb: Vec<bool>,
    bpp: usize,
}

impl Rfb {
    fn read(&mut self, n: usize) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.c.seen.len() < n {
            assert!(Instant::now() < deadline, "waiting for {n} bytes, have {}", self.c.seen.len());
            if let Err(e) = self.c.read_some() {
                panic!("the connection ended ({e:?}) waiting for {n} bytes");
            }
        }
        self.c.seen.drain(..n).collect()
    }

    fn send(&mut self, bytes: Vec<u8>) {
        self.c.ws.send(Message::binary(bytes)).unwrap();
    }

    /// The RFB 3.8 handshake; the ServerInit's size and name.
    fn handshake(c: Console) -> (Rfb, (u16, u16), String) {
        let mut r = Rfb { c, fb: vec![false; W * H], bpp: 4 };
        assert_eq!(r.read(12), b"RFB 003.008\n");
        r.send(b"RFB 003.008\n".to_vec());
        // One security type, None; SecurityResult OK.
        assert_eq!(r.read(2), [1, 1]);
        r.send(vec![1]);
        assert_eq!(r.read(4), [0, 0, 0, 0]);
        r.send(vec![1]);
        let init = r.read(24);
        let size = (u16::from_be_bytes([init[0], init[1]]), u16::from_be_bytes([init[2], init[3]]));
        // QEMU's native format: 32 bpp, depth 24, little-endian, true colour, R16 G8 B0.
        assert_eq!(&init[4..20], &[32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);
        let len = u32::from_be_bytes([init[20], init[21], init[22], init[23]]) as usize;
        let name = String::from_utf8(r.read(len)).unwrap();
        (r, size, name)
    }

    fn request(&mut self, incremental: bool) {
        self.send(vec![3, u8::from(incremental), 0, 0, 0, 0, 2, 0xd0, 1, 0x90]);
    }

    /// Reads one FramebufferUpdate of Raw rectangles into `fb`.
    fn update(&mut self) {
        let head = self.read(4);
        assert_eq!(head[0], 0, "a FramebufferUpdate");
        for _ in 0..u16::from_be_bytes([head[2], head[3]]) {
            let r = self.read(12);
            let v = |i: usize| usize::from(u16::from_be_bytes([r[i], r[i + 1]]));
            let (x, y, w, h) = (v(0), v(2), v(4), v(6));
            assert_eq!(&r[8..12], &[0, 0, 0, 0], "Raw");
            let px = self.read(w * h * self.bpp);
            for (i, p) in px.chunks(self.bpp).enumerate() {
                self.fb[(y + i / w) * W + x + i % w] = p.iter().any(|b| *b != 0);
            }
        }
    }

    /// Types `text` as key events (X11 keysyms; `\r` is Return).
    fn type_text(&mut self, text: &str) {
        for ch in text.chars() {
            let key: u32 = if ch == '\r' { 0xff0d } else { ch as u32 };
            for down in [1u8, 0] {
                let mut m = vec![4, down, 0, 0];
                m.extend_from_slice(&key.to_be_bytes());
                self.send(m);
            }
        }
    }

    /// Requests updates until the screen's text holds `text`; the screen's lines.
    fn expect(&mut self, text: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let lines = decode(&self.fb);
            if lines.join("\n").contains(text) {
                return lines;
            }
            assert!(Instant::now() < deadline, "{text:?} not on screen: {lines:#?}");
            self.request(true);
            self.update();
        }
    }
}

/// The glyph of `c` as the VGA draws dhepper's 8x8 font: rows doubled, bit 0 leftmost.
fn glyph(c: u8) -> [[bool; 9]; 16] {
    let src = font8x8::legacy::BASIC_LEGACY[usize::from(c)];
    let mut g = [[false; 9]; 16];
    for (y, row) in g.iter_mut().enumerate() {
        for (x, px) in row.iter_mut().enumerate().take(8) {
            *px = src[y / 2] & (1 << x) != 0;
        }
    }
    g
}

/// The 80x25 screen read back from its pixels, each cell matched against the font.
fn decode(fb: &[bool]) -> Vec<String> {
    let glyphs: Vec<(u8, [[bool; 9]; 16])> = (0x20u8..0x7f).map(|c| (c, glyph(c))).collect();
    (0..25)
        .map(|row| {
            let line: String = (0..80)
                .map(|col| {
                    let cell = |x: usize, y: usize| fb[(row * 16 + y) * W + col * 9 + x];
                    let found = glyphs
                        .iter()
                        .find(|(_, g)| (0..16).all(|y| (0..9).all(|x| g[y][x] == cell(x, y))));
                    found.map_or('\u{fffd}', |(c, _)| *c as char)
                })
                .collect();
            line.trim_end().to_string()
        })
        .collect()
}

/// A PNG's lit pixels (vnc/screenshot).
fn png_pixels(bytes: &[u8]) -> (u32, u32, Vec<bool>) {
    let mut r = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    let lit = buf[..info.buffer_size()].chunks(bpp).map(|p| p.iter().any(|b| *b != 0)).collect();
    (info.width, info.height, lit)
}

fn start(s: &TestServer, ns: &str) {
    s.namespace(ns);
    let created = s
        .post(&format!("{KV}/{ns}/virtualmachines"), &vm("vm1", "Always", "masquerade", json!({})));
    assert_eq!(created.status, 201);
    vmi_when(s, ns, "vm1", running);
}

#[test]
fn vnc_and_the_screenshot_check_as_virt_api_does() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("vc");
    let missing = open(&s, &vnc_path("vc", "nope"), &[PLAIN], &[]).err().unwrap();
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("virtualmachineinstance.kubevirt.io \\\"nope\\\" not found"));
    let mut headless = vm("headless", "Always", "masquerade", json!({}));
    headless["spec"]["template"]["spec"]["domain"]["devices"]["autoattachGraphicsDevice"] =
        json!(false);
    assert_eq!(s.post(&format!("{KV}/vc/virtualmachines"), &headless).status, 201);
    vmi_when(&s, "vc", "headless", running);
    let refused = open(&s, &vnc_path("vc", "headless"), &[PLAIN], &[]).err().unwrap();
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("\"message\":\"No graphics devices are present.\""),
        "{}",
        refused.body
    );
    // vnc/screenshot: httpGetRequestBinaryHandler writes its errors as 500 plain text.
    let shot = s.get(&format!("{}/screenshot", vnc_path("vc", "headless")));
    assert_eq!((shot.status, shot.text().as_str()), (500, "No graphics devices are present."));
    assert!(shot.header("content-type").unwrap().starts_with("text/plain"));
    // A stopped VM's VMI is gone: not found, as plain text on the screenshot path.
    let shot = s.get(&format!("{}/screenshot?moveCursor=true", vnc_path("vc", "nope")));
    assert_eq!(shot.status, 500);
    assert_eq!(shot.text(), "virtualmachineinstance.kubevirt.io \"nope\" not found");
}

#[test]
fn a_vnc_client_logs_in_on_tty1_and_reads_the_screen() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-seed", "3"]);
    start(&s, "vn");
    // v1alpha3 serves it too; the subprotocol is echoed.
    let path = vnc_path("vn", "vm1").replace("/v1/", "/v1alpha3/");
    let c = open(&s, &path, &[PLAIN], &[]).ok().unwrap();
    assert_eq!(c.protocol.as_deref(), Some(PLAIN));
    let (mut r, size, name) = Rfb::handshake(c);
    assert_eq!((size, name.as_str()), ((720, 400), "QEMU (vn_vm1)"));
    // SetPixelFormat honoured: 16 bpp RGB565 big-endian, 2 bytes a pixel.
    let mut m = vec![0, 0, 0, 0, 16, 16, 1, 1, 0, 31, 0, 63, 0, 31, 11, 5, 0, 0, 0, 0];
    // SetEncodings: Raw, DesktopSize (pseudo), Tight: the others are ignored.
    m.extend_from_slice(&[2, 0, 0, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x21, 0, 0, 0, 7]);
    r.send(m);
    r.bpp = 2;
    r.request(false);
    r.update();
    r.type_text("\r");
    r.expect("vm1 login:");
    let lines = r.expect("(tty1)");
    assert!(lines.iter().any(|l| l.starts_with("Kernel ") && l.ends_with("on an x86_64 (tty1)")));
    r.type_text("fedora\r");
    r.expect("Password:");
    r.type_text("fedora-pw\r");
    r.expect("[fedora@vm1 ~]$");
    assert_eq!(users(&s, "vn", "vm1"), ["fedora"]);
    r.type_text("echo typed on tty1\r");
    let lines = r.expect("typed on tty1\n[fedora@vm1 ~]$");
    assert!(lines.iter().any(|l| l == "[fedora@vm1 ~]$ echo typed on tty1"), "{lines:#?}");
    // The serial console is its own terminal: still at its login prompt.
    let mut serial = console(&s, "vn", "vm1");
    serial.send("\r");
    serial.expect("vm1 login: ");

    // The screenshot is the same screen, 720x400.
    let shot = s.get(&format!("{}/screenshot?moveCursor=false", vnc_path("vn", "vm1")));
    assert_eq!(shot.status, 200);
    assert_eq!(shot.header("content-type"), Some("image/png"));
    let (w, h, lit) = png_pixels(&shot.body);
    assert_eq!((w, h), (720, 400));
    assert_eq!(decode(&lit), decode(&r.fb));
    // As a user saves it: kubectl get --raw writes the PNG's bytes.
    let k = crate::common::Kubectl::new(&s);
    let raw = k.run(&["get", "--raw", &format!("{}/screenshot", vnc_path("vn", "vm1"))]);
    assert!(raw.ok(), "{}", raw.describe());
    assert_eq!(decode(&png_pixels(&raw.out.stdout).2), decode(&r.fb));

    // preserveSession with a session active: virt-handler's 503, as virt-api's 500.
    let refused =
        open(&s, &format!("{}?preserveSession=true", vnc_path("vn", "vm1")), &[PLAIN], &[])
            .err()
            .unwrap();
    assert_eq!(refused.status, 500);
    let status: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(
        status["message"],
        "Internal error occurred: Can't connect to websocket (503): websocket: bad handshake: \
         application info: Active VNC connection. Request denied."
    );
    // By default a new session steals: the old one drops with no close frame.
    let c = open(&s, &vnc_path("vn", "vm1"), &[PLAIN], &[]).ok().unwrap();
    assert_eq!(r.c.ends(), Ended::Abnormally);
    let (mut second, _, _) = Rfb::handshake(c);
    second.request(false);
    second.update();
    // tty1's session outlives the connection; logging out leaves the user list.
    second.type_text("exit\r");
    second.expect("vm1 login:");
    assert!(users(&s, "vn", "vm1").is_empty());
    // Poweroff typed at tty1 powers the one guest off: the VMI ends, the connection drops.
    let uid = crate::guests::client::get(&s, &format!("{KV}/vn/virtualmachineinstances/vm1"))
        .unwrap()["metadata"]["uid"]
        .clone();
    second.type_text("fedora\r");
    second.expect("Password:");
    second.type_text("fedora-pw\r");
    second.expect("[fedora@vm1 ~]$");
    second.type_text("sudo poweroff\r");
    assert_eq!(second.c.ends(), Ended::Abnormally);
    vmi_when(&s, "vn", "vm1", |v| {
        v["metadata"]["uid"] != uid || v["status"]["phase"] == "Succeeded"
    });
}

/// The `vnc` subcommand (as `virtctl vnc --proxy-only`): `{"port":N}`, then each TCP
/// connection bridged to the VMI's websocket; a refusal is said on stderr, the viewer dropped.
#[test]
fn the_vnc_subcommand_bridges_a_tcp_viewer_to_the_websocket() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::process::{Command, Stdio};
    let s = simulating(&["--simulate-speed", "0.1"]);
    start(&s, "vb");
    let bridge = |name: &str| {
        let mut child = Command::new(crate::common::binary())
            .args(["vnc", "--server", &s.url(""), "-n", "vb", name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: serde_json::Value = serde_json::from_str(&line).unwrap();
        (child, port["port"].as_u64().unwrap() as u16)
    };
    let (mut child, port) = bridge("vm1");
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 12];
    tcp.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"RFB 003.008\n");
    // A 3.3 viewer: the server names security type None, then ServerInit.
    tcp.write_all(b"RFB 003.003\n").unwrap();
    let mut sec = [0u8; 4];
    tcp.read_exact(&mut sec).unwrap();
    assert_eq!(sec, [0, 0, 0, 1]);
    tcp.write_all(&[1]).unwrap();
    let mut init = [0u8; 24 + 13];
    tcp.read_exact(&mut init).unwrap();
    assert_eq!(&init[24..], b"QEMU (vb_vm1)");
    drop(tcp);
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, port) = bridge("nope");
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(tcp.read(&mut buf).unwrap(), 0);
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "can't access VMI nope: virtualmachineinstance.kubevirt.io \"nope\" not found\n"
    );
}
