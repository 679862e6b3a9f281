//! The cache's own files in `tmp/`: entries being written (renamed into place when complete)
//! and graves of removed entries.
//!
//! Every such name is `cusafe-<creation time in ns>-<pid>-<unique part>` with the suffix `.tmp`
//! or `.evicted`, so a sweep recognises the cache's files, and their age, by name alone and
//! touches nothing else in the directory. A writer holds an exclusive `flock` on its temp file
//! from before its first byte until the file is renamed into place: a temp file with bytes in
//! it whose lock is free belongs to a writer that died (the kernel drops the locks of a killed
//! process), and a sweep removes it at once, whatever its age.
//!
//! Temp files are made by `tempfile` (`O_CREAT | O_EXCL`, so never through a link, mode
//! `0600`); graves are names only, given by [`unique_name`] to a `rename`.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tempfile::NamedTempFile;

use super::fs_ops::{from_nanos, nanos_now, open_no_follow, recency_stamp, remove_any};

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

/// The start of a name made now by this process: `cusafe-<ns>-<pid>-`.
fn name_prefix() -> String {
    format!("{PREFIX}{}-{}-", nanos_now(), std::process::id())
}

/// A name no other process or thread uses, carrying its creation time.
pub(crate) fn unique_name(purpose: Purpose) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!("{}{sequence}{}", name_prefix(), purpose.suffix())
}

/// What a name made by [`unique_name`] or [`write_temp`] says: when the file was created and
/// what it is for; `None` for any other name.
fn parse_name(name: &str) -> Option<(SystemTime, Purpose)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (rest, purpose) = [Purpose::Write, Purpose::Grave]
        .into_iter()
        .find_map(|purpose| Some((rest.strip_suffix(purpose.suffix())?, purpose)))?;
    let mut fields = rest.splitn(3, '-');
    let nanos = fields.next()?.parse().ok()?;
    let pid = fields.next()?;
    let unique = fields.next()?;
    let sound = !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !unique.is_empty()
        && unique.bytes().all(|b| b.is_ascii_alphanumeric());
    sound.then(|| (from_nanos(nanos), purpose))
}

/// A complete temp file, still locked by this writer: [`Written::persist`] renames it into
/// place; dropped, it is removed.
#[derive(Debug)]
pub(crate) struct Written(NamedTempFile);

impl Written {
    /// Renames the file to `path`; a directory in the way is removed first. On failure the
    /// temp file is removed.
    pub(crate) fn persist(self, path: &Path) -> io::Result<()> {
        match self.0.persist(path) {
            Ok(_) => Ok(()),
            Err(failed) => {
                if fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir()) {
                    remove_any(path)?;
                }
                failed
                    .file
                    .persist(path)
                    .map(drop)
                    .map_err(|error| error.error)
            }
        }
    }
}

/// Writes `bytes` to a new temp file in `dir` (created `0600`, never through a link), locked
/// before its first byte, stamps its modification time and flushes it to disk. On failure
/// the file is removed.
pub(crate) fn write_temp(dir: &Path, bytes: &[u8]) -> io::Result<Written> {
    let mut file = tempfile::Builder::new()
        .prefix(&name_prefix())
        .suffix(Purpose::Write.suffix())
        .rand_bytes(8)
        .tempfile_in(dir)?;
    lock(file.as_file());
    fill(file.as_file_mut(), bytes)?;
    Ok(Written(file))
}

/// Takes the writer's lock on `file` (waiting out a sweep that is looking at it). A file
/// system without locks keeps the file unlocked: it is then swept by age alone.
fn lock(file: &File) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: `flock` on a descriptor this function borrows, open for its duration.
        let _ = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    }
    #[cfg(not(unix))]
    let _ = file;
}

/// Whether the temp file at `path` is a dead writer's: it holds bytes and nobody holds its
/// lock (writers lock before writing and keep the lock until the file is renamed away).
fn writer_died(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Ok(file) = open_no_follow(path) else {
            return false;
        };
        // SAFETY: `flock` on a descriptor this function owns; the lock goes with it.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        locked && file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
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

/// Removes the cache's files in `dir` that are stale (created, and last modified, more than
/// `stale_age` ago) and the temp files of writers that died. Returns the bytes of the live
/// writers' temp files left (graves are not counted: they are entries on their way out).
///
/// Only names made by [`unique_name`] and [`write_temp`] are considered, and links are
/// removed, never followed. A file that cannot be removed is counted as left, unless it is a
/// dead writer's; a missing `dir` is empty.
pub(crate) fn sweep(dir: &Path, stale_age: Duration) -> io::Result<u64> {
    scan(dir, stale_age, true)
}

/// The bytes of the live writers' temp files in `dir`, without removing any.
pub(crate) fn bytes_in(dir: &Path) -> io::Result<u64> {
    scan(dir, Duration::MAX, false)
}

fn scan(dir: &Path, stale_age: Duration, remove: bool) -> io::Result<u64> {
    let cutoff = SystemTime::now().checked_sub(stale_age);
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let mut left = 0u64;
    for item in listing {
        let item = item?;
        let Some((created, purpose)) = item.file_name().to_str().and_then(parse_name) else {
            continue;
        };
        let Ok(metadata) = item.metadata() else {
            continue; // gone meanwhile
        };
        let modified = metadata.modified().unwrap_or(created);
        let stale = cutoff.is_some_and(|cutoff| created < cutoff && modified < cutoff);
        let path = item.path();
        let dead = !stale && purpose == Purpose::Write && metadata.is_file() && writer_died(&path);
        if (stale || dead) && remove && remove_any(&path).is_ok() {
            continue;
        }
        // A grave is an entry on its way out (or an evictor's leftover): never counted.
        if purpose == Purpose::Write && metadata.is_file() && !dead {
            left = left.saturating_add(metadata.len());
        }
    }
    Ok(left)
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
        let (created, purpose) = parse_name(&name).unwrap();
        assert!(created > before && created <= SystemTime::now(), "{name}");
        assert_eq!(purpose, Purpose::Write);
        assert_eq!(
            parse_name(&unique_name(Purpose::Grave)).map(|(_, purpose)| purpose),
            Some(Purpose::Grave)
        );
        let dir = tempfile::tempdir().unwrap();
        let written = write_temp(dir.path(), b"x").unwrap();
        let made = written.0.path().file_name().unwrap().to_str().unwrap();
        assert_eq!(
            parse_name(made).map(|(_, p)| p),
            Some(Purpose::Write),
            "{made}"
        );
        assert_eq!(
            parse_name("cusafe-1000-1-aZ9.tmp").map(|(_, p)| p),
            Some(Purpose::Write)
        );
        for other in [
            "notes.txt",
            "1000-1-1.tmp",
            "cusafe-1000-1-1.txt",
            "cusafe-1000-1-1",
            "cusafe-x-1-1.tmp",
            "cusafe-1000--1.tmp",
            "cusafe-1000-1-.tmp",
            "cusafe-1000-1-a.b.tmp",
            "cusafe-1000-1-1.tmp.bak",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
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
        // Its writer is alive: it holds the lock.
        let holder = File::open(&rewritten).unwrap();
        lock(&holder);
        let live = write_temp(dir.path(), &[7; 100]).unwrap();
        let foreign = dir.path().join("1000-1-3.tmp");
        fs::write(&foreign, b"not the cache's").unwrap();

        let rewritten_len = rewritten_text.len() as u64;
        // The old file's writer is dead (its lock is free): never counted.
        assert_eq!(bytes_in(dir.path()).unwrap(), 100 + rewritten_len);
        assert_eq!(
            sweep(dir.path(), Duration::from_secs(60)).unwrap(),
            100 + rewritten_len
        );
        assert!(!old.exists() && !grave.exists());
        assert!(live.0.path().exists() && rewritten.exists() && foreign.exists());
        assert_eq!(fs::read(live.0.path()).unwrap(), [7; 100]);
        assert_eq!(
            sweep(&dir.path().join("missing"), Duration::ZERO).unwrap(),
            0
        );
    }

    #[test]
    fn a_dead_writers_file_is_swept_at_once_and_never_counted() {
        let dir = tempfile::tempdir().unwrap();
        let name = |n: u32| dir.path().join(format!("{}{n}.tmp", name_prefix()));
        // Killed after writing: bytes, and nobody holds the lock.
        let dead = name(1);
        fs::write(&dead, [1; 50]).unwrap();
        // Killed before its first byte, or a writer that has not locked yet: the age rule.
        let empty = name(2);
        fs::write(&empty, b"").unwrap();
        let live = write_temp(dir.path(), &[2; 30]).unwrap();
        assert_eq!(bytes_in(dir.path()).unwrap(), 30);
        assert!(dead.exists(), "counting removes nothing");
        assert_eq!(sweep(dir.path(), STALE_AGE_FOR_TESTS).unwrap(), 30);
        assert!(!dead.exists() && empty.exists() && live.0.path().exists());
        let target = dir.path().join("entry");
        live.persist(&target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), [2; 30]);
    }

    const STALE_AGE_FOR_TESTS: Duration = Duration::from_secs(3600);

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
