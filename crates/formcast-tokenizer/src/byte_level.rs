//! The GPT-2 byte-level alphabet.
//!
//! Byte-level BPE vocabularies store every token as a string in which each
//! byte is represented by one printable Unicode character: the "nice" bytes
//! `!`..=`~`, `¡`..=`¬` and `®`..=`ÿ` stand for themselves (same code point),
//! and the remaining 68 bytes (controls, space, DEL, NBSP, soft hyphen) are
//! assigned the code points 256, 257, ... in increasing byte order. So the
//! space byte 0x20 is U+0120 `Ġ` and the newline 0x0A is U+010A `Ċ`.

/// Whether `b` is one of the bytes that represent themselves.
const fn is_self_mapped(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// Largest code point used by the alphabet (256 + 68 - 1).
const MAX_CHAR: usize = 256 + 68 - 1;

/// `DECODE[c] = byte + 1` for each alphabet character `c`, 0 if `c` is not
/// part of the alphabet.
const DECODE: [u16; MAX_CHAR + 1] = build_decode_table();

const fn build_decode_table() -> [u16; MAX_CHAR + 1] {
    let mut table = [0u16; MAX_CHAR + 1];
    let mut next_shifted = 256usize;
    let mut b = 0usize;
    while b < 256 {
        if is_self_mapped(b as u8) {
            table[b] = b as u16 + 1;
        } else {
            table[next_shifted] = b as u16 + 1;
            next_shifted += 1;
        }
        b += 1;
    }
    table
}

/// The byte that alphabet character `c` stands for, if `c` belongs to the
/// alphabet.
pub fn char_to_byte(c: char) -> Option<u8> {
    let i = c as usize;
    if i <= MAX_CHAR && DECODE[i] != 0 {
        Some((DECODE[i] - 1) as u8)
    } else {
        None
    }
}

/// The alphabet character that stands for byte `b`.
pub fn byte_to_char(b: u8) -> char {
    if is_self_mapped(b) {
        return b as char;
    }
    // Position of `b` among the non-self-mapped bytes.
    let rank = (0..b).filter(|&x| !is_self_mapped(x)).count();
    char::from_u32(256 + rank as u32).unwrap_or('\u{FFFD}')
}

/// Decodes a byte-level token string into its raw bytes. Returns `None` if a
/// character is outside the alphabet (the string is then not byte-level
/// encoded, e.g. a literal added token).
pub fn decode(token: &str) -> Option<Vec<u8>> {
    token.chars().map(char_to_byte).collect()
}

/// Encodes raw bytes as a byte-level token string (used by tests and tools).
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| byte_to_char(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_characters() {
        assert_eq!(char_to_byte('Ġ'), Some(b' '));
        assert_eq!(char_to_byte('Ċ'), Some(b'\n'));
        assert_eq!(char_to_byte('ĉ'), Some(b'\t'));
        assert_eq!(char_to_byte('Ā'), Some(0x00));
        assert_eq!(char_to_byte('a'), Some(b'a'));
        assert_eq!(char_to_byte('é'), Some(0xE9));
        // 0xAD (soft hyphen) is shifted; it is the last shifted byte.
        assert_eq!(byte_to_char(0xAD), '\u{143}');
        assert_eq!(char_to_byte(' '), None);
        assert_eq!(char_to_byte('\u{144}'), None);
        assert_eq!(char_to_byte('€'), None);
    }

    #[test]
    fn table_is_a_bijection() {
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            let c = byte_to_char(b);
            assert!(seen.insert(c), "character {c:?} used twice");
            assert_eq!(char_to_byte(c), Some(b));
        }
        let alphabet_size = (0..=0x200u32)
            .filter_map(char::from_u32)
            .filter(|&c| char_to_byte(c).is_some())
            .count();
        assert_eq!(alphabet_size, 256);
    }

    #[test]
    fn decode_strings() {
        assert_eq!(decode("ĠHello").as_deref(), Some(&b" Hello"[..]));
        // "é" as UTF-8 is C3 A9, written as the characters Ã and ©.
        assert_eq!(decode("Ã©").as_deref(), Some("é".as_bytes()));
        assert_eq!(decode("a b"), None);
        assert_eq!(encode(b"\x00 \xff"), "ĀĠÿ");
    }
}
