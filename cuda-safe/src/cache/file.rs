//! [`FileStreamProgramCache`]: a persistent cache with one checksummed file per entry, private
//! to its user and safe to share between processes.

use std::cmp::Reverse;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::format::{self, Decoded, HEADER_LEN};
use super::fs_ops::{
    FileId, Removal, io_error, open_no_follow, recency_stamp, remove_any, remove_if_unchanged,
};
use super::notes;
use super::open;
use super::private::{self, DirState, ready_dir};
use super::root::{self, ENTRIES, NOTES, TMP};
use super::stats::Counters;
use super::temp;
use super::{CacheKey, CacheStats, ProgramCache};
use crate::code::CompiledCode;
use crate::error::Result;
use crate::trace::span;
use walk::{Found, scan, walk};

mod walk;

/// How long a file the cache left in `tmp/` (by a writer or evictor that was killed) stays
/// before a `put` or `clear` removes it: five minutes since it was created and last written.
/// A live writer's file is younger, so it is never removed under the writer. A killed writer's
/// temp file with data in it goes sooner: at the next sweep, once its lock is free (writers
/// hold an exclusive `flock` on it from before its first byte until it is in place).
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(5 * 60);

/// How stale a hit entry's recency stamp (its modification time) may be before the hit
/// refreshes it: within this, hits cost no write, and least-recently-used eviction cannot tell
/// entries apart.
pub const RECENCY_GRANULARITY: Duration = Duration::from_secs(60);

/// The largest entry file the cache writes or reads: 1 GiB. A `put` of a larger program is
/// not stored (counted in [`CacheStats::rejected`]); a larger file at an entry's place is
/// refused from its size, before anything of it is read.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// A persistent program cache: one file per entry under `<root>/entries/<2 hex>/<62 hex>`.
///
/// - The root, `entries/`, `tmp/` and the shard directories must be this user's alone: owned
///   by the effective user and not writable by group or others. [`new`](Self::new) creates
///   what is missing (`0700`) and refuses anything else with
///   [`Error::CacheNotPrivate`](crate::Error::CacheNotPrivate), which says how to fix it.
/// - Each file carries a header (magic, format version, payload length, its key, SHA-256 of the
///   payload). Files are opened without following links or blocking, and only a regular file
///   of this user's, not writable by others, of at most [`MAX_ENTRY_BYTES`], is read. Anything
///   else at an entry's place (truncated, damaged, another format or key, empty, a directory,
///   a link, a FIFO, another user's file) is counted in [`CacheStats::corrupt_entries`],
///   removed and reported as a miss. An entry that cannot be read (permission denied) is a
///   miss too, never an error.
/// - A `put` writes a temp file in `<root>/tmp/`, fsyncs it, and renames it over the entry, so
///   readers see the old entry or the new one, never a mix. Files are created `0600`.
/// - With a byte cap ([`with_max_bytes`](Self::with_max_bytes)), each `put` then removes the
///   least recently used entries (a hit refreshes the file's modification time once it is
///   older than [`RECENCY_GRANULARITY`]) until the entry files and the temp files fit, never the entry it just wrote. An entry is removed
///   only if it is still the file the scan saw: one another process has since replaced or read
///   is left in place. While several processes write at once the directory may exceed the cap
///   by about one entry per writer, until the next `put`. When the disk is full, a capped
///   `put` evicts as much as it needs and writes once more.
/// - Each `put` and `clear` sweeps the cache's own temp files older than
///   [`STALE_TEMP_AGE`]; nothing else in `tmp/` is touched.
/// - Once a `put` has stored its entry it succeeds: a failure to tidy up afterwards (sweep,
///   evict) is logged. A `put` that fails is counted in [`CacheStats::failed_stores`].
///
/// ```
/// use cuda_safe::cache::{CacheKey, CompiledCode, CodeKind, FileStreamProgramCache, ProgramCache};
///
/// let dir = tempfile::tempdir().unwrap();
/// let cache = FileStreamProgramCache::new(dir.path())?.with_max_bytes(64 << 20);
/// let key = CacheKey::from_bytes([1; 32]);
/// let program = CompiledCode::new(CodeKind::Cubin, vec![0x7f, b'E', b'L', b'F'], Vec::new());
/// cache.put(&key, &program)?;
///
/// // Another process (here: another handle) finds it.
/// let again = FileStreamProgramCache::new(dir.path())?;
/// assert_eq!(again.get(&key)?, Some(program));
/// assert_eq!(again.entries()?.len(), 1);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug)]
pub struct FileStreamProgramCache {
    /// The root, also registered as an open cache's while this one lives ([`open`]).
    root: Arc<Path>,
    max_bytes: Option<u64>,
    stale_temp_age: Duration,
    noted_copies: bool,
    counters: Counters,
}

/// One entry of an on-disk cache, as listed by [`FileStreamProgramCache::entries`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryInfo {
    /// The entry's key.
    pub key: CacheKey,
    /// The size of its file.
    pub bytes: u64,
    /// When it was written or last read (the file's modification time).
    pub last_used: SystemTime,
}

impl FileStreamProgramCache {
    /// A cache rooted at `root`, with no byte cap.
    ///
    /// Creates `root`, `entries/` and `tmp/` (`0700`) where missing and checks that they are
    /// this user's alone; a root that can be read but not written is accepted (a read-only
    /// cache: hits work, `put`s fail).
    ///
    /// # Errors
    ///
    /// [`Error::CacheNotPrivate`](crate::Error::CacheNotPrivate) for a root or sub-directory
    /// that another user owns or may write, or that is not a directory;
    /// [`Error::CacheIo`](crate::Error::CacheIo) when the root cannot be created or read.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root: Arc<Path> = Arc::from(root.into());
        root::prepare(&root)?;
        open::register(&root);
        Ok(Self {
            root,
            max_bytes: None,
            stale_temp_age: STALE_TEMP_AGE,
            noted_copies: true,
            counters: Counters::default(),
        })
    }

    /// A cache at [`FileStreamProgramCache::default_root`], checked as [`new`](Self::new)
    /// checks.
    pub fn with_default_root() -> Result<Self> {
        Self::new(Self::default_root()?)
    }

    /// `$XDG_CACHE_HOME/cuda-safe/program-cache`, or `~/.cache/cuda-safe/program-cache`.
    pub fn default_root() -> Result<PathBuf> {
        root::default_root()
    }

    /// Keeps the entry files and temp files within `max_bytes` in all (an entry larger than
    /// that alone is not stored).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = Some(max_bytes);
        self
    }

    /// Sweeps the cache's temp files once they are older than `age` instead of
    /// [`STALE_TEMP_AGE`]. A writer slower than `age` (a huge entry on a slow disk) can then
    /// lose its temp file, and its `put` fails; nothing wrong is ever stored.
    pub fn with_stale_temp_age(mut self, age: Duration) -> Self {
        self.stale_temp_age = age;
        self
    }

    /// Whether to keep noted copies ([`ProgramCache::put_noted`]); on by default. Only links
    /// are stored noted ([`Linker::link_cached`](crate::Linker::link_cached)); a program is
    /// one entry file either way.
    ///
    /// Off, the cache holds one entry file per link too: `put_noted` stores nothing and
    /// `get_noted` finds nothing (noted copies already on disk are left to eviction and
    /// [`clear`](ProgramCache::clear)). A fresh process's link hit then still needs no
    /// nvJitLink, but reads the note on nvJitLink and the entry as two files.
    pub fn with_noted_copies(mut self, keep: bool) -> Self {
        self.noted_copies = keep;
        self
    }

    /// Whether noted copies are kept ([`with_noted_copies`](Self::with_noted_copies)).
    pub fn noted_copies(&self) -> bool {
        self.noted_copies
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The byte cap, if any.
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes
    }

    /// The file that holds `key`'s entry.
    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        let hex = key.to_hex();
        let (shard, rest) = hex.split_at_checked(2).unwrap_or_default();
        self.entries_dir().join(shard).join(rest)
    }

    /// Every entry file, most recently used first (those of shard directories that cannot be
    /// listed are left out; [`CacheStats::unreadable_shards`] counts them).
    pub fn entries(&self) -> Result<Vec<EntryInfo>> {
        let mut found: Vec<EntryInfo> = self.scan()?.into_iter().map(|f| f.info).collect();
        found.sort_by_key(|entry| Reverse((entry.last_used, entry.key)));
        Ok(found)
    }

    fn entries_dir(&self) -> PathBuf {
        self.root.join(ENTRIES)
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join(TMP)
    }

    fn notes_dir(&self) -> PathBuf {
        self.root.join(NOTES)
    }

    /// Every regular entry file (of the shards that can be listed).
    fn scan(&self) -> Result<Vec<Found>> {
        Ok(scan(&self.entries_dir())?.found)
    }

    /// Reads and checks the entry at `path` (the program, and its note if it was stored with
    /// one); `None` for a miss, after removing a bad file.
    fn read_entry(&self, key: &CacheKey, path: &Path) -> Option<Decoded> {
        let mut file = match open_no_follow(path) {
            Ok(file) => file,
            Err(error) => return self.unopenable(path, &error),
        };
        let metadata = match file.metadata() {
            Ok(metadata) => metadata,
            Err(error) => return unreadable(path, &error),
        };
        let id = FileId::of(&metadata);
        let len = metadata.len();
        // Only a regular file of this user's, of a size an entry can have, is read at all.
        if !private::is_private_file(&metadata) || len < HEADER_LEN as u64 || len > MAX_ENTRY_BYTES
        {
            return self.discard(path, id);
        }
        // The whole file in one read: its size, from `fstat`, bounds the buffer.
        let Ok(file_len) = usize::try_from(len) else {
            return None;
        };
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(file_len).is_err() {
            // A sound entry too large to hold in memory now: a miss, and left in place.
            return None;
        }
        bytes.resize(file_len, 0);
        if let Err(error) = file.read_exact(&mut bytes) {
            return match error.kind() {
                io::ErrorKind::UnexpectedEof => self.discard(path, id),
                _ => unreadable(path, &error),
            };
        }
        // The stated payload length must account for the file's size exactly.
        let header: &[u8; HEADER_LEN] = bytes.first_chunk()?;
        let sized = format::payload_len(key, header)
            .ok()
            .and_then(|payload| payload.checked_add(HEADER_LEN as u64))
            == Some(len);
        if !sized {
            return self.discard(path, id);
        }
        match format::decode(key, &bytes) {
            Ok(decoded) => {
                if metadata
                    .modified()
                    .ok()
                    .and_then(|modified| modified.elapsed().ok())
                    .is_none_or(|age| age >= RECENCY_GRANULARITY)
                {
                    // Best effort: a file that cannot be touched is only evicted a little
                    // early.
                    let _ = file.set_modified(recency_stamp());
                }
                Some(decoded)
            }
            Err(_) => self.discard(path, id),
        }
    }

    /// The miss for an entry that could not be opened: nothing there, not permitted (left
    /// alone), or something that is no entry file (a link, a socket: removed).
    fn unopenable<T>(&self, path: &Path, error: &io::Error) -> Option<T> {
        match error.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => None,
            io::ErrorKind::PermissionDenied => unreadable(path, error),
            _ => match fs::symlink_metadata(path) {
                Ok(metadata) if !metadata.is_file() => self.discard(path, FileId::of(&metadata)),
                _ => unreadable(path, error),
            },
        }
    }

    /// Counts a bad entry and removes it (unless another process has replaced it meanwhile);
    /// where it cannot be removed (a read-only cache) it stays, and is still a miss.
    fn discard<T>(&self, path: &Path, id: FileId) -> Option<T> {
        Counters::bump(&self.counters.corrupt_entries);
        if let Err(error) = remove_if_unchanged(path, id, &self.tmp_dir()) {
            log::debug!(
                "cuda-safe: a bad program cache entry at {} could not be removed: {error}",
                path.display()
            );
        }
        None
    }

    /// Stores the encoded entry `bytes` at `path`: a temp file renamed into place. On a full
    /// disk, a capped cache evicts what the entry needs and tries once more.
    fn write_entry(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let tmp_dir = self.tmp_dir();
        let shard = path.parent().unwrap_or(path);
        for dir in [&self.entries_dir(), shard, &tmp_dir] {
            ready_dir(dir)?;
        }
        let written = match temp::write_temp(&tmp_dir, bytes) {
            Err(error) if temp::is_out_of_space(&error) && self.max_bytes.is_some() => {
                if let Err(error) = self.free(bytes.len() as u64) {
                    log::warn!("cuda-safe: making room in the program cache failed: {error}");
                }
                temp::write_temp(&tmp_dir, bytes)
            }
            other => other,
        };
        let tmp = written.map_err(|error| io_error(&tmp_dir, error))?;
        tmp.persist(path).map_err(|error| io_error(path, error))
    }

    /// Sweeps stale temp files and returns the bytes of those left (live writers').
    fn sweep_temp_files(&self) -> Result<u64> {
        let tmp_dir = self.tmp_dir();
        match private::ensure_dir(&tmp_dir)? {
            DirState::Missing => Ok(0),
            DirState::Ready => temp::sweep(&tmp_dir, self.stale_temp_age)
                .map_err(|error| io_error(&tmp_dir, error)),
        }
    }

    /// The bytes of the cache's temp files, if `tmp/` is a private directory.
    fn temp_bytes(&self) -> Result<u64> {
        let tmp_dir = self.tmp_dir();
        match fs::symlink_metadata(&tmp_dir) {
            Ok(metadata) if metadata.is_dir() && private::problem(&metadata).is_none() => {
                temp::bytes_in(&tmp_dir).map_err(|error| io_error(&tmp_dir, error))
            }
            _ => Ok(0),
        }
    }

    /// After a store of `keep`: sweeps stale temp files and, with a cap, evicts least recently
    /// used entries until the entry and temp files fit.
    fn tidy(&self, keep: &CacheKey) -> Result<()> {
        let temp_bytes = self.sweep_temp_files()?;
        match self.max_bytes {
            Some(max_bytes) => self.evict(Some(keep), temp_bytes, |total, _| total <= max_bytes),
            None => Ok(()),
        }
    }

    /// On a full disk: sweeps stale temp files and evicts least recently used entries until
    /// `needed` bytes are freed.
    fn free(&self, needed: u64) -> Result<()> {
        let temp_bytes = self.sweep_temp_files()?;
        self.evict(None, temp_bytes, |_, freed| freed >= needed)
    }

    /// Removes least recently used entries, other than `keep`, until `done(total, freed)`:
    /// `total` is the bytes of the entries left plus `temp_bytes`, `freed` those removed.
    /// An entry that cannot be removed is skipped (logged once).
    fn evict(
        &self,
        keep: Option<&CacheKey>,
        temp_bytes: u64,
        done: impl Fn(u64, u64) -> bool,
    ) -> Result<()> {
        let mut found = self.scan()?;
        let entry_bytes: u64 = found.iter().map(|f| f.info.bytes).sum();
        let mut total = entry_bytes.saturating_add(temp_bytes);
        let mut freed = 0u64;
        found.sort_by_key(|entry| (entry.info.last_used, entry.info.key));
        let graveyard = self.tmp_dir();
        let mut failures = (0, None);
        for victim in found {
            if done(total, freed) {
                break;
            }
            if Some(&victim.info.key) == keep {
                continue;
            }
            match remove_if_unchanged(&victim.path, victim.id, &graveyard) {
                Ok(Removal::Kept) => {}
                Ok(removal) => {
                    total = total.saturating_sub(victim.info.bytes);
                    if removal == Removal::Removed {
                        freed = freed.saturating_add(victim.info.bytes);
                        Counters::bump(&self.counters.evictions);
                    }
                }
                Err(error) => {
                    failures.0 += 1;
                    failures.1.get_or_insert((victim.path, error));
                }
            }
        }
        if let (count, Some((path, error))) = failures {
            log::warn!(
                "cuda-safe: {count} program cache entries could not be evicted (the first, {}: \
                 {error})",
                path.display()
            );
        }
        Ok(())
    }

    /// `stored`, counted in [`CacheStats::failed_stores`] when it failed.
    fn count_failure(&self, stored: Result<()>) -> Result<()> {
        if stored.is_err() {
            Counters::bump(&self.counters.failed_stores);
        }
        stored
    }

    /// [`ProgramCache::put`] (with `note`: [`ProgramCache::put_noted`]) without the failure
    /// count.
    fn store(&self, key: &CacheKey, program: &CompiledCode, note: Option<&[u8]>) -> Result<()> {
        let bytes = format::encode(key, program, note);
        let len = bytes.len() as u64;
        if len > MAX_ENTRY_BYTES || self.max_bytes.is_some_and(|max| len > max) {
            Counters::bump(&self.counters.rejected);
            return Ok(());
        }
        self.write_entry(&self.entry_path(key), &bytes)?;
        Counters::bump(&self.counters.insertions);
        // The entry is stored: from here on nothing fails the put.
        if let Err(error) = self.tidy(key) {
            log::warn!("cuda-safe: tidying the program cache after a store failed: {error}");
        }
        Ok(())
    }
}

impl ProgramCache for FileStreamProgramCache {
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>> {
        let span = span!(DEBUG, "cache_get", cache = "file", %key, hit = tracing::field::Empty);
        let found = self.read_entry(key, &self.entry_path(key));
        span.record_hit(found.is_some());
        Counters::bump(match found {
            Some(_) => &self.counters.hits,
            None => &self.counters.misses,
        });
        Ok(found.map(|(program, _)| program))
    }

    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()> {
        let _span = span!(DEBUG, "cache_put", cache = "file", %key);
        self.count_failure(self.store(key, program, None))
    }

    /// The entry file of `key`, if it was stored with a note `accept` takes: counted in
    /// [`CacheStats::hits`]; anything else counts nowhere (the caller looks elsewhere next).
    /// Nothing, without reading, when noted copies are off.
    fn get_noted(
        &self,
        key: &CacheKey,
        accept: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Option<(Vec<u8>, CompiledCode)>> {
        if !self.noted_copies {
            return Ok(None);
        }
        let span =
            span!(DEBUG, "cache_get_noted", cache = "file", %key, hit = tracing::field::Empty);
        let found = self
            .read_entry(key, &self.entry_path(key))
            .and_then(|(program, note)| Some((note?, program)))
            .filter(|(note, _)| accept(note));
        span.record_hit(found.is_some());
        if found.is_some() {
            Counters::bump(&self.counters.hits);
        }
        Ok(found)
    }

    /// Stores `program` with `note` inside under `key`; stores nothing when noted copies are
    /// off.
    fn put_noted(&self, key: &CacheKey, note: &[u8], program: &CompiledCode) -> Result<()> {
        if let Some(refusal) = super::too_large(note) {
            return Err(refusal);
        }
        if !self.noted_copies {
            return Ok(());
        }
        let _span = span!(DEBUG, "cache_put_noted", cache = "file", %key);
        self.count_failure(self.store(key, program, Some(note)))
    }

    fn remove(&self, key: &CacheKey) -> Result<()> {
        let path = self.entry_path(key);
        remove_any(&path).map_err(|error| io_error(&path, error))
    }

    /// Removes every entry (those of shards that cannot be listed stay; logged) and note.
    fn clear(&self) -> Result<()> {
        walk(&self.entries_dir(), |_, path, _| {
            remove_any(&path).map_err(|error| io_error(&path, error))
        })?;
        let notes_dir = self.notes_dir();
        notes::clear(&notes_dir).map_err(|error| io_error(&notes_dir, error))?;
        self.sweep_temp_files().map(drop)
    }

    /// The entry files (and, in `bytes`, the live writers' temp files) and this handle's
    /// counters; a shard directory that cannot be listed is counted in
    /// [`CacheStats::unreadable_shards`], not an error.
    fn stats(&self) -> Result<CacheStats> {
        let scanned = scan(&self.entries_dir())?;
        let bytes = scanned
            .found
            .iter()
            .map(|f| f.info.bytes)
            .sum::<u64>()
            .saturating_add(self.temp_bytes()?);
        let mut stats = self.counters.snapshot(scanned.found.len() as u64, bytes);
        stats.unreadable_shards = scanned.unreadable_shards;
        Ok(stats)
    }

    /// The note file under `<root>/notes/`, checked as entry files are.
    fn get_note(&self, key: &CacheKey) -> Option<Vec<u8>> {
        notes::read_in(&self.root, key)
    }

    fn put_note(&self, key: &CacheKey, note: &[u8]) -> Result<()> {
        notes::write_in(&self.root, key, note)
    }
}

/// The miss for an entry that could not be read: logged, left in place.
fn unreadable<T>(path: &Path, error: &io::Error) -> Option<T> {
    log::debug!(
        "cuda-safe: program cache entry {} cannot be read, a miss: {error}",
        path.display()
    );
    None
}

#[cfg(test)]
mod tests;
