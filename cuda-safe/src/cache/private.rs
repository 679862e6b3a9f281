//! Whether the on-disk cache's directories and files are this user's alone.
//!
//! What the cache returns is loaded and run on the GPU, so it must come from this user: every
//! directory of the cache is owned by the effective user and writable by nobody else (as `ssh`
//! demands of a key), and so is every entry file it reads. On other systems than Unix nothing
//! is checked.
//!
//! Hand-written because no crate makes these checks (`ssh`'s rule for a key, applied to every
//! directory and file the cache reads code from).

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

use super::fs_ops::{create_private_dir, io_error};
use crate::error::{Error, Result};

/// What makes a file or directory someone else's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// Owned by this user id, not the effective user.
    Owner(u32),
    /// Writable by group or others: these are its permission bits.
    Writable(u32),
}

/// The effective user id: the owner of what this process creates.
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why `metadata` is not this user's alone, or `None` when it is.
#[cfg(unix)]
pub(crate) fn problem(metadata: &Metadata) -> Option<Problem> {
    use std::os::unix::fs::MetadataExt;
    let owner = metadata.uid();
    if owner != effective_uid() {
        return Some(Problem::Owner(owner));
    }
    let mode = metadata.mode() & 0o7777;
    (mode & 0o022 != 0).then_some(Problem::Writable(mode))
}

/// Why `metadata` is not this user's alone: never, where ownership is not checked.
#[cfg(not(unix))]
pub(crate) fn problem(_metadata: &Metadata) -> Option<Problem> {
    None
}

/// Whether `metadata` describes a regular file of this user's that nobody else may write.
pub(crate) fn is_private_file(metadata: &Metadata) -> bool {
    metadata.is_file() && problem(metadata).is_none()
}

/// The owner of `metadata`'s file, for messages.
fn owner(metadata: &Metadata) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        format!("uid {}", metadata.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        "another user".to_owned()
    }
}

/// The refusal of `path`, saying what is wrong and how to fix it.
pub(crate) fn refusal(path: &Path, problem: Problem) -> Error {
    let reason = match problem {
        Problem::Owner(owner) => format!(
            "it is owned by uid {owner}, not by this user (uid {}), so its code could be that \
             user's; remove it, or choose another directory",
            current_uid_text()
        ),
        Problem::Writable(mode) => format!(
            "it is writable by group or others (mode {mode:04o}), so anyone could plant code \
             in it; run `chmod go-w {}` if you trust what it holds, else remove it and let the \
             cache create it again (mode 0700)",
            path.display()
        ),
    };
    refuse(path, reason)
}

fn current_uid_text() -> String {
    #[cfg(unix)]
    {
        effective_uid().to_string()
    }
    #[cfg(not(unix))]
    {
        "unknown".to_owned()
    }
}

fn refuse(path: &Path, reason: String) -> Error {
    Error::CacheNotPrivate {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Checks that the cache root `root` is a directory of this user's that nobody else may
/// write. A symbolic link to it is followed if the link itself is this user's (or the
/// superuser's).
pub(crate) fn check_root(root: &Path) -> Result<()> {
    let link = fs::symlink_metadata(root).map_err(|error| io_error(root, error))?;
    if link.file_type().is_symlink()
        && let Some(Problem::Owner(_)) = problem(&link)
        && !owned_by_superuser(&link)
    {
        return Err(refuse(
            root,
            format!(
                "it is a symbolic link owned by {}, who could point it anywhere; replace it by \
                 a directory or a link of your own",
                owner(&link)
            ),
        ));
    }
    let metadata = fs::metadata(root).map_err(|error| io_error(root, error))?;
    if !metadata.is_dir() {
        return Err(refuse(
            root,
            "it is not a directory; remove it, or choose another directory".to_owned(),
        ));
    }
    match problem(&metadata) {
        Some(problem) => Err(refusal(root, problem)),
        None => Ok(()),
    }
}

fn owned_by_superuser(metadata: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        metadata.uid() == 0
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        false
    }
}

/// What [`ensure_dir`] found at a sub-directory's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirState {
    /// A private directory is there (found, created or repaired).
    Ready,
    /// Nothing was there and it could not be created: the parent may not be written.
    Missing,
}

/// Makes `dir` a private directory ([`ensure_dir`]); one that cannot be created is an error
/// here, where something must be written into it.
pub(crate) fn ready_dir(dir: &Path) -> Result<()> {
    match ensure_dir(dir)? {
        DirState::Ready => Ok(()),
        DirState::Missing => Err(io_error(dir, io::ErrorKind::PermissionDenied.into())),
    }
}

/// Makes `path` (whose parent is a private directory) a directory of this user's that nobody
/// else may write: created `0700` when missing; a file, link or other non-directory of this
/// user's is removed (never followed) and replaced; anything else is refused with
/// [`Error::CacheNotPrivate`].
///
/// A missing directory that cannot be created for lack of permission (a read-only cache) is
/// [`DirState::Missing`], not an error.
pub(crate) fn ensure_dir(path: &Path) -> Result<DirState> {
    // Twice at most: once more after replacing an obstacle or losing a creation race.
    for _ in 0..2 {
        match fs::symlink_metadata(path) {
            Ok(metadata) if metadata.is_dir() => {
                return match problem(&metadata) {
                    Some(problem) => Err(refusal(path, problem)),
                    None => Ok(DirState::Ready),
                };
            }
            Ok(metadata) => {
                if problem(&metadata).is_some_and(|problem| matches!(problem, Problem::Owner(_))) {
                    return Err(refuse(
                        path,
                        format!(
                            "a {} owned by {} stands where the cache's directory goes; \
                             remove it",
                            kind_of(&metadata),
                            owner(&metadata)
                        ),
                    ));
                }
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(io_error(path, error)),
                }
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => match create_private_dir(path)
            {
                Ok(()) => return Ok(DirState::Ready),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) if cannot_write(&error) => return Ok(DirState::Missing),
                Err(error) => return Err(io_error(path, error)),
            },
            Err(error) => return Err(io_error(path, error)),
        }
    }
    Err(io_error(
        path,
        io::Error::other("another process keeps replacing it"),
    ))
}

/// Whether `error` says the file system or directory may not be written.
pub(crate) fn cannot_write(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

/// What kind of thing `metadata` describes, for messages.
fn kind_of(metadata: &Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_file() {
        "file"
    } else {
        "special file"
    }
}
