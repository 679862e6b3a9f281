//! Reading a file the caller names (a module image, a link input): a regular file only,
//! opened without blocking, so a FIFO, a device or a directory is a clear error instead of a
//! hang or an endless read, and of at most a cap the caller may raise, refused from its size
//! (`fstat`) before anything is read or allocated.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The cap on a caller-named file that the caller did not choose: 1 GiB, far above any kernel
/// image (a CUBIN of thousands of kernels is tens of MB), far below what a sparse file can
/// claim.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 30;

/// The whole of the regular file at `path` (symbolic links followed: the caller chose it), of
/// at most `max_bytes`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the path and the reason: the system's error (a size the
/// process cannot allocate is one: the buffer is reserved fallibly), "not a regular file", or
/// a size over `max_bytes` (from `fstat`, before reading; a file that grows past it while it
/// is read is refused too).
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let failed = |reason: String| {
        Error::invalid_argument(format!("cannot read {}: {reason}", path.display()))
    };
    let io_failed = |error: io::Error| failed(error.to_string());
    let file = open_nonblocking(path).map_err(io_failed)?;
    let metadata = file.metadata().map_err(io_failed)?;
    if !metadata.is_file() {
        return Err(failed(format!(
            "not a regular file ({})",
            describe(&metadata.file_type())
        )));
    }
    let over = |len: u64| {
        failed(format!(
            "it is {len} bytes, over the cap of {max_bytes} (a larger file needs a larger cap: \
             the `_with_max_bytes` form of the call)"
        ))
    };
    let len = metadata.len();
    if len > max_bytes {
        return Err(over(len));
    }
    let mut bytes = Vec::new();
    let reserved = usize::try_from(len)
        .ok()
        .filter(|&len| bytes.try_reserve_exact(len).is_ok());
    if reserved.is_none() {
        return Err(failed(format!("{len} bytes cannot be held in memory now")));
    }
    // One byte past the cap shows a file that grew meanwhile.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_failed)?;
    match u64::try_from(bytes.len()) {
        Ok(read) if read <= max_bytes => Ok(bytes),
        Ok(read) => Err(over(read)),
        Err(_) => Err(over(u64::MAX)),
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
        assert_eq!(read_regular(&path, 13).unwrap(), b"\x7fELF and more");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(read_regular(&empty, 0).unwrap().is_empty());
        let error = read_regular(&path, 12).unwrap_err().to_string();
        assert!(error.contains("13 bytes, over the cap of 12"), "{error}");
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
