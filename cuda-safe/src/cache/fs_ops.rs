//! File-system steps the on-disk cache is built from: private directories, opening without
//! following links, a per-process monotonic clock for recency, file identity, and removal that
//! never deletes a file another process has just put in place.
//!
//! Hand-written where the cache's rules need what no crate offers: reads that never follow a
//! link or block on a FIFO (`O_NOFOLLOW | O_NONBLOCK`, checked with `fstat`), removal only of
//! the very file a scan saw, and recency stamps that never repeat within a process.

use std::fs::{self, DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::temp::{self, Purpose};
use crate::error::Error;

/// An [`Error::CacheIo`] for `path`.
pub(crate) fn io_error(path: &Path, source: io::Error) -> Error {
    Error::CacheIo {
        path: path.to_path_buf(),
        source: Arc::new(source),
    }
}

/// Creates `path` and its missing parents, each `0700` on Unix.
pub(crate) fn create_private_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// Creates the directory `path` (its parent must exist), `0700` on Unix.
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// `options` made to open without following a symbolic link in the last component and without
/// blocking (a FIFO opens at once instead of waiting for a writer); callers check with `fstat`
/// (the open file's metadata) that they got a regular file.
pub(crate) fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    options
}

/// Opens `path` for reading with [`no_follow`]: a symbolic link there fails (`ELOOP`).
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    no_follow(OpenOptions::new().read(true)).open(path)
}

fn nanos_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// The time `nanos` nanoseconds after the epoch.
pub(crate) fn from_nanos(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

/// Nanoseconds since the epoch now, for names.
pub(crate) fn nanos_now() -> u64 {
    nanos_since_epoch(SystemTime::now())
}

/// The current time, strictly later than every earlier call in this process, for recency
/// stamps: two uses in a row never tie, even where the clock is coarse.
pub(crate) fn recency_stamp() -> SystemTime {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = nanos_since_epoch(SystemTime::now());
    let next = |last: u64| now.max(last.saturating_add(1));
    let last = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(next(last))
        })
        .unwrap_or_else(|last| last);
    UNIX_EPOCH + Duration::from_nanos(next(last))
}

/// What identifies one file at one moment: a replaced file (new inode) or a touched one (new
/// modification time) compares unequal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    #[cfg(unix)]
    device: u64,
    #[cfg(unix)]
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileId {
    /// The identity of the file `metadata` describes.
    pub(crate) fn of(metadata: &Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Self {
            #[cfg(unix)]
            device: metadata.dev(),
            #[cfg(unix)]
            inode: metadata.ino(),
            len: metadata.len(),
            modified: metadata.modified().ok(),
        }
    }
}

/// What [`remove_if_unchanged`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// The file was the one expected and is gone.
    Removed,
    /// Nothing was there any more.
    AlreadyGone,
    /// Another file (or the same one, touched) had taken its place and was left there.
    Kept,
}

/// Removes the file or directory at `path` if it is still the one `expected` identifies.
///
/// The entry is first renamed into `graveyard` (atomic: from then on no other process can
/// reach it) and identified there. If it is not the one expected, another process replaced or
/// touched it after the caller looked, so it is hard-linked back, unless an even newer entry
/// has taken the path meanwhile; where the file system refuses hard links it is dropped, which
/// costs a later miss and nothing else.
pub(crate) fn remove_if_unchanged(
    path: &Path,
    expected: FileId,
    graveyard: &Path,
) -> io::Result<Removal> {
    let grave = graveyard.join(temp::unique_name(Purpose::Grave));
    match fs::rename(path, &grave) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_err() {
                return Ok(Removal::AlreadyGone);
            }
            create_private_dir_all(graveyard)?;
            match fs::rename(path, &grave) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    return Ok(Removal::AlreadyGone);
                }
                Err(error) => return Err(error),
            }
        }
        Err(error) => return Err(error),
    }
    let metadata = fs::symlink_metadata(&grave)?;
    let removal = if FileId::of(&metadata) == expected {
        Removal::Removed
    } else {
        if metadata.is_file() {
            match fs::hard_link(&grave, path) {
                Err(error) if error.kind() != io::ErrorKind::AlreadyExists => {
                    remove_any(&grave)?;
                    return Ok(Removal::Removed);
                }
                _ => {}
            }
        }
        Removal::Kept
    };
    remove_any(&grave)?;
    Ok(removal)
}

/// Removes a file or a directory tree; nothing there is not an error.
pub(crate) fn remove_any(path: &Path) -> io::Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(error) => Err(error),
    };
    match result {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_stamps_strictly_increase() {
        let stamps: Vec<_> = (0..1000).map(|_| recency_stamp()).collect();
        assert!(stamps.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn a_touched_or_replaced_file_is_kept_and_an_unchanged_one_removed() {
        let dir = tempfile::tempdir().unwrap();
        let graveyard = dir.path().join("tmp");
        let path = dir.path().join("entry");
        fs::write(&path, b"old").unwrap();
        let old = FileId::of(&fs::metadata(&path).unwrap());

        let newer = dir.path().join("newer");
        fs::write(&newer, b"new!").unwrap();
        fs::rename(&newer, &path).unwrap();
        assert_eq!(
            remove_if_unchanged(&path, old, &graveyard).unwrap(),
            Removal::Kept
        );
        assert_eq!(fs::read(&path).unwrap(), b"new!");

        let current = FileId::of(&fs::metadata(&path).unwrap());
        File::open(&path)
            .unwrap()
            .set_modified(recency_stamp())
            .unwrap();
        assert_eq!(
            remove_if_unchanged(&path, current, &graveyard).unwrap(),
            Removal::Kept
        );
        assert_eq!(fs::read(&path).unwrap(), b"new!");

        let touched = FileId::of(&fs::metadata(&path).unwrap());
        assert_eq!(
            remove_if_unchanged(&path, touched, &graveyard).unwrap(),
            Removal::Removed
        );
        assert!(!path.exists());
        assert_eq!(
            remove_if_unchanged(&path, touched, &graveyard).unwrap(),
            Removal::AlreadyGone
        );
        assert_eq!(fs::read_dir(&graveyard).unwrap().count(), 0);
    }
}
