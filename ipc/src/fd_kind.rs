//! What a received file descriptor must be: a shareable handle of GPU memory (a pool, a
//! virtual-memory chunk), never a file of a file system, a socket, a pipe or a directory.
//!
//! The NVIDIA driver exports memory (`cuMemPoolExportToShareableHandle`,
//! `cuMemExportToShareableHandle` with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`) onto a new
//! descriptor of its control device, `/dev/nvidiactl`: a character device. Anonymous memory
//! (a `memfd`, which `fstat` calls a regular file, as the test stub exports), a dma-buf and
//! other anonymous inodes are objects with no path either, and are let through for the driver
//! to judge. What is refused is what can never be such a handle.

use crate::IpcError;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;

use super::wire::Kind;
use cuda_safe::Result;

/// Refuses `fd`, which came beside a message of `kind`, unless it can be a shareable handle of
/// GPU memory.
///
/// # Errors
///
/// [`IpcError::Protocol`] naming what the descriptor is; [`IpcError::Io`] when `fstat` fails.
pub(super) fn check_memory_fd(fd: BorrowedFd<'_>, kind: Kind) -> Result<()> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open (borrowed) and `stat` is a valid place for the answer.
    if unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) } != 0 {
        return Err(IpcError::Io {
            what: "checking a received file descriptor",
            source: Arc::new(std::io::Error::last_os_error()),
        }
        .into());
    }
    // SAFETY: fstat succeeded, so it filled `stat`.
    let mode = unsafe { stat.assume_init() }.st_mode & libc::S_IFMT;
    let refused = match mode {
        libc::S_IFREG if !has_no_path(fd) => "a regular file",
        libc::S_IFSOCK => "a socket",
        libc::S_IFIFO => "a pipe",
        libc::S_IFDIR => "a directory",
        libc::S_IFBLK => "a block device",
        libc::S_IFLNK => "a symbolic link",
        // A character device (the driver's export), anonymous memory, an anonymous inode.
        _ => return Ok(()),
    };
    Err(IpcError::Protocol {
        detail: format!(
            "{} came with {refused} as its file descriptor, which is no shareable handle of GPU \
             memory",
            kind.what()
        )
        .into(),
    }
    .into())
}

/// Whether the file behind `fd` has no path: a `memfd`, a dma-buf or an anonymous inode, as
/// `/proc/self/fd` names them (`/memfd:name (deleted)`, `/dmabuf:name`, `anon_inode:name`).
/// Where `/proc` cannot say, a regular file is taken for one of a file system.
fn has_no_path(fd: BorrowedFd<'_>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(link) = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) else {
        return false;
    };
    let name = link.as_os_str().as_bytes();
    [&b"/memfd:"[..], b"/dmabuf:", b"anon_inode:"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}
