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
//!         16  u32  compressed size (when a compressed flag is set)
//!         40  u64  flags (0x2000: the payload is LZ4-compressed; 0x8000: zstd-compressed)
//! ```
//!
//! nvFatbin compresses with LZ4 in CUDA 12 and with zstd in CUDA 13: PTX by default, a CUBIN
//! with `-compress-all` or `-compress-mode=size` (0x8000 on an ELF part, which nvFatbin 13.5
//! writes and `testdata/saxpy_sm90_zstd.fatbin` holds).
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
/// The flags of a compressed payload: LZ4 (0x2000) and zstd (0x8000).
const FLAGS_COMPRESSED: u64 = 0x2000 | 0x8000;

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
        let compressed = flags & FLAGS_COMPRESSED != 0;
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

#[cfg(test)]
mod tests {
    use super::check;

    /// What nvFatbin builds, byte for byte: `testdata/saxpy_sm90.cubin` (see `tests.rs`) added
    /// with `nvFatbinAddCubin(handle, cubin, size, "90", "saxpy.cubin")` to a handle created
    /// with `-64` and `-compress-all`, by nvFatbin 13.5 (`libnvfatbin.so.13` of the
    /// `nvidia-nvfatbin` 13.5.37 wheel): one ELF part compressed with zstd, flags 0x8011.
    const ZSTD: &[u8] = include_bytes!("testdata/saxpy_sm90_zstd.fatbin");
    /// The same from nvFatbin 12.9 (`nvidia-nvfatbin-cu12` 12.9.82): LZ4, flags 0x2011.
    const LZ4: &[u8] = include_bytes!("testdata/saxpy_sm90_lz4.fatbin");
    /// nvFatbin 13.5 with `-64` only: the CUBIN as it is, then a 13-line PTX kernel for sm_90
    /// (`nvFatbinAddPTX(.., "90", "increment.ptx", "")`), which it compresses with zstd
    /// behind a 96-byte part header.
    const CUBIN_AND_PTX: &[u8] = include_bytes!("testdata/saxpy_sm90_and_ptx.fatbin");

    /// The flags of part `index`'s header at `at`.
    fn flags_at(image: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(image[at + 40..at + 48].try_into().unwrap())
    }

    #[test]
    fn what_nvfatbin_builds_passes() {
        // The layout the check relies on, as nvFatbin wrote it.
        for image in [ZSTD, LZ4, CUBIN_AND_PTX] {
            assert_eq!(image[..8], [0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0]);
            let parts = u64::from_le_bytes(image[8..16].try_into().unwrap());
            assert_eq!(parts + 16, image.len() as u64);
            assert_eq!(
                u16::from_le_bytes([image[16], image[17]]),
                2,
                "an ELF part first"
            );
        }
        assert_eq!(flags_at(ZSTD, 16), 0x8011, "64-bit, Linux, zstd");
        assert_eq!(
            ZSTD[16 + 80..16 + 84],
            [0x28, 0xb5, 0x2f, 0xfd],
            "a zstd frame"
        );
        assert_eq!(flags_at(LZ4, 16), 0x2011, "64-bit, Linux, LZ4");
        assert_eq!(
            flags_at(CUBIN_AND_PTX, 16),
            0x11,
            "the CUBIN is not compressed"
        );
        assert_eq!(CUBIN_AND_PTX[16 + 80..16 + 84], *b"\x7fELF");
        for image in [ZSTD, LZ4, CUBIN_AND_PTX] {
            check(image).unwrap_or_else(|problem| panic!("refused: {problem}"));
        }
    }

    #[test]
    fn a_compressed_elf_part_is_not_walked_as_an_elf_file_but_must_fit() {
        // Clearing the zstd flag makes the part an ELF file again: its bytes are not one.
        let mut plain = ZSTD.to_vec();
        plain[16 + 40..16 + 48].copy_from_slice(&0x11u64.to_le_bytes());
        let problem = check(&plain).unwrap_err();
        assert!(problem.contains("the CUBIN in part 0"), "{problem}");
        // A compressed size past the payload is refused, whichever compression.
        for image in [ZSTD, LZ4] {
            let mut oversized = image.to_vec();
            let payload = u64::from_le_bytes(image[24..32].try_into().unwrap());
            let size = u32::try_from(payload + 1).unwrap();
            oversized[32..36].copy_from_slice(&size.to_le_bytes());
            let problem = check(&oversized).unwrap_err();
            assert!(problem.contains("compressed bytes in a"), "{problem}");
        }
        for len in 0..CUBIN_AND_PTX.len() {
            assert!(check(&CUBIN_AND_PTX[..len]).is_err(), "cut to {len}");
        }
    }
}
