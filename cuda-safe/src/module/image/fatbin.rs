//! A fatbin's structure: its header and parts, within its length.
//!
//! The layout (`fatbinary_section.h` for the header; the parts as `cuobjdump` and the open
//! fatbin readers know them), little-endian:
//!
//! ```text
//! header   0  u32  magic 0xBA55ED50
//!          4  u16  version (1)
//!          6  u16  header size (16)
//!          8  u64  size of the parts that follow the header
//! part     0  u16  kind (1 PTX, 2 ELF)
//!          2  u16  part version
//!          4  u32  part header size (64 or more), from the part's start to its payload
//!          8  u64  payload size
//!         16  u32  compressed size (when the compressed flag is set)
//!         40  u64  flags (0x2000: the payload is compressed)
//! ```
//!
//! The parts follow one another exactly, each its header and then its payload, and fill the
//! stated size. Each must lie within the image; a compressed payload's compressed size must fit
//! its payload; an uncompressed ELF payload must be a sound CUBIN ([`super::elf`]).

use super::{Fields, elf};

/// A fatbin's magic number (its first four bytes, little-endian).
pub(super) const MAGIC: u32 = 0xBA55_ED50;
/// The only header version there is.
const VERSION: u16 = 1;
/// The header's size.
const HEADER_SIZE: u64 = 16;
/// The size of a part's header, at least.
const PART_HEADER_SIZE: u64 = 64;
/// A part holding an ELF file (a CUBIN).
const KIND_ELF: u16 = 2;
/// The flag of a compressed payload.
const FLAG_COMPRESSED: u64 = 0x2000;

/// Checks `image` as a fatbin; `Err` says what is wrong.
pub(super) fn check(image: &[u8]) -> Result<(), String> {
    let fields = Fields::new(image);
    if fields.len() < HEADER_SIZE {
        return Err(format!(
            "it is shorter than the {HEADER_SIZE}-byte fatbin header"
        ));
    }
    let magic = fields.u32(0, "the fatbin magic")?;
    if magic != MAGIC {
        return Err(format!(
            "it does not start with the fatbin magic {MAGIC:#010x} (but {magic:#010x})"
        ));
    }
    let version = fields.u16(4, "the fatbin version")?;
    if version != VERSION {
        return Err(format!("its fatbin version is {version}, not {VERSION}"));
    }
    let header_size = u64::from(fields.u16(6, "the fatbin header size")?);
    if header_size < HEADER_SIZE {
        return Err(format!(
            "its header size is {header_size}, less than {HEADER_SIZE}"
        ));
    }
    let parts_size = fields.u64(8, "the fatbin size")?;
    let end = fields
        .slice(header_size, parts_size, "the fatbin body")?
        .len() as u64
        + header_size;
    check_parts(&fields, header_size, end)
}

/// Checks the parts from byte `start` to byte `end` of the fatbin.
fn check_parts(fields: &Fields<'_>, start: u64, end: u64) -> Result<(), String> {
    let within = |offset: u64, size: u64, what: &str| match offset.checked_add(size) {
        Some(stop) if stop <= end => Ok(stop),
        _ => Err(format!(
            "{what} ({size} bytes at byte {offset}) runs past the parts' end at byte {end}"
        )),
    };
    let mut at = start;
    let mut index = 0;
    while at < end {
        let what = format!("part {index} (at byte {at})");
        within(at, PART_HEADER_SIZE, &format!("the header of {what}"))?;
        let kind = fields.u16(at, what.as_str())?;
        let header_size = u64::from(fields.u32(at + 4, what.as_str())?);
        let payload_size = fields.u64(at + 8, what.as_str())?;
        let compressed_size = u64::from(fields.u32(at + 16, what.as_str())?);
        let flags = fields.u64(at + 40, what.as_str())?;
        if header_size < PART_HEADER_SIZE {
            return Err(format!(
                "{what} has a {header_size}-byte header, less than {PART_HEADER_SIZE}"
            ));
        }
        let payload_at = within(at, header_size, &format!("the header of {what}"))?;
        let next = within(payload_at, payload_size, &format!("the payload of {what}"))?;
        let compressed = flags & FLAG_COMPRESSED != 0;
        if compressed && compressed_size > payload_size {
            return Err(format!(
                "{what} holds {compressed_size} compressed bytes in a {payload_size}-byte payload"
            ));
        }
        if kind == KIND_ELF && !compressed {
            // The ELF file may be followed by padding within its payload.
            let payload = fields.slice(payload_at, payload_size, what.as_str())?;
            elf::check(payload).map_err(|problem| format!("the CUBIN in {what}: {problem}"))?;
        }
        at = next;
        index += 1;
    }
    Ok(())
}
