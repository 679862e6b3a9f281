//! Reading a file the caller names (a module image, a link input): a regular file only,
//! opened without blocking, so a FIFO, a device or a directory is a clear error instead of a
//! hang or an endless read.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The whole of the regular file at `path` (symbolic links followed: the caller chose it).
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the path and the reason: the system's error (a size the
/// process cannot allocate is one: `read_to_end` reserves fallibly) or "not a regular file".
pub(crate) fn read_regular(path: &Path) -> Result<Vec<u8>> {
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
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io_failed)?;
    Ok(bytes)
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
        read_regular(path).unwrap_err().to_string()
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.cubin");
        std::fs::write(&path, b"\x7fELF and more").unwrap();
        assert_eq!(read_regular(&path).unwrap(), b"\x7fELF and more");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(read_regular(&empty).unwrap().is_empty());
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
