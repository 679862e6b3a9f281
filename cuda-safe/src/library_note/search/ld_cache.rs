//! glibc's `/etc/ld.so.cache`, read: the file `ldconfig` maps a library name to, as the
//! dynamic loader looks it up (`elf/dl-cache.c`), for the entries this module can model.
//!
//! ```text
//! [old format "ld.so-1.7.0": u32 count, count x 12 bytes, padded to 4]   (optional)
//! new format, offsets from its start:
//!      0  20  magic "glibc-ld.so.cache" and version "1.1"
//!     20   4  entry count           24  4  string table length
//!     28   1  byte order (0 unset, 2 little, 3 big)
//!     29  19  padding, extension offset, unused
//!     48  24  x count entries: i32 flags, u32 key, u32 value, u32 OS version, u64 hwcap
//! ```
//!
//! `ldconfig` sorts the entries by name, in descending order of the loader's comparison
//! (`_dl_cache_libcmp`); the loader finds a name by binary search, steps back to the first
//! entry of that name (those for a CPU level, hwcap, come first) and takes the first whose
//! flags are this architecture's. This module searches the same way, so it finds what the
//! loader finds even in a cache that is not sorted. Key and value are offsets of
//! NUL-terminated strings from the new format's start.

use std::cmp::Ordering;
use std::ffi::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;

/// The cache tag of this architecture's libraries (`FLAG_ELF_LIBC6` with the ABI's flag), as
/// the loader requires it.
const OWN_FLAGS: Option<i32> = if cfg!(target_arch = "x86_64") {
    Some(0x0303)
} else if cfg!(target_arch = "aarch64") {
    Some(0x0a03)
} else {
    None
};

/// The byte order a cache of this machine states.
const OWN_ORDER: u8 = if cfg!(target_endian = "little") { 2 } else { 3 };

/// The file `cache` maps `name` to: `Some(Some(path))`, `Some(None)` when it has no entry
/// for it, `None` when the entry cannot be modelled (a CPU level's or OS version's) or the
/// cache cannot be read.
pub(super) fn lookup(cache: &[u8], name: &[u8]) -> Option<Option<PathBuf>> {
    let own = OWN_FLAGS?;
    let new = new_start(cache)?;
    let table = cache.get(new..)?;
    let count = usize::try_from(u32_at(table, 20)?).ok()?;
    let order = *table.get(28)?;
    if order != 0 && order != OWN_ORDER {
        return None;
    }
    let key_of = |index: usize| -> Option<&[u8]> {
        let entry = table.get(NEW_HEADER + index.checked_mul(NEW_ENTRY)?..)?;
        string_at(table, u32_at(entry, 4)?)
    };
    // The loader's binary search (`search_cache` in `elf/dl-cache.c`), over entries sorted in
    // descending order of `library_order`.
    let Some(found) = binary_search(count, |index| Some(library_order(name, key_of(index)?)))?
    else {
        return Some(None);
    };
    let mut first = found;
    while first > 0 && library_order(name, key_of(first - 1)?) == Ordering::Equal {
        first -= 1;
    }
    let mut index = first;
    while index < count && library_order(name, key_of(index)?) == Ordering::Equal {
        let entry = table.get(NEW_HEADER + index * NEW_ENTRY..)?;
        index += 1;
        let flags = i32::from_ne_bytes(entry.get(..4)?.try_into().ok()?);
        if flags != own {
            continue;
        }
        let os_version = u32_at(entry, 12)?;
        let hwcap = u64::from_ne_bytes(entry.get(16..24)?.try_into().ok()?);
        if os_version != 0 || hwcap != 0 {
            return None;
        }
        let value = string_at(table, u32_at(entry, 8)?)?;
        return Some(Some(PathBuf::from(std::ffi::OsStr::from_bytes(value))));
    }
    Some(None)
}

/// The index the loader's binary search stops at among `count` entries, where `compare(i)` is
/// the name sought against entry `i`'s (`Less`: the name sorts after it in the cache's
/// descending order): `Some(None)` when it finds none, `None` when an entry cannot be read.
fn binary_search(
    count: usize,
    compare: impl Fn(usize) -> Option<Ordering>,
) -> Option<Option<usize>> {
    let (mut left, mut right) = (0usize, count);
    while left < right {
        let middle = left + (right - left) / 2;
        match compare(middle)? {
            Ordering::Equal => return Some(Some(middle)),
            Ordering::Less => left = middle + 1,
            Ordering::Greater => right = middle,
        }
    }
    Some(None)
}

/// Where the new format starts: at once, or after the old format's entries.
fn new_start(cache: &[u8]) -> Option<usize> {
    if cache.starts_with(NEW_MAGIC) {
        return Some(0);
    }
    if !cache.starts_with(OLD_MAGIC) {
        return None;
    }
    let count = usize::try_from(u32_at(cache, 12)?).ok()?;
    let end = count.checked_mul(OLD_ENTRY)?.checked_add(OLD_HEADER)?;
    let start = end.checked_add(3)? & !3;
    cache.get(start..)?.starts_with(NEW_MAGIC).then_some(start)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The NUL-terminated string at `offset` of `table`.
fn string_at(table: &[u8], offset: u32) -> Option<&[u8]> {
    let rest = table.get(usize::try_from(offset).ok()?..)?;
    let end = rest.iter().position(|&byte| byte == 0)?;
    rest.get(..end)
}

/// How the loader orders two library names (`_dl_cache_libcmp`): runs of digits compare by
/// value and before any other byte, other bytes as the C `char`s they are.
fn library_order(a: &[u8], b: &[u8]) -> Ordering {
    // `c_char` is signed on some architectures, as the loader's bytes are; an ended name
    // reads as its NUL.
    let as_char = |byte: Option<&u8>| byte.map_or(0, |&byte| byte as c_char);
    let (mut a, mut b) = (a, b);
    while let Some(&x) = a.first() {
        let y = b.first().copied().unwrap_or(0);
        match (x.is_ascii_digit(), y.is_ascii_digit()) {
            (true, true) => {
                let (first, rest_a) = digits(a);
                let (second, rest_b) = digits(b);
                if first != second {
                    return first.cmp(&second);
                }
                (a, b) = (rest_a, rest_b);
            }
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) if x != y => return as_char(Some(&x)).cmp(&as_char(Some(&y))),
            (false, false) => (a, b) = (&a[1..], b.get(1..).unwrap_or_default()),
        }
    }
    as_char(None).cmp(&as_char(b.first()))
}

/// The value of the digits `text` starts with (saturating, as no name holds a number that
/// large), and what follows them.
fn digits(text: &[u8]) -> (u64, &[u8]) {
    let end = text
        .iter()
        .position(|byte| !byte.is_ascii_digit())
        .unwrap_or(text.len());
    let value = text[..end].iter().fold(0u64, |value, digit| {
        value
            .saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'))
    });
    (value, &text[end..])
}

#[cfg(test)]
mod tests;
