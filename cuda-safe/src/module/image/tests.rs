//! Image checks against images built here: a small CUBIN-shaped ELF and fatbins around it,
//! whole, truncated and mutated (property tests), and the damage the driver would have read
//! past.

use proptest::prelude::*;

use super::{Format, check, check_fatbin, elf, fatbin};
use crate::code::CodeKind;
use crate::error::Error;

/// Appends `value`'s little-endian bytes.
trait Put {
    fn put<const N: usize>(&mut self, value: [u8; N]) -> &mut Self;
}

impl Put for Vec<u8> {
    fn put<const N: usize>(&mut self, value: [u8; N]) -> &mut Self {
        self.extend_from_slice(&value);
        self
    }
}

/// One section of [`cubin`]: name offset, type, contents (or the size of a `NOBITS` one),
/// link, info and entry size.
struct Sec {
    name: u32,
    kind: u32,
    bytes: Vec<u8>,
    nobits_size: u64,
    link: u32,
    info: u32,
    entry_size: u64,
}

impl Sec {
    fn new(name: u32, kind: u32, bytes: Vec<u8>) -> Self {
        Self {
            name,
            kind,
            bytes,
            nobits_size: 0,
            link: 0,
            info: 0,
            entry_size: 0,
        }
    }
}

/// Where [`cubin`] puts things, for tests that damage them.
struct Layout {
    /// Offset of each section's contents.
    section_offsets: Vec<u64>,
    /// Offset of the section header table, the last thing in the file.
    section_table: u64,
    /// Offset of the program header table.
    program_table: u64,
}

/// A small CUBIN-shaped ELF: the null section, section names, symbol names, a symbol table of
/// two symbols, code, its relocations, a huge `NOBITS` section, and one segment over the
/// code. The section header table comes last, so every truncation cuts something checked.
fn cubin_with_layout() -> (Vec<u8>, Layout) {
    let names = b"\0.shstrtab\0.strtab\0.symtab\0.text.k\0.rel.text.k\0.nv.shared.k\0".to_vec();
    let strings = b"\0k\0".to_vec();
    let mut symbols = vec![0u8; 24];
    symbols
        .put(1u32.to_le_bytes()) // name "k"
        .put([0x12, 0]) // info, other
        .put(4u16.to_le_bytes()) // in section 4 (.text.k)
        .put(0u64.to_le_bytes())
        .put(16u64.to_le_bytes());
    let code = vec![0xaa; 32];
    let mut relocations = Vec::new();
    relocations
        .put(8u64.to_le_bytes())
        .put(((1u64 << 32) | 1).to_le_bytes());
    let mut sections = vec![
        Sec::new(0, 0, Vec::new()),
        Sec::new(1, 3, names),
        Sec::new(11, 3, strings),
        Sec {
            link: 2,
            entry_size: 24,
            ..Sec::new(19, 2, symbols)
        },
        Sec::new(27, 1, code),
        Sec {
            link: 3,
            info: 4,
            entry_size: 16,
            ..Sec::new(35, 9, relocations)
        },
        Sec {
            nobits_size: 1 << 40,
            ..Sec::new(47, 8, Vec::new())
        },
    ];
    let mut body = Vec::new();
    let mut section_offsets = Vec::new();
    let program_table = 64u64;
    let mut at = program_table + 56;
    for section in &mut sections {
        section_offsets.push(at);
        at += section.bytes.len() as u64;
        body.append(&mut section.bytes.clone());
        if section.kind == 8 {
            section.bytes.clear();
        }
    }
    let section_table = at;

    let mut image = Vec::new();
    image
        .put(*b"\x7fELF")
        .put([2, 1, 1, 0x33, 7])
        .put([0; 7])
        .put(2u16.to_le_bytes()) // e_type: executable
        .put(190u16.to_le_bytes()) // EM_CUDA
        .put(1u32.to_le_bytes())
        .put(0u64.to_le_bytes()) // entry
        .put(program_table.to_le_bytes())
        .put(section_table.to_le_bytes())
        .put(0x005a_055au32.to_le_bytes()) // flags
        .put(64u16.to_le_bytes())
        .put(56u16.to_le_bytes())
        .put(1u16.to_le_bytes())
        .put(64u16.to_le_bytes())
        .put((sections.len() as u16).to_le_bytes())
        .put(1u16.to_le_bytes()); // .shstrtab
    assert_eq!(image.len(), 64);
    // One PT_LOAD segment over the code.
    image
        .put(1u32.to_le_bytes())
        .put(5u32.to_le_bytes())
        .put(section_offsets[4].to_le_bytes())
        .put(0u64.to_le_bytes())
        .put(0u64.to_le_bytes())
        .put(32u64.to_le_bytes())
        .put(32u64.to_le_bytes())
        .put(8u64.to_le_bytes());
    image.extend_from_slice(&body);
    for (section, offset) in sections.iter().zip(&section_offsets) {
        let size = match section.kind {
            8 => section.nobits_size,
            _ => section.bytes.len() as u64,
        };
        image
            .put(section.name.to_le_bytes())
            .put(section.kind.to_le_bytes())
            .put(0u64.to_le_bytes())
            .put(0u64.to_le_bytes())
            .put(offset.to_le_bytes())
            .put(size.to_le_bytes())
            .put(section.link.to_le_bytes())
            .put(section.info.to_le_bytes())
            .put(8u64.to_le_bytes())
            .put(section.entry_size.to_le_bytes());
    }
    let layout = Layout {
        section_offsets,
        section_table,
        program_table,
    };
    (image, layout)
}

/// [`cubin_with_layout`]'s image.
fn cubin() -> Vec<u8> {
    cubin_with_layout().0
}

/// A fatbin part: kind, payload padded to 8 bytes, and the compressed flag.
fn part(kind: u16, payload: &[u8], compressed: bool) -> Vec<u8> {
    let mut padded = payload.to_vec();
    padded.resize(payload.len().next_multiple_of(8), 0);
    let header_size: u32 = if kind == 1 { 72 } else { 64 };
    let mut part = Vec::new();
    part.put(kind.to_le_bytes())
        .put(0x0101u16.to_le_bytes())
        .put(header_size.to_le_bytes())
        .put((padded.len() as u64).to_le_bytes())
        .put((payload.len() as u32).to_le_bytes()) // compressed size
        .put(0u32.to_le_bytes())
        .put(0u16.to_le_bytes()) // minor
        .put(8u16.to_le_bytes()) // major
        .put(90u32.to_le_bytes()) // sm_90
        .put(0u32.to_le_bytes())
        .put(0u32.to_le_bytes())
        .put((0x11u64 | if compressed { 0x2000 } else { 0 }).to_le_bytes())
        .put(0u64.to_le_bytes())
        .put(0u64.to_le_bytes());
    part.resize(header_size as usize, 0);
    part.extend_from_slice(&padded);
    part
}

/// A fatbin of `parts`.
fn fatbin_of(parts: &[Vec<u8>]) -> Vec<u8> {
    let parts = parts.concat();
    let mut image = Vec::new();
    image
        .put(0xBA55_ED50u32.to_le_bytes())
        .put(1u16.to_le_bytes())
        .put(16u16.to_le_bytes())
        .put((parts.len() as u64).to_le_bytes());
    image.extend_from_slice(&parts);
    image
}

/// A fatbin of the CUBIN, PTX and a compressed part, as nvcc writes for several targets.
fn fatbin() -> Vec<u8> {
    fatbin_of(&[
        part(2, &cubin(), false),
        part(1, b".version 8.0\n.target sm_90\n\0", false),
        part(2, &[0x5a; 40], true),
    ])
}

fn message(result: Result<(), Error>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message.into_owned(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn put_u64(image: &mut [u8], at: u64, value: u64) {
    let at = at as usize;
    image[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn sound_images_pass() {
    check(&cubin(), CodeKind::Cubin).unwrap();
    check_fatbin(&fatbin()).unwrap();
    check(b"// ptx\n\0", CodeKind::Ptx).unwrap();
    assert_eq!(Format::of(&cubin()), Format::Cubin);
    assert_eq!(Format::of(&fatbin()), Format::Fatbin);
    assert_eq!(Format::of(b".version 8.0"), Format::Ptx);
    // Trailing bytes after a fatbin's stated size are not the driver's to read.
    check_fatbin(&[&fatbin()[..], &[0xff; 5]].concat()).unwrap();
}

#[test]
fn a_four_byte_magic_is_no_longer_enough() {
    for short in [&b"\x7fELF"[..], b"\x7fELF\x02\x01\x01", &cubin()[..63]] {
        let text = message(check(short, CodeKind::Cubin));
        assert!(
            text.contains("shorter than the 64-byte ELF header"),
            "{text}"
        );
    }
    let text = message(check_fatbin(&fatbin::MAGIC.to_le_bytes()));
    assert!(
        text.contains("shorter than the 16-byte fatbin header"),
        "{text}"
    );
}

#[test]
fn a_section_past_the_end_is_named() {
    let (mut image, layout) = cubin_with_layout();
    // Section 4 (.text.k) claims 9000 bytes.
    put_u64(&mut image, layout.section_table + 4 * 64 + 32, 9000);
    let end = layout.section_offsets[4] + 9000;
    let text = message(check(&image, CodeKind::Cubin));
    assert!(
        text.contains(&format!(
            "section 4 ends at byte {end} of a {}-byte image",
            image.len()
        )),
        "{text}"
    );
    // An offset that overflows is refused too.
    put_u64(&mut image, layout.section_table + 4 * 64 + 24, u64::MAX - 4);
    let text = message(check(&image, CodeKind::Cubin));
    assert!(text.contains("past the end of any image"), "{text}");
}

#[test]
fn tables_and_segments_past_the_end_are_refused() {
    let (image, layout) = cubin_with_layout();
    let damaged = |at: u64, value: u64| {
        let mut copy = image.clone();
        put_u64(&mut copy, at, value);
        message(check(&copy, CodeKind::Cubin))
    };
    let text = damaged(40, image.len() as u64 - 64);
    assert!(text.contains("the section header table"), "{text}");
    let text = damaged(32, image.len() as u64 - 10);
    assert!(text.contains("the program header table"), "{text}");
    let text = damaged(layout.program_table + 32, 1 << 20);
    assert!(text.contains("segment 0 ends at byte"), "{text}");
    // Entry sizes the driver would step through wrongly.
    let mut copy = image.clone();
    copy[58] = 40;
    let text = message(check(&copy, CodeKind::Cubin));
    assert!(text.contains("section headers are 40 bytes"), "{text}");
}

#[test]
fn tables_whose_contents_point_outside_are_refused() {
    let (image, layout) = cubin_with_layout();
    let with = |at: u64, bytes: &[u8]| {
        let mut copy = image.clone();
        let at = at as usize;
        copy[at..at + bytes.len()].copy_from_slice(bytes);
        message(check(&copy, CodeKind::Cubin))
    };
    // The last byte of .strtab is no longer NUL.
    let text = with(layout.section_offsets[2] + 2, b"x");
    assert!(text.contains("does not end with a NUL byte"), "{text}");
    // Symbol 1's name is beyond .strtab; its section beyond the table.
    let symbol = layout.section_offsets[3] + 24;
    let text = with(symbol, &200u32.to_le_bytes());
    assert!(
        text.contains("is named at byte 200 of a 3-byte string table"),
        "{text}"
    );
    let text = with(symbol + 6, &77u16.to_le_bytes());
    assert!(
        text.contains("is in section 77, past the 7 sections"),
        "{text}"
    );
    // The relocation's symbol is past the symbol table.
    let text = with(layout.section_offsets[5] + 12, &9u32.to_le_bytes());
    assert!(text.contains("names symbol 9 of a table of 2"), "{text}");
    // A section name past the name table; the name table index past the sections.
    let text = with(layout.section_table + 4 * 64, &999u32.to_le_bytes());
    assert!(text.contains("section 4's name is at byte 999"), "{text}");
    let text = with(62, &9u16.to_le_bytes());
    assert!(
        text.contains("names section 9, past the 7 sections"),
        "{text}"
    );
    // Not a CUBIN at all: another machine, 32-bit, big-endian.
    assert!(with(18, &62u16.to_le_bytes()).contains("machine 62, not for CUDA (190)"));
    assert!(with(4, &[1]).contains("not a 64-bit ELF"));
    assert!(with(5, &[2]).contains("not a little-endian ELF"));
}

#[test]
fn fatbin_parts_past_the_end_are_refused() {
    let image = fatbin();
    // The header claims more parts than there are bytes.
    let mut longer = image.clone();
    put_u64(&mut longer, 8, image.len() as u64);
    let text = message(check_fatbin(&longer));
    assert!(text.contains("the fatbin body ends at byte"), "{text}");
    // The first part's payload claims more than the parts hold.
    let mut payload = image.clone();
    put_u64(&mut payload, 16 + 8, 1 << 30);
    let text = message(check_fatbin(&payload));
    assert!(
        text.contains("the payload of part 0 (at byte 16)"),
        "{text}"
    );
    // A part header of 0 bytes would never advance.
    let mut stuck = image.clone();
    stuck[20..24].copy_from_slice(&0u32.to_le_bytes());
    let text = message(check_fatbin(&stuck));
    assert!(text.contains("has a 0-byte header"), "{text}");
    // A damaged CUBIN inside a part is found.
    let (mut inner, layout) = cubin_with_layout();
    put_u64(&mut inner, layout.section_table + 4 * 64 + 32, 9000);
    let text = message(check_fatbin(&fatbin_of(&[part(2, &inner, false)])));
    assert!(
        text.contains("the CUBIN in part 0 (at byte 16): section 4"),
        "{text}"
    );
    // Wrong magic and version.
    let mut version = image.clone();
    version[4] = 2;
    assert!(message(check_fatbin(&version)).contains("fatbin version is 2"));
    assert!(message(check_fatbin(&[0; 64])).contains("does not start with the fatbin magic"));
}

#[test]
fn ptx_must_end_in_its_only_nul() {
    let text = message(check(b"// ptx", CodeKind::Ptx));
    assert!(text.contains("does not end with a NUL byte"), "{text}");
    let text = message(check(b"// p\0tx\0", CodeKind::Ptx));
    assert!(
        text.contains("a NUL byte at byte 4, before its end"),
        "{text}"
    );
    assert!(check(b"", CodeKind::Ptx).is_err());
}

/// A real CUBIN: NVRTC 12.9's output for `sm_90` (no other option) of this source, with
/// `scale<float>` and `scale<double>` as name expressions. It has 27 sections (string and
/// symbol tables, `RELA` and `NOBITS` ones among them) and 6 segments.
///
/// ```cuda
/// template <class T> __global__ void scale(T* x, T a, size_t n) {
///     size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
///     if (i < n) x[i] *= a;
/// }
/// __device__ float table[64];
/// __constant__ int factor;
/// extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
///     __shared__ float tile[256];
///     size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
///     tile[threadIdx.x] = i < n ? x[i] : 0.0f;
///     __syncthreads();
///     if (i < n) y[i] = a * tile[threadIdx.x] + y[i] + table[i % 64] * factor;
/// }
/// extern "C" __global__ void empty() {}
/// ```
const REAL_CUBIN: &[u8] = include_bytes!("testdata/saxpy_sm90.cubin");

#[test]
fn a_real_cubin_passes_and_every_truncation_of_it_is_refused() {
    check(REAL_CUBIN, CodeKind::Cubin).unwrap();
    assert_eq!(Format::of(REAL_CUBIN), Format::Cubin);
    for len in 0..REAL_CUBIN.len() {
        assert!(
            check(&REAL_CUBIN[..len], CodeKind::Cubin).is_err(),
            "the real CUBIN cut to {len}"
        );
    }
    // Inside a fatbin, as nvcc would put it.
    check_fatbin(&fatbin_of(&[part(2, REAL_CUBIN, false)])).unwrap();
}

/// Every prefix of a sound image shorter than it is refused.
#[test]
fn every_truncation_is_refused() {
    let image = cubin();
    for len in 0..image.len() {
        assert!(
            check(&image[..len], CodeKind::Cubin).is_err(),
            "CUBIN cut to {len}"
        );
    }
    let image = fatbin();
    for len in 0..image.len() {
        assert!(check_fatbin(&image[..len]).is_err(), "fatbin cut to {len}");
    }
    assert!(elf::check(&[]).is_err() && fatbin::check(&[]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Truncated images are refused, and nothing panics.
    #[test]
    fn truncated_images_are_refused(cut in any::<prop::sample::Index>()) {
        let image = cubin();
        prop_assert!(check(&image[..cut.index(image.len())], CodeKind::Cubin).is_err());
        let image = fatbin();
        prop_assert!(check_fatbin(&image[..cut.index(image.len())]).is_err());
    }

    /// Any bytes changed anywhere: the checks answer without panicking, and an image they
    /// accept has every section within it (checked again here, independently).
    #[test]
    fn mutated_images_never_panic(
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut image = cubin();
        for (at, byte) in &changes {
            let at = at.index(image.len());
            image[at] = *byte;
        }
        if check(&image, CodeKind::Cubin).is_ok() {
            prop_assert!(sections_within(&image));
        }
        let _ = check(&image[..cut.index(image.len())], CodeKind::Cubin);

        let mut image = fatbin();
        for (at, byte) in &changes {
            let at = at.index(image.len());
            image[at] = *byte;
        }
        let _ = check_fatbin(&image);
        let _ = check_fatbin(&image[..cut.index(image.len())]);
        let _ = check(&image, CodeKind::Ptx);
    }

    /// The real CUBIN, changed anywhere: no panic, and an accepted one keeps its sections
    /// within it.
    #[test]
    fn mutated_real_cubins_never_panic(
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut image = REAL_CUBIN.to_vec();
        for (at, byte) in &changes {
            let at = at.index(image.len());
            image[at] = *byte;
        }
        if check(&image, CodeKind::Cubin).is_ok() {
            prop_assert!(sections_within(&image));
        }
    }

    /// Random bytes behind a real magic never panic the checks.
    #[test]
    fn random_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = check(&[&b"\x7fELF\x02\x01\x01"[..], &tail].concat(), CodeKind::Cubin);
        let _ = check_fatbin(&[&fatbin::MAGIC.to_le_bytes()[..], &[1, 0, 16, 0], &tail].concat());
        let _ = check(&tail, CodeKind::Ptx);
    }
}

/// Whether every non-`NOBITS` section of an accepted ELF lies within it: the property the
/// driver relies on, computed without the checker.
fn sections_within(image: &[u8]) -> bool {
    let read = |at: usize, len: usize| -> u64 {
        let mut bytes = [0u8; 8];
        bytes[..len].copy_from_slice(&image[at..at + len]);
        u64::from_le_bytes(bytes)
    };
    let table = read(40, 8);
    let count = read(60, 2);
    (0..count).all(|index| {
        let header = (table + index * 64) as usize;
        let kind = read(header + 4, 4);
        let end = read(header + 24, 8).checked_add(read(header + 32, 8));
        kind == 8 || end.is_some_and(|end| end <= image.len() as u64)
    })
}
