//! The byte layout of one on-disk cache entry.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "CUSAFEPC"
//!      8     4  format version, u32 little-endian (2)
//!     12     8  payload length, u64 little-endian
//!     20    32  the entry's cache key
//!     52    16  XXH3-128 of the payload, u128 little-endian
//!     68     n  payload:
//!                 u8   code kind (1 PTX, 2 CUBIN, 3 LTO-IR)
//!                 u8   flags: bit 0, the image passed the crate's image check before it was
//!                      stored; bit 1, a note is stored with the code; no other bit is set
//!                 u64  note length, then the note (with bit 1 only: at most 4 KiB)
//!                 u64  code length, then the code
//!                 u64  number of lowered names, then for each:
//!                      u64 length + UTF-8 name expression, u64 length + UTF-8 lowered name
//! ```
//!
//! Decoding accepts a file only if every field checks out and nothing trails the payload.
//!
//! The checksum finds damage (a torn or flipped file); it is no seal, as no unkeyed hash is:
//! whoever may write the file may write its checksum too, which is why the cache reads only
//! files of this user's that nobody else may write.

use twox_hash::XxHash3_128;

use super::CacheKey;
use super::MAX_NOTE_BYTES;
use crate::code::{CodeKind, CompiledCode};

/// The first eight bytes of every entry file.
pub(crate) const MAGIC: [u8; 8] = *b"CUSAFEPC";
/// The layout version this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// The size of the fixed header before the payload.
pub(crate) const HEADER_LEN: usize = 68;
/// The size of the checksum, the header's last field.
const CHECKSUM_LEN: usize = 16;
/// The payload flag of an image that passed the image check before it was stored.
const IMAGE_CHECKED: u8 = 1;
/// The payload flag of an entry stored with a note ([`ProgramCache::put_noted`](super::ProgramCache::put_noted)).
const NOTED: u8 = 2;

/// Why an entry file was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Corruption {
    /// Shorter than the header, or than the header says.
    Truncated,
    /// Not an entry file.
    BadMagic,
    /// Written in another layout.
    BadVersion,
    /// Longer than the header says.
    TrailingBytes,
    /// Holds the entry of another key.
    WrongKey,
    /// The payload does not match its checksum.
    BadChecksum,
    /// The checksum holds but the payload does not parse.
    BadPayload,
}

/// The file contents for `program` stored under `key`, with `note` if there is one.
pub(crate) fn encode(key: &CacheKey, program: &CompiledCode, note: Option<&[u8]>) -> Vec<u8> {
    let note_len = note.map_or(0, |note| note.len() + 8);
    let mut payload = Vec::with_capacity(program.bytes().len() + note_len + 64);
    payload.push(program.kind().tag());
    let checked = if program.image_checked() {
        IMAGE_CHECKED
    } else {
        0
    };
    payload.push(checked | if note.is_some() { NOTED } else { 0 });
    if let Some(note) = note {
        put_bytes(&mut payload, note);
    }
    put_bytes(&mut payload, program.bytes());
    payload.extend_from_slice(&(program.lowered_names().len() as u64).to_le_bytes());
    for (expression, lowered) in program.lowered_names() {
        put_bytes(&mut payload, expression.as_bytes());
        put_bytes(&mut payload, lowered.as_bytes());
    }

    let mut file = Vec::with_capacity(HEADER_LEN + payload.len());
    file.extend_from_slice(&MAGIC);
    file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(key.as_bytes());
    file.extend_from_slice(&checksum(&payload));
    file.extend_from_slice(&payload);
    file
}

/// The checksum of `payload` as the header holds it.
pub(crate) fn checksum(payload: &[u8]) -> [u8; CHECKSUM_LEN] {
    XxHash3_128::oneshot(payload).to_le_bytes()
}

/// The payload length the fixed header of an entry for `key` states, if the header (the first
/// [`HEADER_LEN`] bytes of `header`) is sound: right magic, format version and key.
///
/// Lets a reader check the header, and the file's size against it, before reading the payload.
pub(crate) fn payload_len(key: &CacheKey, header: &[u8]) -> Result<u64, Corruption> {
    let mut reader = Reader(header);
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(Corruption::BadMagic);
    }
    if reader.u32()? != FORMAT_VERSION {
        return Err(Corruption::BadVersion);
    }
    let length = reader.u64()?;
    if reader.take(32)? != key.as_bytes() {
        return Err(Corruption::WrongKey);
    }
    Ok(length)
}

/// An entry's contents: the program, and the note stored with it.
pub(crate) type Decoded = (CompiledCode, Option<Vec<u8>>);

/// The program in `file` (and its note, if it has one), if it is a sound entry for `key`.
pub(crate) fn decode(key: &CacheKey, file: &[u8]) -> Result<Decoded, Corruption> {
    let mut reader = Reader(file);
    let header = reader.take(HEADER_LEN)?;
    let length = payload_len(key, header)?;
    let (_, stated) = header
        .split_at_checked(HEADER_LEN - CHECKSUM_LEN)
        .ok_or(Corruption::Truncated)?;
    let payload = reader.0;
    match (payload.len() as u64).cmp(&length) {
        std::cmp::Ordering::Less => return Err(Corruption::Truncated),
        std::cmp::Ordering::Greater => return Err(Corruption::TrailingBytes),
        std::cmp::Ordering::Equal => {}
    }
    if checksum(payload) != stated {
        return Err(Corruption::BadChecksum);
    }
    parse_payload(payload).ok_or(Corruption::BadPayload)
}

fn parse_payload(payload: &[u8]) -> Option<Decoded> {
    let mut reader = Reader(payload);
    let kind = CodeKind::from_tag(reader.take(1).ok()?.first().copied()?)?;
    let flags = reader.take(1).ok()?.first().copied()?;
    if flags & !(IMAGE_CHECKED | NOTED) != 0 {
        return None;
    }
    let note = match flags & NOTED {
        0 => None,
        _ => Some(reader.bytes().ok()?).filter(|note| note.len() <= MAX_NOTE_BYTES),
    };
    if flags & NOTED != 0 && note.is_none() {
        return None;
    }
    let code = reader.bytes().ok()?;
    let count = reader.u64().ok()?;
    let mut names = Vec::new();
    for _ in 0..count {
        let expression = std::str::from_utf8(reader.bytes().ok()?).ok()?;
        let lowered = std::str::from_utf8(reader.bytes().ok()?).ok()?;
        names.push((expression.to_owned(), lowered.to_owned()));
    }
    reader.0.is_empty().then(|| {
        let program =
            CompiledCode::new(kind, code, names).with_image_checked(flags & IMAGE_CHECKED != 0);
        (program, note.map(<[u8]>::to_vec))
    })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A cursor over the bytes not read yet.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], Corruption> {
        let (head, rest) = self
            .0
            .split_at_checked(count)
            .ok_or(Corruption::Truncated)?;
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corruption> {
        self.take(N)?.try_into().map_err(|_| Corruption::Truncated)
    }

    fn u32(&mut self) -> Result<u32, Corruption> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, Corruption> {
        self.array().map(u64::from_le_bytes)
    }

    /// A `u64` length and that many bytes.
    fn bytes(&mut self) -> Result<&'a [u8], Corruption> {
        let length = usize::try_from(self.u64()?).map_err(|_| Corruption::Truncated)?;
        self.take(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn program() -> impl Strategy<Value = CompiledCode> {
        (
            proptest::sample::select(CodeKind::ALL.to_vec()),
            proptest::collection::vec(any::<u8>(), 0..300),
            proptest::collection::vec((".{0,12}", ".{0,12}"), 0..4),
        )
            .prop_map(|(kind, code, names)| CompiledCode::new(kind, code, names))
    }

    #[test]
    fn the_header_is_as_documented() {
        let key = CacheKey::from_bytes([0xab; 32]);
        let file = encode(
            &key,
            &CompiledCode::new(CodeKind::Cubin, vec![9; 5], Vec::new()),
            None,
        );
        let payload = [
            &[2u8, 0][..],
            &5u64.to_le_bytes(),
            &[9; 5],
            &0u64.to_le_bytes(),
        ]
        .concat();
        assert_eq!(&file[..8], b"CUSAFEPC");
        assert_eq!(&file[8..12], &2u32.to_le_bytes());
        assert_eq!(&file[12..20], &(payload.len() as u64).to_le_bytes());
        assert_eq!(&file[20..52], &[0xab; 32]);
        let stated = u128::from_le_bytes(file[52..68].try_into().unwrap());
        assert_eq!(stated, XxHash3_128::oneshot(&payload));
        assert_eq!(&file[HEADER_LEN..], &payload[..]);
    }

    #[test]
    fn specific_damage_is_named() {
        let key = CacheKey::from_bytes([1; 32]);
        let file = encode(
            &key,
            &CompiledCode::new(CodeKind::Ptx, vec![1, 2, 3], Vec::new()),
            None,
        );
        let with = |at: usize, byte: u8| {
            let mut damaged = file.clone();
            damaged[at] = byte;
            decode(&key, &damaged)
        };
        assert_eq!(with(0, b'X').unwrap_err(), Corruption::BadMagic);
        assert_eq!(with(8, 1).unwrap_err(), Corruption::BadVersion);
        assert_eq!(with(20, 0).unwrap_err(), Corruption::WrongKey);
        assert_eq!(with(60, file[60] ^ 1).unwrap_err(), Corruption::BadChecksum);
        assert_eq!(
            with(HEADER_LEN + 2, file[HEADER_LEN + 2] ^ 1).unwrap_err(),
            Corruption::BadChecksum
        );
        assert_eq!(decode(&key, &[]).unwrap_err(), Corruption::Truncated);
        assert_eq!(
            decode(&key, &file[..40]).unwrap_err(),
            Corruption::Truncated
        );
        assert_eq!(
            decode(&key, &file[..file.len() - 1]).unwrap_err(),
            Corruption::Truncated
        );
        let longer = [&file[..], &[0]].concat();
        assert_eq!(
            decode(&key, &longer).unwrap_err(),
            Corruption::TrailingBytes
        );
    }

    #[test]
    fn the_header_alone_gives_the_stated_payload_length() {
        let key = CacheKey::from_bytes([4; 32]);
        let file = encode(
            &key,
            &CompiledCode::new(CodeKind::Ptx, vec![1, 2, 3], Vec::new()),
            None,
        );
        let stated = (file.len() - HEADER_LEN) as u64;
        assert_eq!(payload_len(&key, &file[..HEADER_LEN]), Ok(stated));
        let mut huge = file[..HEADER_LEN].to_vec();
        huge[12..20].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert_eq!(payload_len(&key, &huge), Ok(1 << 40));
        let other = CacheKey::from_bytes([5; 32]);
        assert_eq!(
            payload_len(&other, &file[..HEADER_LEN]),
            Err(Corruption::WrongKey)
        );
        assert_eq!(
            payload_len(&key, &[0; HEADER_LEN]),
            Err(Corruption::BadMagic)
        );
        assert_eq!(
            payload_len(&key, &file[..HEADER_LEN - 40]),
            Err(Corruption::Truncated)
        );
    }

    #[test]
    fn a_payload_with_a_sound_checksum_is_still_parsed_strictly() {
        let key = CacheKey::from_bytes([3; 32]);
        for payload in [
            &[7u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &[1, 5],
            // An unknown flag.
            &[2u8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ] {
            let mut file = encode(
                &key,
                &CompiledCode::new(CodeKind::Ptx, vec![], Vec::new()),
                None,
            );
            file.truncate(12);
            file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            file.extend_from_slice(key.as_bytes());
            file.extend_from_slice(&checksum(payload));
            file.extend_from_slice(payload);
            assert_eq!(decode(&key, &file).unwrap_err(), Corruption::BadPayload);
        }
    }

    #[test]
    fn a_noted_entry_is_laid_out_as_documented_and_its_note_capped() {
        let key = CacheKey::from_bytes([7; 32]);
        let code = CompiledCode::new(CodeKind::Cubin, vec![9; 3], Vec::new());
        let file = encode(&key, &code, Some(b"note"));
        let payload = [
            &[2u8, NOTED][..],
            &4u64.to_le_bytes(),
            b"note",
            &3u64.to_le_bytes(),
            &[9; 3],
            &0u64.to_le_bytes(),
        ]
        .concat();
        assert_eq!(&file[HEADER_LEN..], &payload[..]);
        let huge = vec![b'n'; MAX_NOTE_BYTES + 1];
        let file = encode(&key, &code, Some(&huge));
        assert_eq!(decode(&key, &file).unwrap_err(), Corruption::BadPayload);
    }

    #[test]
    fn the_image_checked_flag_round_trips() {
        let key = CacheKey::from_bytes([6; 32]);
        let code = CompiledCode::new(CodeKind::Cubin, vec![1, 2, 3], Vec::new());
        let decoded = decode(&key, &encode(&key, &code, None)).unwrap();
        assert!(!decoded.0.image_checked());
        code.mark_image_checked();
        let file = encode(&key, &code, None);
        assert_eq!(file[HEADER_LEN + 1], IMAGE_CHECKED);
        assert!(decode(&key, &file).unwrap().0.image_checked());
    }

    proptest! {
        #[test]
        fn round_trips(program in program(), key in any::<[u8; 32]>()) {
            let key = CacheKey::from_bytes(key);
            prop_assert_eq!(decode(&key, &encode(&key, &program, None)), Ok((program, None)));
        }

        #[test]
        fn noted_entries_round_trip(
            program in program(),
            note in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let key = CacheKey::from_bytes([8; 32]);
            let file = encode(&key, &program, Some(&note));
            prop_assert_eq!(decode(&key, &file), Ok((program, Some(note))));
        }

        /// Any flipped bit, any truncation and any extra byte is detected, noted or not.
        #[test]
        fn damage_is_detected(
            program in program(),
            noted in any::<bool>(),
            at in any::<prop::sample::Index>(),
            bit in 0..8u8,
        ) {
            let key = CacheKey::from_bytes([5; 32]);
            let file = encode(&key, &program, noted.then_some(&b"a note"[..]));
            let at = at.index(file.len());
            let mut flipped = file.clone();
            flipped[at] ^= 1 << bit;
            prop_assert!(decode(&key, &flipped).is_err());
            prop_assert!(decode(&key, &file[..at]).is_err());
            let mut longer = file.clone();
            longer.insert(at, 0);
            prop_assert!(decode(&key, &longer).is_err());
        }
    }
}
