//! The cache's own files in `tmp/`: entries being written (renamed into place when complete)
//! and graves of removed entries.
//!
//! Every such name is `cusafe-<creation time in ns>-<pid>-<sequence>` with the suffix `.tmp`
//! or `.evicted`, so a sweep recognises the cache's files, and their age, by name alone and
//! touches nothing else in the directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::fs_ops::{from_nanos, nanos_now, no_follow, recency_stamp, remove_any};

/// The start of every name the cache gives a file in `tmp/`.
const PREFIX: &str = "cusafe-";

/// What a file in `tmp/` is for, which its suffix tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// An entry being written (`.tmp`).
    Write,
    /// An entry moved out of the way to be deleted (`.evicted`).
    Grave,
}

impl Purpose {
    fn suffix(self) -> &'static str {
        match self {
            Self::Write => ".tmp",
            Self::Grave => ".evicted",
        }
    }
}

/// A name no other process or thread uses, carrying its creation time.
pub(crate) fn unique_name(purpose: Purpose) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!(
        "{PREFIX}{}-{}-{sequence}{}",
        nanos_now(),
        std::process::id(),
        purpose.suffix()
    )
}

/// When a file named by [`unique_name`] was created; `None` for any other name.
fn created_from_name(name: &str) -> Option<SystemTime> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = [Purpose::Write, Purpose::Grave]
        .into_iter()
        .find_map(|purpose| rest.strip_suffix(purpose.suffix()))?;
    let mut fields = rest.split('-');
    let nanos = fields.next()?.parse().ok()?;
    let all_digits =
        fields.all(|field| !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit()));
    all_digits.then(|| from_nanos(nanos))
}

/// Writes `bytes` to a new temp file in `dir` (created `0600`, never through a link), stamps
/// its modification time and flushes it to disk. On failure the file is removed.
pub(crate) fn write_temp(dir: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let (path, mut file) = create(dir)?;
    let written = fill(&mut file, bytes);
    drop(file);
    match written {
        Ok(()) => Ok(path),
        Err(error) => {
            // Best effort: a leftover is swept once it is stale.
            let _ = fs::remove_file(&path);
            Err(error)
        }
    }
}

fn create(dir: &Path) -> io::Result<(PathBuf, File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    no_follow(&mut options);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    loop {
        let path = dir.join(unique_name(Purpose::Write));
        match options.open(&path) {
            // Created by this call (`O_EXCL`), so a regular file; checked all the same.
            Ok(file) if file.metadata()?.is_file() => return Ok((path, file)),
            Ok(_) => return Err(io::Error::other("the new temp file is not a regular file")),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
}

fn fill(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    #[cfg(test)]
    faults::check()?;
    file.write_all(bytes)?;
    file.set_modified(recency_stamp())?;
    file.sync_all()
}

/// Whether `error` says the disk (or the user's quota) is full.
pub(crate) fn is_out_of_space(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Removes the cache's files in `dir` that are stale: created, and last modified, more than
/// `stale_age` ago. Returns the bytes of the cache's temp files left (a live writer's).
///
/// Only names made by [`unique_name`] are considered, and links are removed, never followed.
/// A file that cannot be removed is counted as left; a missing `dir` is empty.
pub(crate) fn sweep(dir: &Path, stale_age: Duration) -> io::Result<u64> {
    let cutoff = SystemTime::now().checked_sub(stale_age);
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let mut left = 0u64;
    for item in listing {
        let item = item?;
        let Some(created) = item.file_name().to_str().and_then(created_from_name) else {
            continue;
        };
        let Ok(metadata) = item.metadata() else {
            continue; // gone meanwhile
        };
        let modified = metadata.modified().unwrap_or(created);
        let stale = cutoff.is_some_and(|cutoff| created < cutoff && modified < cutoff);
        if stale && remove_any(&item.path()).is_ok() {
            continue;
        }
        if metadata.is_file() {
            left = left.saturating_add(metadata.len());
        }
    }
    Ok(left)
}

/// The bytes of the cache's temp files in `dir`, without removing any.
pub(crate) fn bytes_in(dir: &Path) -> io::Result<u64> {
    sweep(dir, Duration::MAX)
}

/// Failures injected into [`write_temp`] by tests, per thread.
#[cfg(test)]
pub(crate) mod faults {
    use std::cell::Cell;
    use std::io;

    thread_local! {
        static FULL_DISK_WRITES: Cell<u32> = const { Cell::new(0) };
    }

    /// Makes this thread's next `count` temp-file writes fail as on a full disk.
    pub(crate) fn fill_disk_for(count: u32) {
        FULL_DISK_WRITES.with(|writes| writes.set(count));
    }

    /// A full-disk error if one is due.
    pub(super) fn check() -> io::Result<()> {
        FULL_DISK_WRITES.with(|writes| match writes.get() {
            0 => Ok(()),
            due => {
                writes.set(due - 1);
                Err(io::ErrorKind::StorageFull.into())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_creation_time_and_only_the_caches_names_parse() {
        let before = SystemTime::now() - Duration::from_secs(1);
        let name = unique_name(Purpose::Write);
        assert_ne!(name, unique_name(Purpose::Write));
        assert!(
            name.starts_with("cusafe-") && name.ends_with(".tmp"),
            "{name}"
        );
        let created = created_from_name(&name).unwrap();
        assert!(created > before && created <= SystemTime::now(), "{name}");
        assert!(created_from_name(&unique_name(Purpose::Grave)).is_some());
        for other in [
            "notes.txt",
            "1000-1-1.tmp",
            "cusafe-1000-1-1.txt",
            "cusafe-1000-1-1",
            "cusafe-x-1-1.tmp",
            "cusafe-1000--1.tmp",
            "cusafe-1000-1-1.tmp.bak",
        ] {
            assert_eq!(created_from_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_sweep_removes_only_stale_files_of_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
        let old = dir.path().join("cusafe-1000-1-1.tmp");
        let old_text = b"left by a writer killed in 1970";
        fs::write(&old, old_text).unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let grave = dir.path().join("cusafe-1000-1-2.evicted");
        fs::create_dir(&grave).unwrap();
        fs::write(grave.join("inside"), b"x").unwrap();
        File::open(&grave).unwrap().set_modified(long_ago).unwrap();
        let rewritten = dir.path().join("cusafe-1000-1-3.tmp");
        let rewritten_text = b"named long ago, written just now";
        fs::write(&rewritten, rewritten_text).unwrap();
        let live = write_temp(dir.path(), &[7; 100]).unwrap();
        let foreign = dir.path().join("1000-1-3.tmp");
        fs::write(&foreign, b"not the cache's").unwrap();

        let (old_len, rewritten_len) = (old_text.len() as u64, rewritten_text.len() as u64);
        assert_eq!(bytes_in(dir.path()).unwrap(), 100 + old_len + rewritten_len);
        assert_eq!(
            sweep(dir.path(), Duration::from_secs(60)).unwrap(),
            100 + rewritten_len
        );
        assert!(!old.exists() && !grave.exists());
        assert!(live.exists() && rewritten.exists() && foreign.exists());
        assert_eq!(fs::read(&live).unwrap(), [7; 100]);
        assert_eq!(
            sweep(&dir.path().join("missing"), Duration::ZERO).unwrap(),
            0
        );
    }

    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        faults::fill_disk_for(1);
        let error = write_temp(dir.path(), b"entry").unwrap_err();
        assert!(is_out_of_space(&error), "{error}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(write_temp(dir.path(), b"entry").is_ok());
    }
}
