//! The VGA text screen's font: 8x16 glyphs in 9x16 cells (the VGA's text mode draws a ninth,
//! blank column). The glyphs are Daniel Hepper's public-domain 8x8 font (`font8x8`'s
//! `BASIC_LEGACY`, from the IBM PC BIOS shapes) drawn with each row doubled, as the VGA
//! doubles scanlines of an 8-row font; non-ASCII bytes show as `?`.

/// A cell's size in pixels.
pub const CELL_W: usize = 9;
pub const CELL_H: usize = 16;

/// The 16 rows of `c`'s glyph, bit 7 the leftmost pixel.
pub fn glyph(c: u8) -> [u8; CELL_H] {
    let src = font8x8::legacy::BASIC_LEGACY[usize::from(if c < 0x80 { c } else { b'?' })];
    let mut out = [0u8; CELL_H];
    for (i, row) in src.iter().enumerate() {
        // font8x8 keeps the leftmost pixel in bit 0.
        let row = row.reverse_bits();
        out[2 * i] = row;
        out[2 * i + 1] = row;
    }
    out
}

/// Whether pixel (`x`, `y`) of a cell showing `c` is lit.
pub fn lit(c: u8, x: usize, y: usize) -> bool {
    x < 8 && glyph(c)[y] & (0x80 >> x) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_glyphs_differ_and_space_is_blank() {
        assert_eq!(glyph(b' '), [0; CELL_H]);
        let all: Vec<_> = (0x21u8..0x7f).map(glyph).collect();
        for (i, g) in all.iter().enumerate() {
            assert!(g.iter().any(|r| *r != 0), "{}", (i as u8 + 0x21) as char);
            assert!(all[i + 1..].iter().all(|o| o != g), "{}", (i as u8 + 0x21) as char);
        }
        // 'I' of the BIOS font: a centred bar, its top two rows the same (doubled).
        let i = glyph(b'I');
        assert_eq!((i[0], i[1]), (0b0111_1000, 0b0111_1000));
    }
}
