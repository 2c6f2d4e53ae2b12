//! The guest's VGA console: an 80x25 text screen (the BIOS's mode 3, as a Linux guest's VGA
//! console keeps it without a framebuffer driver), 720x400 pixels in 9x16 cells, light grey on
//! black. Bytes written to tty1 land on it as the Linux VT draws them: CR, LF (scrolling at
//! the bottom), BS, TAB; escape sequences are skipped.

use super::font::{self, CELL_H, CELL_W};

pub const COLS: usize = 80;
pub const ROWS: usize = 25;
pub const WIDTH: usize = COLS * CELL_W;
pub const HEIGHT: usize = ROWS * CELL_H;

/// The VGA palette's light grey (attribute 7) and black.
pub const FOREGROUND: [u8; 3] = [0xaa, 0xaa, 0xaa];
pub const BACKGROUND: [u8; 3] = [0, 0, 0];

/// The characters on the screen, row by row.
pub type Text = [[u8; COLS]; ROWS];

#[derive(Debug, Clone)]
pub struct Screen {
    pub text: Text,
    row: usize,
    col: usize,
    /// Inside an escape sequence: `ESC`, then `[` and its parameters.
    escape: Option<bool>,
}

impl Default for Screen {
    fn default() -> Self {
        Screen { text: [[b' '; COLS]; ROWS], row: 0, col: 0, escape: None }
    }
}

impl Screen {
    /// Draws what the guest wrote to the terminal.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match self.escape {
                Some(false) => {
                    self.escape = (b == b'[').then_some(true);
                    continue;
                }
                Some(true) => {
                    if (0x40..0x7f).contains(&b) {
                        self.escape = None;
                    }
                    continue;
                }
                None => {}
            }
            match b {
                0x1b => self.escape = Some(false),
                b'\r' => self.col = 0,
                b'\n' => self.newline(),
                0x08 => self.col = self.col.saturating_sub(1),
                b'\t' => self.col = ((self.col / 8 + 1) * 8).min(COLS - 1),
                // UTF-8's continuation bytes draw nothing; its lead byte one `?`.
                0x80..=0xbf => {}
                b if b < 0x20 || b == 0x7f => {}
                b => {
                    if self.col == COLS {
                        self.col = 0;
                        self.newline();
                    }
                    self.text[self.row][self.col] = if b < 0x80 { b } else { b'?' };
                    self.col += 1;
                }
            }
        }
    }

    fn newline(&mut self) {
        if self.row + 1 == ROWS {
            self.text.rotate_left(1);
            self.text[ROWS - 1] = [b' '; COLS];
        } else {
            self.row += 1;
        }
    }

    /// Blank, the cursor home (a reboot's BIOS clears the screen).
    pub fn clear(&mut self) {
        *self = Screen::default();
    }

    /// The screen's text as lines, trailing blanks dropped.
    #[cfg(test)]
    pub fn lines(&self) -> Vec<String> {
        self.text.iter().map(|r| String::from_utf8_lossy(r).trim_end().to_string()).collect()
    }
}

/// Whether pixel (`x`, `y`) of `text` is lit.
pub fn lit(text: &Text, x: usize, y: usize) -> bool {
    font::lit(text[y / CELL_H][x / CELL_W], x % CELL_W, y % CELL_H)
}

/// `text` as a 720x400 RGB PNG (vnc/screenshot).
pub fn png(text: &Text) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(WIDTH * HEIGHT * 3);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            rgb.extend_from_slice(if lit(text, x, y) { &FOREGROUND } else { &BACKGROUND });
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, WIDTH as u32, HEIGHT as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().expect("png header to memory");
    w.write_image_data(&rgb).expect("png data to memory");
    w.finish().expect("png end to memory");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lands_in_cells_wraps_and_scrolls() {
        let mut s = Screen::default();
        s.write(b"ab\x08c\r\nx\x1b[0;1mz\tq\r\n");
        assert_eq!(s.lines()[..3], ["ac", "xz      q", ""]);
        for i in 0..30 {
            s.write(format!("line {i}\r\n").as_bytes());
        }
        assert_eq!(s.lines()[0], "line 6");
        assert_eq!(s.lines()[23], "line 29");
        s.write(&[b'w'; 81]);
        assert_eq!(s.lines()[24], "w");
    }

    #[test]
    fn the_png_is_720x400_and_shows_the_text() {
        let mut s = Screen::default();
        s.write(b"I");
        let bytes = png(&s.text);
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (720, 400));
        // 'I' lights its row 0 at x 1..5; x 0 stays black.
        assert_eq!(&buf[3..6], &FOREGROUND);
        assert_eq!(&buf[0..3], &BACKGROUND);
    }
}
