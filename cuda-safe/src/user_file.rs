//! Reading a file the caller names (a module image, a link input): a regular file only,
//! opened without blocking, so a FIFO, a device or a directory is a clear error instead of a
//! hang or an endless read, and of at most a cap the caller may raise, refused from its size
//! (`fstat`) before anything is read or allocated. The file is read once, into the buffer the
//! caller keeps (no second copy), and an empty one is refused before it reaches a library.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The cap on a caller-named file that the caller did not choose: 1 GiB, far above any kernel
/// image (a CUBIN of thousands of kernels is tens of MB), far below what a sparse file can
/// claim.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 30;

/// The whole of the regular file at `path` (symbolic links followed: the caller chose it), of
/// at most `max_bytes` and not empty, read once into a buffer sized from its length with one
/// spare byte of capacity (PTX text's NUL terminator goes there, without a copy).
///
/// At most `len + 1` bytes are read (`len` from `fstat`, so at most `max_bytes + 1`): the
/// last one only to see that the file did not grow meanwhile.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the path and the reason: the system's error (a size the
/// process cannot allocate is one: the buffer is reserved fallibly), "not a regular file", a
/// size over `max_bytes` (from `fstat`, before reading), an empty file, or a file whose size
/// changed while it was read (it grew or shrank, or its size is not known in advance, as in
/// `/proc` and `/sys`).
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let failed = |reason: String| {
        Error::invalid_argument(format!("cannot read {}: {reason}", path.display()))
    };
    let io_failed = |error: io::Error| failed(error.to_string());
    let mut file = open_nonblocking(path).map_err(io_failed)?;
    let metadata = file.metadata().map_err(io_failed)?;
    if !metadata.is_file() {
        return Err(failed(format!(
            "not a regular file ({})",
            describe(&metadata.file_type())
        )));
    }
    let len = metadata.len();
    if len > max_bytes {
        return Err(failed(format!(
            "it is {len} bytes, over the cap of {max_bytes} (a larger file needs a larger cap: \
             the `_with_max_bytes` form of the call)"
        )));
    }
    let mut bytes = Vec::new();
    let reserved = usize::try_from(len)
        .ok()
        .and_then(|len| len.checked_add(1))
        .filter(|&capacity| bytes.try_reserve_exact(capacity).is_ok());
    if reserved.is_none() {
        return Err(failed(format!("{len} bytes cannot be held in memory now")));
    }
    // Within the capacity reserved: `read_to_end` never grows the buffer here.
    (&mut file)
        .take(len)
        .read_to_end(&mut bytes)
        .map_err(io_failed)?;
    let read = bytes.len() as u64;
    let mut probe = [0_u8; 1];
    let more = read_some(&mut file, &mut probe).map_err(io_failed)?;
    if read < len || more > 0 {
        let now = if more > 0 { "more" } else { "fewer" };
        return Err(failed(format!(
            "its size changed while it was read: it was {len} bytes when opened and held {now} \
             (a file still being written, or one whose size is not known in advance, as in \
             /proc and /sys)"
        )));
    }
    if bytes.is_empty() {
        return Err(failed("it is empty".to_owned()));
    }
    Ok(bytes)
}

/// One read into `buffer`, retried when interrupted: the bytes read (0 at the end).
fn read_some(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buffer) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Opens `path` for reading; on Unix with `O_NONBLOCK`, so a FIFO opens at once instead of
/// waiting for a writer (regular files read as usual).
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// What a file that is not a regular one is, for the error.
fn describe(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &Path) -> String {
        read_regular(path, DEFAULT_MAX_FILE_BYTES)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.cubin");
        std::fs::write(&path, b"\x7fELF and more").unwrap();
        let bytes = read_regular(&path, 13).unwrap();
        assert_eq!(bytes, b"\x7fELF and more");
        // Sized from the file, with room for a NUL terminator: pushing one moves nothing.
        assert!(bytes.capacity() > bytes.len(), "{}", bytes.capacity());
        let error = read_regular(&path, 12).unwrap_err().to_string();
        assert!(error.contains("13 bytes, over the cap of 12"), "{error}");
    }

    /// An empty file is refused, naming it, whatever the cap: no library is handed nothing.
    #[test]
    fn an_empty_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.ptx");
        std::fs::write(&empty, b"").unwrap();
        for cap in [0, DEFAULT_MAX_FILE_BYTES] {
            let error = read_regular(&empty, cap).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
            assert_eq!(
                error.to_string(),
                format!(
                    "invalid argument: cannot read {}: it is empty",
                    empty.display()
                )
            );
        }
    }

    /// A file that holds more than its size said (here `/proc`'s, which say 0 bytes) is
    /// refused after one byte past that size, not read on to the cap.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_holding_more_than_its_size_is_refused() {
        let error = reason(Path::new("/proc/self/status"));
        assert!(
            error.contains(
                "its size changed while it was read: it was 0 bytes when opened and held more"
            ),
            "{error}"
        );
    }

    /// A sparse file of 4 GiB (it used to be read whole: 47 s and 8 GB of memory) is refused
    /// from its size, at once, without reading or allocating.
    #[test]
    fn a_sparse_file_over_the_cap_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.cubin");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(4 << 30).unwrap();
        drop(file);
        let started = std::time::Instant::now();
        let error = reason(&path);
        assert!(
            started.elapsed() < std::time::Duration::from_millis(500),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            error.contains("4294967296 bytes, over the cap of 1073741824"),
            "{error}"
        );
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_by_kind_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        assert!(reason(dir.path()).contains("a directory"));
        assert!(reason(Path::new("/dev/zero")).contains("a device"));
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = reason(&fifo);
        assert!(
            error.contains("a FIFO") && error.contains("fifo"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_file_names_the_path_and_the_reason() {
        let error = reason(Path::new("/no/such/dir/kernel.ptx"));
        assert!(error.contains("/no/such/dir/kernel.ptx"), "{error}");
        assert!(error.contains("No such file"), "{error}");
    }
}
