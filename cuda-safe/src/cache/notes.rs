//! Notes: a few bytes an on-disk cache keeps beside its entries, one file each under
//! `<root>/notes/<64 hex digits of the key>`, read with the entries' checks.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "CUSAFENT"
//!      8     4  format version, u32 little-endian (1)
//!     12    32  the note's key
//!     44     8  note length, u64 little-endian
//!     52    16  XXH3-128 of the note, u128 little-endian
//!     68     n  the note
//! ```

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use super::format::checksum;
use super::fs_ops::{io_error, open_no_follow};
use super::private;
use super::root::{NOTES, TMP};
use super::temp;
use super::{CacheKey, MAX_NOTE_BYTES, too_large};
use crate::error::Result;

const MAGIC: [u8; 8] = *b"CUSAFENT";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 68;

/// The file contents of `note` under `key`.
fn encode(key: &CacheKey, note: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(HEADER_LEN + note.len());
    file.extend_from_slice(&MAGIC);
    file.extend_from_slice(&VERSION.to_le_bytes());
    file.extend_from_slice(key.as_bytes());
    file.extend_from_slice(&(note.len() as u64).to_le_bytes());
    file.extend_from_slice(&checksum(note));
    file.extend_from_slice(note);
    file
}

/// The note in `file`, if it is a sound note file for `key`.
fn decode(key: &CacheKey, file: &[u8]) -> Option<Vec<u8>> {
    let (header, note) = file.split_at_checked(HEADER_LEN)?;
    let (magic, rest) = header.split_first_chunk::<8>()?;
    let (version, rest) = rest.split_first_chunk::<4>()?;
    let (stated_key, rest) = rest.split_first_chunk::<32>()?;
    let (length, stated) = rest.split_first_chunk::<8>()?;
    let sound = *magic == MAGIC
        && u32::from_le_bytes(*version) == VERSION
        && stated_key == key.as_bytes()
        && u64::from_le_bytes(*length) == note.len() as u64
        && checksum(note) == stated;
    sound.then(|| note.to_vec())
}

/// The note at `path` for `key`: a regular file of this user's, nobody else may write, of a
/// note's size, sound; `None` otherwise (left for the next [`write`] to replace).
pub(crate) fn read(path: &Path, key: &CacheKey) -> Option<Vec<u8>> {
    let mut file = open_no_follow(path).ok()?;
    let metadata = file.metadata().ok()?;
    let len = usize::try_from(metadata.len()).ok()?;
    if !private::is_private_file(&metadata)
        || !(HEADER_LEN..=HEADER_LEN + MAX_NOTE_BYTES).contains(&len)
    {
        return None;
    }
    let mut bytes = vec![0; len];
    file.read_exact(&mut bytes).ok()?;
    decode(key, &bytes)
}

/// Stores `note` under `key` at `path`: written to a temp file in `tmp_dir` and renamed into
/// place, so a reader sees the old note or the new one.
pub(crate) fn write(path: &Path, tmp_dir: &Path, key: &CacheKey, note: &[u8]) -> io::Result<()> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a note of {} bytes is over {MAX_NOTE_BYTES}", note.len()),
        ));
    }
    temp::write_temp(tmp_dir, &encode(key, note))?.persist(path)
}

/// The note under `key` in the cache rooted at `root` ([`read`]).
pub(crate) fn read_in(root: &Path, key: &CacheKey) -> Option<Vec<u8>> {
    read(&root.join(NOTES).join(key.to_hex()), key)
}

/// Stores `note` under `key` in the cache rooted at `root` ([`write`]), making `notes/` and
/// `tmp/` private directories first.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a note over [`MAX_NOTE_BYTES`]; as
/// [`private::ready_dir`]; [`Error::CacheIo`] when the note cannot be written.
pub(crate) fn write_in(root: &Path, key: &CacheKey, note: &[u8]) -> Result<()> {
    if let Some(refusal) = too_large(note) {
        return Err(refusal);
    }
    let (dir, tmp_dir) = (root.join(NOTES), root.join(TMP));
    for dir in [&dir, &tmp_dir] {
        private::ready_dir(dir)?;
    }
    let path = dir.join(key.to_hex());
    write(&path, &tmp_dir, key, note).map_err(|error| io_error(&path, error))
}

/// Removes every note file in `dir` (best effort; a missing `dir` has none).
pub(crate) fn clear(dir: &Path) -> io::Result<()> {
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for item in listing {
        let item = item?;
        if item
            .file_name()
            .to_str()
            .is_some_and(|name| name.len() == 64)
        {
            super::fs_ops::remove_any(&item.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_damage_is_none() {
        let key = CacheKey::from_bytes([3; 32]);
        let file = encode(&key, b"13.0");
        assert_eq!(decode(&key, &file).as_deref(), Some(&b"13.0"[..]));
        assert_eq!(decode(&CacheKey::from_bytes([4; 32]), &file), None);
        for at in 0..file.len() {
            let mut damaged = file.clone();
            damaged[at] ^= 1;
            assert_eq!(decode(&key, &damaged), None, "byte {at}");
            assert_eq!(decode(&key, &file[..at]), None, "cut at {at}");
        }
        assert_eq!(decode(&key, &[&file[..], b"x"].concat()), None);
    }
}
