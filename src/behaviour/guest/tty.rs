//! A serial tty's line discipline in canonical mode (termios `ICANON|ECHO|ICRNL|ONLCR`, as a
//! Linux getty leaves the console): input bytes become lines, echoed as typed; CR is taken as
//! the end of a line, backspace (DEL or BS) erases one character, Ctrl-C drops the line, Ctrl-D
//! on an empty line is end of input; output `\n` is written `\r\n`. Byte-stream agnostic: the
//! serial console and, later, an SSH channel's pty feed it the same way.

/// What one input byte made of the line being typed.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A completed line (without its terminator).
    Line(String),
    /// Ctrl-C: the line dropped.
    Interrupt,
    /// Ctrl-D on an empty line.
    Eof,
}

#[derive(Debug, Default)]
pub struct Tty {
    line: Vec<u8>,
    /// Echo off (a password prompt).
    pub silent: bool,
    /// The last byte was CR: an LF right after it ends nothing (a CR LF pair is one Enter).
    after_cr: bool,
}

impl Tty {
    /// Feeds `bytes`; `echo` collects what the tty writes back, the answer the lines typed.
    pub fn feed(&mut self, bytes: &[u8], echo: &mut Vec<u8>) -> Vec<Input> {
        let mut out = Vec::new();
        for &b in bytes {
            let after_cr = std::mem::take(&mut self.after_cr);
            match b {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    echo.extend_from_slice(b"\r\n");
                    let line = std::mem::take(&mut self.line);
                    out.push(Input::Line(String::from_utf8_lossy(&line).into_owned()));
                }
                0x7f | 0x08 if !self.line.is_empty() => {
                    // One character, however many bytes UTF-8 spends on it.
                    while let Some(last) = self.line.pop() {
                        if last & 0xc0 != 0x80 {
                            break;
                        }
                    }
                    if !self.silent {
                        echo.extend_from_slice(b"\x08 \x08");
                    }
                }
                0x03 => {
                    self.line.clear();
                    echo.extend_from_slice(b"^C\r\n");
                    out.push(Input::Interrupt);
                }
                0x04 if self.line.is_empty() => out.push(Input::Eof),
                0x15 => self.line.clear(),
                b if b < 0x20 && b != b'\t' => {}
                b => {
                    self.line.push(b);
                    if !self.silent {
                        echo.push(b);
                    }
                }
            }
        }
        out
    }
}

/// `text` as the tty writes it: each `\n` as `\r\n` (ONLCR).
pub fn onlcr(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 8);
    for b in text.bytes() {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_echo_erase_and_end_as_a_serial_tty() {
        let mut tty = Tty::default();
        let mut echo = Vec::new();
        let got = tty.feed(b"hostnamx\x7fe\r\nls\n", &mut echo);
        assert_eq!(got, vec![Input::Line("hostname".into()), Input::Line("ls".into())]);
        assert_eq!(echo, b"hostnamx\x08 \x08e\r\nls\r\n");
        tty.silent = true;
        echo.clear();
        let got = tty.feed(b"secret\r", &mut echo);
        assert_eq!((got, echo.as_slice()), (vec![Input::Line("secret".into())], &b"\r\n"[..]));
        echo.clear();
        assert_eq!(tty.feed(b"ab\x03\x04", &mut echo), vec![Input::Interrupt, Input::Eof]);
        assert_eq!(onlcr("a\nb"), b"a\r\nb");
    }
}
