//! Checks of an image before the driver reads it.
//!
//! `cuLibraryLoadData` takes a bare pointer: the driver trusts the bytes to describe their own
//! length, so an image that claims more than the slice holds (a truncated file, a damaged
//! cache entry, a hostile one) makes it read past the allocation. Every image is therefore
//! walked here, from the slice's length, and refused with [`Error::InvalidArgument`] naming
//! what is wrong unless everything the driver follows lies within it:
//!
//! - a CUBIN ([`elf`]): the ELF header, the section and program header tables, every section
//!   but `SHT_NOBITS` and every segment, string tables, symbol tables and relocations;
//! - a fatbin ([`fatbin`]): its header and every part, and the CUBIN of each uncompressed
//!   ELF part;
//! - PTX: text ending in its one NUL byte.

mod elf;
mod fatbin;

use crate::code::CodeKind;
use crate::error::{Error, Result};

/// What an image turned out to be, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// A CUBIN: an ELF file.
    Cubin,
    /// A fatbin.
    Fatbin,
    /// Anything else, taken as PTX text.
    Ptx,
}

impl Format {
    /// The format `image` claims by its magic number.
    pub(super) fn of(image: &[u8]) -> Self {
        if image.starts_with(elf::MAGIC) {
            Self::Cubin
        } else if image.starts_with(&fatbin::MAGIC.to_le_bytes()) {
            Self::Fatbin
        } else {
            Self::Ptx
        }
    }
}

/// Checks that `image` is a complete image of `kind`.
pub(super) fn check(image: &[u8], kind: CodeKind) -> Result<()> {
    match kind {
        CodeKind::Cubin => elf::check(image).map_err(|problem| refuse("CUBIN", image, problem)),
        CodeKind::Ptx => check_ptx(image),
        CodeKind::LtoIr => Err(Error::invalid_argument(
            "LTO-IR is not a loadable image: link it first",
        )),
        CodeKind::Fatbin => check_fatbin(image),
    }
}

/// Checks that `image` is a complete fatbin.
pub(super) fn check_fatbin(image: &[u8]) -> Result<()> {
    fatbin::check(image).map_err(|problem| refuse("fatbin", image, problem))
}

/// Checks that `image` is PTX text with one NUL byte, its last.
fn check_ptx(image: &[u8]) -> Result<()> {
    match image.iter().position(|&byte| byte == 0) {
        Some(at) if at + 1 == image.len() => Ok(()),
        Some(at) => Err(refuse(
            "PTX",
            image,
            format!("it holds a NUL byte at byte {at}, before its end"),
        )),
        None => Err(refuse(
            "PTX",
            image,
            "it does not end with a NUL byte".to_owned(),
        )),
    }
}

fn refuse(what: &str, image: &[u8], problem: String) -> Error {
    Error::invalid_argument(format!(
        "the {what} image ({} bytes) is refused: {problem}",
        image.len()
    ))
}

/// Little-endian fields of an image, read where they must lie within it.
/// What a field is, for an error message: plain text, or a function that writes it, so that a
/// loop over a table's entries formats nothing unless one of them is wrong.
trait Describe {
    /// The description.
    fn describe(&self) -> String;
}

impl Describe for &str {
    fn describe(&self) -> String {
        (*self).to_owned()
    }
}

impl<F: Fn() -> String> Describe for F {
    fn describe(&self) -> String {
        self()
    }
}

struct Fields<'a> {
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// `N` bytes at `at`, or why not.
    #[inline]
    fn array<const N: usize>(&self, at: u64, what: impl Describe) -> Result<[u8; N], String> {
        usize::try_from(at)
            .ok()
            .and_then(|at| self.bytes.get(at..))
            .and_then(<[u8]>::first_chunk::<N>)
            .copied()
            .ok_or_else(|| self.outside(at, N as u64, &what))
    }

    #[inline]
    fn u8(&self, at: u64, what: impl Describe) -> Result<u8, String> {
        self.array::<1>(at, what).map(|[byte]| byte)
    }

    #[inline]
    fn u16(&self, at: u64, what: impl Describe) -> Result<u16, String> {
        self.array(at, what).map(u16::from_le_bytes)
    }

    #[inline]
    fn u32(&self, at: u64, what: impl Describe) -> Result<u32, String> {
        self.array(at, what).map(u32::from_le_bytes)
    }

    #[inline]
    fn u64(&self, at: u64, what: impl Describe) -> Result<u64, String> {
        self.array(at, what).map(u64::from_le_bytes)
    }

    /// The `size` bytes at `offset`, or why not.
    #[inline]
    fn slice(&self, offset: u64, size: u64, what: impl Describe) -> Result<&'a [u8], String> {
        let bytes = self.bytes;
        usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(offset, size)| bytes.get(offset..)?.get(..size))
            .ok_or_else(|| self.outside(offset, size, &what))
    }

    /// Why the `size` bytes at `offset` are not all in the image.
    #[cold]
    fn outside(&self, offset: u64, size: u64, what: &impl Describe) -> String {
        match end_of(offset, size, self.len(), what) {
            // Within the length but not addressable here (a 32-bit host): past it all the same.
            Ok(end) => past(what, end, self.len()),
            Err(why) => why,
        }
    }
}

/// Where `size` bytes from `offset` end, if within `len`; else why not (an overflowing end
/// is reported as past any length).
fn end_of(offset: u64, size: u64, len: u64, what: &impl Describe) -> Result<u64, String> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(end),
        Some(end) => Err(past(what, end, len)),
        None => Err(format!(
            "{} ({size} bytes at byte {offset}) ends past the end of any image",
            what.describe()
        )),
    }
}

fn past(what: &impl Describe, end: u64, len: u64) -> String {
    format!(
        "{} ends at byte {end} of a {len}-byte image",
        what.describe()
    )
}

#[cfg(test)]
mod tests;
