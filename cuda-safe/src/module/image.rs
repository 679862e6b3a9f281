//! Checks of an image before the driver reads it: the driver takes a bare pointer and trusts
//! the bytes to describe their own length, so an image that claims more than the slice holds
//! is refused here.

use crate::code::CodeKind;
use crate::error::{Error, Result};

/// The first bytes of an ELF file, which a CUBIN is.
const ELF_MAGIC: &[u8] = b"\x7fELF";
/// The first bytes of a fatbin (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: &[u8] = &[0x50, 0xed, 0x55, 0xba];

/// Checks that `image` is a complete image of `kind`.
pub(super) fn check(image: &[u8], kind: CodeKind) -> Result<()> {
    match kind {
        CodeKind::Cubin => expect_magic(image, ELF_MAGIC, "a CUBIN (ELF)"),
        CodeKind::Ptx => Ok(()),
        CodeKind::LtoIr => Err(Error::invalid_argument(
            "LTO-IR is not a loadable image: link it first",
        )),
    }
}

/// Checks that `image` is a complete fatbin.
pub(super) fn check_fatbin(image: &[u8]) -> Result<()> {
    expect_magic(image, FATBIN_MAGIC, "a fatbin")
}

/// Refuses an image that does not start with `magic`: the driver may accept garbage lazily
/// and fail only at the first kernel lookup.
fn expect_magic(image: &[u8], magic: &[u8], what: &str) -> Result<()> {
    if image.starts_with(magic) {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "the image ({} bytes) is not {what}: it does not start with {magic:02x?}",
            image.len()
        )))
    }
}
