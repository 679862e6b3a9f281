//! The check of a candidate's ELF headers against its size, before `dlopen`.
//!
//! The dynamic loader maps each loadable segment the program headers name, from the file's
//! offsets, and then reads what it mapped: a segment that reaches past the end of a truncated
//! file (the first 4 KiB or 64 KiB of a real `.so`) is mapped all the same, and the first read
//! of a page beyond the end kills the process with `SIGBUS` inside `dlopen`. So the headers are
//! read first (with std alone: the ELF header and the program header table, a few hundred
//! bytes) and a file they do not fit is refused, with the reason, instead of opened.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// `ELFCLASS64` or `ELFCLASS32`: the class of this process's own objects.
const CLASS: u8 = if cfg!(target_pointer_width = "64") {
    2
} else {
    1
};

/// `ELFDATA2LSB` or `ELFDATA2MSB`: the byte order of this process's own objects.
const DATA: u8 = if cfg!(target_endian = "little") { 1 } else { 2 };

/// `PT_LOAD`: a segment the dynamic loader maps from the file.
const PT_LOAD: u64 = 1;

/// Where the fields the check reads lie, for one ELF class (the System V ABI's layouts).
struct Layout {
    /// The size of the ELF header.
    header: usize,
    /// `e_phoff`: offset and width.
    phoff: (usize, usize),
    /// `e_phentsize`'s offset (2 bytes).
    phentsize: usize,
    /// `e_phnum`'s offset (2 bytes).
    phnum: usize,
    /// The size of one program header.
    entry: usize,
    /// `p_offset` in a program header: offset and width.
    p_offset: (usize, usize),
    /// `p_filesz` in a program header: offset and width.
    p_filesz: (usize, usize),
}

/// `Elf64_Ehdr` and `Elf64_Phdr`.
const LAYOUT_64: Layout = Layout {
    header: 64,
    phoff: (32, 8),
    phentsize: 54,
    phnum: 56,
    entry: 56,
    p_offset: (8, 8),
    p_filesz: (32, 8),
};

/// `Elf32_Ehdr` and `Elf32_Phdr`.
const LAYOUT_32: Layout = Layout {
    header: 52,
    phoff: (28, 4),
    phentsize: 42,
    phnum: 44,
    entry: 32,
    p_offset: (4, 4),
    p_filesz: (16, 4),
};

/// Why `candidate` is not handed to the dynamic loader: its headers are not those of an ELF
/// object of this machine's class and byte order, or its program header table or one of its
/// loadable segments (`p_offset + p_filesz`) reaches past the end of the file. `None` for a
/// bare file name (the loader searches for it), a file that cannot be opened (the loader's own
/// message says why) and a file whose headers fit it.
pub(crate) fn refusal(candidate: &Path) -> Option<String> {
    if !candidate.is_absolute() {
        return None;
    }
    let file = open_nonblocking(candidate).ok()?;
    let size = file.metadata().ok().filter(|m| m.is_file())?.len();
    match check(file, size) {
        Ok(None) => None,
        Ok(Some(problem)) => Some(format!("{problem}: not opened")),
        Err(error) => Some(format!(
            "its ELF headers could not be read ({error}): not opened"
        )),
    }
}

/// What is wrong with the headers of `file`, which is `size` bytes long, if anything.
fn check(mut file: File, size: u64) -> io::Result<Option<String>> {
    let mut header = [0_u8; 64];
    let read = read_up_to(&mut file, &mut header)?;
    let header = &header[..read];
    if header.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Ok(Some(
            "not an ELF file (it does not begin with the ELF magic number)".to_owned(),
        ));
    }
    let layout = if CLASS == 2 { &LAYOUT_64 } else { &LAYOUT_32 };
    if read < layout.header {
        return Ok(Some(format!(
            "a truncated ELF file ({size} bytes, shorter than its {}-byte header)",
            layout.header
        )));
    }
    let [class, data, version] = [header[4], header[5], header[6]];
    if class != CLASS {
        return Ok(Some(format!(
            "an ELF file of class {class} ({}), not this process's {}",
            class_name(class),
            class_name(CLASS)
        )));
    }
    if data != DATA {
        return Ok(Some(format!(
            "an ELF file of byte order {data} ({}), not this process's {}",
            data_name(data),
            data_name(DATA)
        )));
    }
    if version != 1 {
        return Ok(Some(format!("an ELF file of unknown version {version}")));
    }
    let field = |at: (usize, usize)| number(header, at);
    let phoff = field(layout.phoff);
    let entry_size = field((layout.phentsize, 2));
    let count = field((layout.phnum, 2));
    if entry_size != layout.entry as u64 {
        return Ok(Some(format!(
            "its program headers are {entry_size} bytes each, not {}",
            layout.entry
        )));
    }
    let table_end = phoff.checked_add(count * entry_size);
    if table_end.is_none_or(|end| end > size) {
        return Ok(Some(format!(
            "a truncated ELF file ({size} bytes; its {count} program headers end at byte {})",
            Beyond(table_end)
        )));
    }
    // Within the file, so of a size the file holds: at most 65,535 entries of 56 bytes.
    let mut table = vec![0_u8; (count * entry_size) as usize];
    file.seek(SeekFrom::Start(phoff))?;
    file.read_exact(&mut table)?;
    for (index, entry) in table.chunks_exact(layout.entry).enumerate() {
        if number(entry, (0, 4)) != PT_LOAD {
            continue;
        }
        let end = number(entry, layout.p_offset).checked_add(number(entry, layout.p_filesz));
        if end.is_none_or(|end| end > size) {
            return Ok(Some(format!(
                "a truncated ELF file ({size} bytes; its loadable segment (program header \
                 {index}) ends at byte {}), which the dynamic loader would map and fault \
                 (SIGBUS) reading",
                Beyond(end)
            )));
        }
    }
    Ok(None)
}

/// The end of a range, or that it overflows.
struct Beyond(Option<u64>);

impl std::fmt::Display for Beyond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(end) => write!(f, "{end}"),
            None => f.write_str("past 2^64"),
        }
    }
}

/// The unsigned number of `width` bytes (1 to 8) at `offset` of `bytes`, in this machine's
/// byte order (the check has made sure that it is the file's); 0 past the end (the callers
/// read within what they checked).
fn number(bytes: &[u8], (offset, width): (usize, usize)) -> u64 {
    let Some(field) = offset
        .checked_add(width)
        .and_then(|end| bytes.get(offset..end))
    else {
        return 0;
    };
    let mut wide = [0_u8; 8];
    if cfg!(target_endian = "little") {
        wide[..field.len()].copy_from_slice(field);
    } else {
        wide[8 - field.len()..].copy_from_slice(field);
    }
    u64::from_ne_bytes(wide)
}

/// Reads into `buffer` until it is full or the file ends: the bytes read.
fn read_up_to(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// `ELFCLASS64`, `ELFCLASS32`, or that the class is unknown.
fn class_name(class: u8) -> &'static str {
    match class {
        1 => "32-bit",
        2 => "64-bit",
        _ => "unknown",
    }
}

/// `ELFDATA2LSB`, `ELFDATA2MSB`, or that the byte order is unknown.
fn data_name(data: u8) -> &'static str {
    match data {
        1 => "little-endian",
        2 => "big-endian",
        _ => "unknown",
    }
}

/// Opens `path` for reading; on Unix with `O_NONBLOCK`, so a FIFO put in the file's place after
/// it was found regular opens at once instead of waiting for a writer.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::refusal;
    use crate::test_support::{
        OPEN_WORKER, OVERRIDE_VAR, PROBE_FILE_NAME, ROOT_VAR, loaded_library, reported, run_worker,
        temp_dir,
    };
    use std::path::Path;

    /// The first `size` bytes of this process's libc (`None`, with the reason printed, where
    /// there is none to copy), written into `dir` as `name`.
    fn truncated_libc(dir: &Path, name: &str, size: usize) -> Option<std::path::PathBuf> {
        let Some(libc) = loaded_library("libc.so") else {
            println!("skipped: no libc in this process's map");
            return None;
        };
        let whole = std::fs::read(&libc).expect("libc reads");
        assert!(
            whole.len() > size,
            "{} is {} bytes",
            libc.display(),
            whole.len()
        );
        let path = dir.join(name);
        std::fs::write(&path, &whole[..size]).expect("the copy");
        Some(path)
    }

    /// The first 4 KiB and 64 KiB of a real library, named by the override variable, killed
    /// the process with SIGBUS inside `dlopen` (run in a child: the test binary survives even
    /// then, and says so). Now the load fails, naming the copy and why.
    #[test]
    fn a_truncated_library_named_by_an_override_is_refused_and_the_process_lives() {
        let dir = temp_dir("truncated-override", 0o700);
        for size in [4096, 65536] {
            let Some(copy) = truncated_libc(&dir, &format!("libc-{size}.so.6"), size) else {
                return;
            };
            let output = run_worker(OPEN_WORKER, &[(OVERRIDE_VAR, &copy)], &[ROOT_VAR]);
            let tried = reported(&output, "tried: ");
            assert_eq!(tried.len(), 1, "{tried:?}");
            let expected = format!("{} | a truncated ELF file ({size} bytes;", copy.display());
            assert!(tried[0].starts_with(&expected), "{tried:?}");
            assert!(
                tried[0].ends_with("SIGBUS) reading: not opened"),
                "{tried:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A truncated copy found under a toolkit root is passed over with the reason, and the
    /// search goes on to the next candidate.
    #[test]
    fn a_truncated_library_in_a_search_root_is_passed_over() {
        let dir = temp_dir("truncated-root", 0o700);
        let lib64 = dir.join("lib64");
        std::fs::create_dir(&lib64).expect("lib64");
        let Some(copy) = truncated_libc(&lib64, PROBE_FILE_NAME, 65536) else {
            return;
        };
        let output = run_worker(OPEN_WORKER, &[(ROOT_VAR, &dir)], &[OVERRIDE_VAR]);
        let tried = reported(&output, "tried: ");
        assert_eq!(tried.len(), 3, "{tried:?}");
        let expected = format!("{} | a truncated ELF file (65536 bytes;", copy.display());
        assert!(tried[1].starts_with(&expected), "{tried:?}");
        assert!(tried[2].starts_with("/usr/local/cuda/lib64/"), "{tried:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Whole libraries pass: this process's libc and libm, and its own executable (an ELF of
    /// the same class and byte order).
    #[test]
    fn whole_libraries_pass() {
        for prefix in ["libc.so", "libm.so"] {
            if let Some(library) = loaded_library(prefix) {
                assert_eq!(refusal(&library), None, "{}", library.display());
            }
        }
        let exe = std::env::current_exe().expect("the test binary");
        assert_eq!(refusal(&exe), None);
        // Bare names and missing files are the dynamic loader's to report.
        assert_eq!(refusal(Path::new("libc.so.6")), None);
        assert_eq!(refusal(Path::new("/nonexistent/libc.so.6")), None);
    }

    /// Headers cut short or of another machine are refused by what is wrong with them.
    #[test]
    #[cfg(all(
        target_os = "linux",
        target_pointer_width = "64",
        target_endian = "little"
    ))]
    fn bad_headers_are_refused_by_what_is_wrong() {
        let dir = temp_dir("elf-headers", 0o700);
        let Some(copy) = truncated_libc(&dir, "header.so", 4096) else {
            return;
        };
        let header = std::fs::read(&copy).expect("the copy");
        let case = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).expect("write");
            refusal(&path).unwrap_or_default()
        };
        assert_eq!(
            case("empty.so", b""),
            "not an ELF file (it does not begin with the ELF magic number): not opened"
        );
        assert!(case("script.so", b"/* GNU ld script */").starts_with("not an ELF file"));
        assert_eq!(
            case("short.so", &header[..20]),
            "a truncated ELF file (20 bytes, shorter than its 64-byte header): not opened"
        );
        let mut other = header.clone();
        other[4] = 1;
        assert_eq!(
            case("class.so", &other),
            "an ELF file of class 1 (32-bit), not this process's 64-bit: not opened"
        );
        let mut other = header.clone();
        other[5] = 2;
        assert!(case("order.so", &other).contains("byte order 2 (big-endian)"));
        let mut other = header.clone();
        other[54] = 55;
        assert!(case("entry.so", &other).contains("program headers are 55 bytes each"));
        // The table itself cut off: libc's program headers start at byte 64.
        let count = u16::from_ne_bytes([header[56], header[57]]);
        assert_eq!(
            case("table.so", &header[..100]),
            format!(
                "a truncated ELF file (100 bytes; its {count} program headers end at byte {}): \
                 not opened",
                64 + 56 * u64::from(count)
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
