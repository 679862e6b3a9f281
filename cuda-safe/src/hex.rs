//! Bytes as hex digits and back: the one implementation behind cache keys, GPU UUIDs and the
//! NCCL annex's unique ids and job secrets (through `__private`), so no crate of the workspace
//! needs a hex dependency.

use std::fmt;

/// The lowercase digits, by value.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex digits, two a byte.
pub fn encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    text
}

/// Writes `bytes` to `f` as lowercase hex digits, two a byte.
///
/// # Errors
///
/// The formatter's.
pub fn write(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_str(&encode(bytes))
}

/// The bytes of `text`, an even number of hex digits of either case and nothing else; `None`
/// for anything else (a sign, a space, a prefix, an odd length).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| Some((value(pair[0])? << 4) | value(pair[1])?))
        .collect()
}

/// [`decode`] into exactly `N` bytes: `None` unless `text` is `2 * N` hex digits.
pub fn decode_array<const N: usize>(text: &str) -> Option<[u8; N]> {
    decode(text)?.try_into().ok()
}

/// The value of one hex digit (either case).
fn value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

#[cfg(test)]
mod tests {
    use super::{decode, decode_array, encode};

    #[test]
    fn round_trips_and_takes_either_case() {
        let bytes = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff];
        assert_eq!(encode(&bytes), "00017f80abff");
        assert_eq!(decode("00017f80abff").unwrap(), bytes);
        assert_eq!(decode("00017F80ABFF").unwrap(), bytes);
        assert_eq!(decode_array::<6>("00017f80abff"), Some(bytes));
        assert_eq!(encode(&[]), "");
        assert_eq!(decode(""), Some(Vec::new()));
    }

    #[test]
    fn refuses_what_is_not_hex() {
        for bad in ["0", "0g", " 00", "+0", "0x00", "éé"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        assert_eq!(decode_array::<2>("00"), None, "too short");
        assert_eq!(decode_array::<1>("0000"), None, "too long");
    }
}
