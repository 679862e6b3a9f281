//! A CUBIN's structure: an ELF64 little-endian file for the CUDA machine, everything it
//! points to within its length.
//!
//! Checked, from the ELF specification (offsets are those of `Elf64_Ehdr`, `Elf64_Shdr`,
//! `Elf64_Phdr`, `Elf64_Sym` and `Elf64_Rel[a]`): the 64-byte header (class, byte order,
//! version, machine `EM_CUDA`, header size); the section header table (64-byte entries,
//! extended numbering through section 0) and every section but `SHT_NOBITS`; the section-name
//! table index and every section's name; each string table ending in NUL; each symbol table
//! (24-byte entries, linked to a string table, names and section indexes in range); each
//! relocation section (16- or 24-byte entries, its symbol table and target section in range,
//! symbol indexes in range); the program header table (56-byte entries) and every segment's
//! file bytes. All offset arithmetic is checked.

use super::{Describe, Fields};

/// The first bytes of an ELF file.
pub(super) const MAGIC: &[u8] = b"\x7fELF";

const HEADER_SIZE: u64 = 64;
const SECTION_HEADER_SIZE: u64 = 64;
const PROGRAM_HEADER_SIZE: u64 = 56;
const SYMBOL_SIZE: u64 = 24;
const REL_SIZE: u64 = 16;
const RELA_SIZE: u64 = 24;

const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const EV_CURRENT: u8 = 1;
/// `e_machine` of a CUBIN.
const EM_CUDA: u16 = 190;

const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHT_DYNSYM: u32 = 11;

/// Section indexes from here on are reserved (absolute, common, ...), not sections.
const SHN_LORESERVE: u16 = 0xff00;
/// "The real index is elsewhere" (in section 0), for the name table index.
const SHN_XINDEX: u16 = 0xffff;
/// "The real count is in section 0's `sh_info`", for the program header count.
const PN_XNUM: u16 = 0xffff;

/// What the checks read of one section header.
#[derive(Debug, Clone, Copy)]
struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    entry_size: u64,
}

/// Checks `image` as a CUBIN; `Err` says what is wrong.
pub(super) fn check(image: &[u8]) -> Result<(), String> {
    let fields = Fields::new(image);
    if fields.len() < HEADER_SIZE {
        return Err(format!(
            "it is shorter than the {HEADER_SIZE}-byte ELF header"
        ));
    }
    if !image.starts_with(MAGIC) {
        return Err("it does not start with the ELF magic 7f 45 4c 46".to_owned());
    }
    let class = fields.u8(4, "the ELF class")?;
    if class != ELFCLASS64 {
        return Err(format!("it is not a 64-bit ELF (class {class})"));
    }
    let data = fields.u8(5, "the ELF byte order")?;
    if data != ELFDATA2LSB {
        return Err(format!("it is not a little-endian ELF (byte order {data})"));
    }
    let version = fields.u8(6, "the ELF version")?;
    if version != EV_CURRENT {
        return Err(format!("its ELF version is {version}, not 1"));
    }
    let machine = fields.u16(18, "the ELF machine")?;
    if machine != EM_CUDA {
        return Err(format!(
            "it is an ELF file for machine {machine}, not for CUDA ({EM_CUDA})"
        ));
    }
    let header_size = fields.u16(52, "the ELF header size")?;
    if u64::from(header_size) != HEADER_SIZE {
        return Err(format!(
            "its ELF header size is {header_size}, not {HEADER_SIZE}"
        ));
    }
    let sections = sections(&fields)?;
    check_sections(&fields, &sections)?;
    check_segments(&fields, sections.first())
}

/// The section headers, once the table is known to lie within the image.
fn sections<'a>(fields: &Fields<'a>) -> Result<Sections<'a>, String> {
    let offset = fields.u64(40, "e_shoff")?;
    let entry_size = fields.u16(58, "e_shentsize")?;
    let count = fields.u16(60, "e_shnum")?;
    if offset == 0 {
        return match count {
            0 => Ok(Sections::NONE),
            count => Err(format!(
                "it has {count} sections but no section header table"
            )),
        };
    }
    if u64::from(entry_size) != SECTION_HEADER_SIZE {
        return Err(format!(
            "its section headers are {entry_size} bytes, not {SECTION_HEADER_SIZE}"
        ));
    }
    // With more than 0xff00 sections the count is in section 0's size.
    let first = section(fields, offset, 0)?;
    let count = match count {
        0 => first.size,
        count => u64::from(count),
    };
    let table = count
        .checked_mul(SECTION_HEADER_SIZE)
        .ok_or_else(|| format!("its section header table of {count} entries is too large"))?;
    let table = fields.slice(offset, table, || {
        format!("the section header table ({count} entries at byte {offset})")
    })?;
    // The table lies within the image, so `count` is bounded by its length.
    Ok(Sections {
        table,
        count: usize::try_from(count).unwrap_or(0),
    })
}

/// The section header table, read in place (no copy, no allocation).
#[derive(Clone, Copy)]
struct Sections<'a> {
    table: &'a [u8],
    count: usize,
}

impl Sections<'_> {
    const NONE: Sections<'static> = Sections {
        table: &[],
        count: 0,
    };

    fn len(&self) -> usize {
        self.count
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Section `index`, if there is one.
    fn get(&self, index: usize) -> Option<Section> {
        let at = index.checked_mul(SECTION_HEADER_SIZE as usize)?;
        let header = self.table.get(at..)?.first_chunk()?;
        Some(decode_section(header))
    }

    fn first(&self) -> Option<Section> {
        self.get(0)
    }

    /// Every section header, in order.
    fn headers(&self) -> impl Iterator<Item = &[u8; SECTION_HEADER_SIZE as usize]> + '_ {
        self.table
            .chunks_exact(SECTION_HEADER_SIZE as usize)
            .take(self.count)
            .filter_map(|header| header.first_chunk())
    }
}

fn section(fields: &Fields<'_>, at: u64, index: u64) -> Result<Section, String> {
    let header: &[u8; SECTION_HEADER_SIZE as usize] = fields
        .slice(at, SECTION_HEADER_SIZE, || {
            format!("section header {index}")
        })?
        .try_into()
        .map_err(|_| format!("section header {index} is not {SECTION_HEADER_SIZE} bytes"))?;
    Ok(decode_section(header))
}

/// The fields of a section header, read in place.
fn decode_section(header: &[u8; SECTION_HEADER_SIZE as usize]) -> Section {
    Section {
        kind: u32_at(header, 4),
        offset: u64_at(header, 24),
        size: u64_at(header, 32),
        link: u32_at(header, 40),
        info: u32_at(header, 44),
        entry_size: u64_at(header, 56),
    }
}

/// The little-endian `u32` at `offset` of a section header.
#[inline]
fn u32_at(header: &[u8; SECTION_HEADER_SIZE as usize], offset: usize) -> u32 {
    u32::from_le_bytes([
        header[offset],
        header[offset + 1],
        header[offset + 2],
        header[offset + 3],
    ])
}

/// The little-endian `u64` at `offset` of a section header.
#[inline]
fn u64_at(header: &[u8; SECTION_HEADER_SIZE as usize], offset: usize) -> u64 {
    u64::from(u32_at(header, offset)) | u64::from(u32_at(header, offset + 4)) << 32
}

/// The section at `index`, or why there is none.
fn linked(sections: &Sections<'_>, index: u64, by: impl Describe) -> Result<Section, String> {
    usize::try_from(index)
        .ok()
        .and_then(|index| sections.get(index))
        .ok_or_else(|| {
            format!(
                "{} names section {index}, past the {} sections",
                by.describe(),
                sections.len()
            )
        })
}

fn check_sections(fields: &Fields<'_>, sections: &Sections<'_>) -> Result<(), String> {
    let names = match fields.u16(62, "e_shstrndx")? {
        0 => None,
        SHN_XINDEX => Some(u64::from(sections.first().map_or(0, |first| first.link))),
        index => Some(u64::from(index)),
    };
    let name_table_size = match names.filter(|_| !sections.is_empty()) {
        Some(names) => {
            let table = linked(sections, names, "the section-name index")?;
            if table.kind != SHT_STRTAB {
                return Err(format!(
                    "section {names}, named as the section names, is not a string table"
                ));
            }
            Some(table.size)
        }
        None => None,
    };
    // One pass: each section's bytes and its name, read from the header in place (a copy of
    // the header, read back, stalls the loads); then what its kind links to.
    for (index, header) in sections.headers().enumerate() {
        let kind = u32_at(header, 4);
        let (offset, size) = (u64_at(header, 24), u64_at(header, 32));
        if kind != SHT_NOBITS {
            fields.slice(offset, size, || format!("section {index}"))?;
        }
        let name = u32_at(header, 0);
        if let Some(size) = name_table_size
            && u64::from(name) >= size
            && name != 0
        {
            return Err(format!(
                "section {index}'s name is at byte {name} of a {size}-byte name table"
            ));
        }
        match kind {
            SHT_STRTAB => check_strings(fields, offset, size, index)?,
            SHT_SYMTAB | SHT_DYNSYM => {
                check_symbols(fields, sections, &decode_section(header), index)?;
            }
            SHT_REL => {
                check_relocations(fields, sections, &decode_section(header), index, REL_SIZE)?;
            }
            SHT_RELA => {
                check_relocations(fields, sections, &decode_section(header), index, RELA_SIZE)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_strings(fields: &Fields<'_>, offset: u64, size: u64, index: usize) -> Result<(), String> {
    let bytes = fields.slice(offset, size, || format!("section {index}"))?;
    match bytes.last() {
        None | Some(0) => Ok(()),
        Some(_) => Err(format!(
            "string table section {index} does not end with a NUL byte"
        )),
    }
}

/// The number of `entry`-byte entries of table section `index`, or why it is no such table.
fn entries(section: &Section, index: usize, entry: u64, what: &str) -> Result<u64, String> {
    if section.entry_size != entry {
        return Err(format!(
            "{what} section {index} has {}-byte entries, not {entry}",
            section.entry_size
        ));
    }
    if !section.size.is_multiple_of(entry) {
        return Err(format!(
            "{what} section {index} is {} bytes, not a whole number of {entry}-byte entries",
            section.size
        ));
    }
    Ok(section.size / entry)
}

fn check_symbols(
    fields: &Fields<'_>,
    sections: &Sections<'_>,
    section: &Section,
    index: usize,
) -> Result<(), String> {
    let count = entries(section, index, SYMBOL_SIZE, "symbol table")?;
    let by = || format!("symbol table section {index}");
    let strings = linked(sections, u64::from(section.link), by)?;
    if strings.kind != SHT_STRTAB {
        return Err(format!(
            "{} links to section {}, which is not a string table",
            by(),
            section.link
        ));
    }
    // The table lies within the image (checked with every section): read it in place.
    let table = fields.slice(section.offset, count * SYMBOL_SIZE, by)?;
    for (symbol, entry) in table.chunks_exact(SYMBOL_SIZE as usize).enumerate() {
        let name = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
        if name != 0 && u64::from(name) >= strings.size {
            return Err(format!(
                "symbol {symbol} of section {index} is named at byte {name} of a {}-byte \
                 string table",
                strings.size
            ));
        }
        let home = u16::from_le_bytes([entry[6], entry[7]]);
        if home != 0 && home < SHN_LORESERVE && usize::from(home) >= sections.len() {
            return Err(format!(
                "symbol {symbol} of section {index} is in section {home}, past the {} sections",
                sections.len()
            ));
        }
    }
    Ok(())
}

fn check_relocations(
    fields: &Fields<'_>,
    sections: &Sections<'_>,
    section: &Section,
    index: usize,
    entry: u64,
) -> Result<(), String> {
    let count = entries(section, index, entry, "relocation")?;
    let by = || format!("relocation section {index}");
    let symbols = linked(sections, u64::from(section.link), by)?;
    linked(sections, u64::from(section.info), by)?;
    let symbol_count = match symbols.kind {
        SHT_SYMTAB | SHT_DYNSYM => symbols.size / SYMBOL_SIZE,
        _ => {
            return Err(format!(
                "{} links to section {}, which is not a symbol table",
                by(),
                section.link
            ));
        }
    };
    let table = fields.slice(section.offset, count * entry, by)?;
    for (relocation, bytes) in table.chunks_exact(entry as usize).enumerate() {
        // `r_info`'s upper half: bytes 12 to 15.
        let symbol = u64::from(u32::from_le_bytes([
            bytes[12], bytes[13], bytes[14], bytes[15],
        ]));
        if symbol >= symbol_count {
            return Err(format!(
                "relocation {relocation} of section {index} names symbol {symbol} of a table of \
                 {symbol_count}"
            ));
        }
    }
    Ok(())
}

fn check_segments(fields: &Fields<'_>, first: Option<Section>) -> Result<(), String> {
    let offset = fields.u64(32, "e_phoff")?;
    let entry_size = fields.u16(54, "e_phentsize")?;
    let count = match fields.u16(56, "e_phnum")? {
        PN_XNUM => u64::from(first.map_or(0, |first| first.info)),
        count => u64::from(count),
    };
    if count == 0 {
        return Ok(());
    }
    if u64::from(entry_size) != PROGRAM_HEADER_SIZE {
        return Err(format!(
            "its program headers are {entry_size} bytes, not {PROGRAM_HEADER_SIZE}"
        ));
    }
    fields.slice(offset, count * PROGRAM_HEADER_SIZE, || {
        format!("the program header table ({count} entries at byte {offset})")
    })?;
    for segment in 0..count {
        let at = offset + segment * PROGRAM_HEADER_SIZE;
        let what = || format!("segment {segment}");
        let file_offset = fields.u64(at + 8, what)?;
        let file_size = fields.u64(at + 32, what)?;
        fields.slice(file_offset, file_size, what)?;
    }
    Ok(())
}
