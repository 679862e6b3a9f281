//! [`FileStreamProgramCache`]: a persistent cache with one checksummed file per entry, safe to
//! share between processes.

use std::cmp::Reverse;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::format::{self, HEADER_LEN};
use super::fs_ops::{
    self, FileId, Removal, create_private_dir_all, create_temp_file, io_error, recency_stamp,
    remove_any, remove_if_unchanged,
};
use super::stats::Counters;
use super::{CacheKey, CacheStats, ProgramCache};
use crate::code::CompiledCode;
use crate::error::Result;

/// How long a file may sit in the cache's `tmp/` before a `put` or `clear` removes it.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60 * 60);

/// A persistent program cache: one file per entry under `<root>/entries/<2 hex>/<62 hex>`.
///
/// - Each file carries a header (magic, format version, payload length, its key, SHA-256 of the
///   payload). A file that is truncated, damaged, of another format, of another key, empty, or
///   a directory is counted in [`CacheStats::corrupt_entries`], removed and reported as a miss.
/// - A `put` writes a temp file in `<root>/tmp/`, fsyncs it, and renames it over the entry, so
///   readers see the old entry or the new one, never a mix. Directories are created `0700`,
///   files `0600` (Unix).
/// - With a byte cap ([`FileStreamProgramCache::with_max_bytes`]), each `put` then removes the
///   least recently used entries (a hit refreshes the file's modification time) until the
///   entry files fit, never the entry it just wrote. An entry is removed only if it is still the
///   file the scan saw: one another process has since replaced or read is left in place.
///   While several processes write at once the directory may exceed the cap by about one entry
///   per writer, until the next `put`.
/// - Each `put` and `clear` sweeps temp files older than [`STALE_TEMP_AGE`] (left by processes
///   that died mid-write).
///
/// Nothing is created until the first `put`; `get` on a missing directory is a miss.
///
/// ```
/// use cuda_safe::cache::{CacheKey, CompiledCode, CodeKind, FileStreamProgramCache, ProgramCache};
///
/// let dir = tempfile::tempdir().unwrap();
/// let cache = FileStreamProgramCache::new(dir.path()).with_max_bytes(64 << 20);
/// let key = CacheKey::from_bytes([1; 32]);
/// let program = CompiledCode::new(CodeKind::Cubin, vec![0x7f, b'E', b'L', b'F'], Vec::new());
/// cache.put(&key, &program)?;
///
/// // Another process (here: another handle) finds it.
/// let again = FileStreamProgramCache::new(dir.path());
/// assert_eq!(again.get(&key)?, Some(program));
/// assert_eq!(again.entries()?.len(), 1);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug)]
pub struct FileStreamProgramCache {
    root: PathBuf,
    max_bytes: Option<u64>,
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

/// An entry file found by a scan, with what identifies it.
struct Found {
    info: EntryInfo,
    path: PathBuf,
    id: FileId,
}

impl FileStreamProgramCache {
    /// A cache rooted at `root`, with no byte cap.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            max_bytes: None,
            counters: Counters::default(),
        }
    }

    /// A cache at [`FileStreamProgramCache::default_root`].
    pub fn with_default_root() -> Result<Self> {
        Self::default_root().map(Self::new)
    }

    /// `$XDG_CACHE_HOME/cuda-safe/program-cache`, or `~/.cache/cuda-safe/program-cache`.
    pub fn default_root() -> Result<PathBuf> {
        super::root::default_root()
    }

    /// Keeps the entry files within `max_bytes` in all (an entry larger than that alone is not
    /// stored).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = Some(max_bytes);
        self
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
        let hex = key.to_string();
        let (shard, rest) = hex.split_at_checked(2).unwrap_or_default();
        self.entries_dir().join(shard).join(rest)
    }

    /// Every entry file, most recently used first.
    pub fn entries(&self) -> Result<Vec<EntryInfo>> {
        let mut found: Vec<EntryInfo> = self.scan()?.into_iter().map(|f| f.info).collect();
        found.sort_by_key(|entry| Reverse((entry.last_used, entry.key)));
        Ok(found)
    }

    fn entries_dir(&self) -> PathBuf {
        self.root.join("entries")
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Calls `visit` with the key, path and metadata of everything at an entry's place.
    fn walk(
        &self,
        mut visit: impl FnMut(CacheKey, PathBuf, fs::Metadata) -> Result<()>,
    ) -> Result<()> {
        let entries = self.entries_dir();
        let Some(shards) = read_dir_if_present(&entries)? else {
            return Ok(());
        };
        for shard in shards {
            let shard = shard.map_err(|error| io_error(&entries, error))?;
            let shard_name = shard.file_name();
            let Some(shard_name) = shard_name.to_str().filter(|name| is_hex(name, 2)) else {
                continue;
            };
            let shard_path = shard.path();
            let Some(items) = read_dir_if_present(&shard_path)? else {
                continue;
            };
            for item in items {
                let item = item.map_err(|error| io_error(&shard_path, error))?;
                let name = item.file_name();
                let Some(name) = name.to_str().filter(|name| is_hex(name, 62)) else {
                    continue;
                };
                let Ok(key) = format!("{shard_name}{name}").parse::<CacheKey>() else {
                    continue;
                };
                let path = item.path();
                match fs::symlink_metadata(&path) {
                    Ok(metadata) => visit(key, path, metadata)?,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(io_error(&path, error)),
                }
            }
        }
        Ok(())
    }

    /// Every regular entry file.
    fn scan(&self) -> Result<Vec<Found>> {
        let mut found = Vec::new();
        self.walk(|key, path, metadata| {
            if metadata.is_file() {
                found.push(Found {
                    info: EntryInfo {
                        key,
                        bytes: metadata.len(),
                        last_used: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    },
                    path,
                    id: FileId::of(&metadata),
                });
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// Reads and checks the entry at `path`; `None` for a miss, after removing a bad file.
    fn read_entry(&self, key: &CacheKey, path: &Path) -> Result<Option<CompiledCode>> {
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            Err(error) => return Err(io_error(path, error)),
        };
        let metadata = file.metadata().map_err(|error| io_error(path, error))?;
        let id = FileId::of(&metadata);
        if !metadata.is_file() || metadata.len() < HEADER_LEN as u64 {
            return self.discard(path, id);
        }
        // The fixed header first: a file that is not an entry for `key` is refused before any
        // of its (possibly huge) rest is read.
        let mut header = [0u8; HEADER_LEN];
        match file.read_exact(&mut header) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return self.discard(path, id);
            }
            Err(error) => return Err(io_error(path, error)),
        }
        let Ok(payload_len) = format::payload_len(key, &header) else {
            return self.discard(path, id);
        };
        // The stated length must account for the file's size exactly, which bounds the read.
        if payload_len.checked_add(HEADER_LEN as u64) != Some(metadata.len()) {
            return self.discard(path, id);
        }
        let Some(file_len) = usize::try_from(payload_len)
            .ok()
            .and_then(|len| len.checked_add(HEADER_LEN))
        else {
            return self.discard(path, id);
        };
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(file_len).is_err() {
            // A consistent entry too large to hold in memory now: a miss, not a crash. It is
            // left in place (it is not damaged); the next `put` of this key replaces it.
            return Ok(None);
        }
        bytes.extend_from_slice(&header);
        (&mut file)
            .take(payload_len)
            .read_to_end(&mut bytes)
            .map_err(|error| io_error(path, error))?;
        match format::decode(key, &bytes) {
            Ok(program) => {
                // Best effort: a file that cannot be touched is only evicted a little early.
                let _ = file.set_modified(recency_stamp());
                Ok(Some(program))
            }
            Err(_) => self.discard(path, id),
        }
    }

    /// Counts and removes a bad entry (unless another process has replaced it meanwhile).
    fn discard(&self, path: &Path, id: FileId) -> Result<Option<CompiledCode>> {
        Counters::bump(&self.counters.corrupt_entries);
        remove_if_unchanged(path, id, &self.tmp_dir()).map_err(|error| io_error(path, error))?;
        Ok(None)
    }

    /// Writes `bytes` to a temp file and renames it to `path`.
    fn write_entry(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let tmp_dir = self.tmp_dir();
        let (tmp, mut file) =
            create_temp_file(&tmp_dir, "tmp").map_err(|error| io_error(&tmp_dir, error))?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.set_modified(recency_stamp()))
            .and_then(|()| file.sync_all());
        drop(file);
        let installed = written.and_then(|()| install(&tmp, path));
        if installed.is_err() {
            // The temp file is useless now; a leftover would be swept within the hour anyway.
            let _ = fs::remove_file(&tmp);
        }
        installed.map_err(|error| io_error(path, error))
    }

    /// Removes least recently used entries, other than `keep`, until the files fit the cap.
    fn enforce_cap(&self, keep: &CacheKey) -> Result<()> {
        let Some(max_bytes) = self.max_bytes else {
            return Ok(());
        };
        let mut found = self.scan()?;
        let mut total: u64 = found.iter().map(|f| f.info.bytes).sum();
        if total <= max_bytes {
            return Ok(());
        }
        found.sort_by_key(|entry| (entry.info.last_used, entry.info.key));
        let graveyard = self.tmp_dir();
        for victim in found {
            if total <= max_bytes {
                break;
            }
            if victim.info.key == *keep {
                continue;
            }
            let removal = remove_if_unchanged(&victim.path, victim.id, &graveyard)
                .map_err(|error| io_error(&victim.path, error))?;
            if removal != Removal::Kept {
                total = total.saturating_sub(victim.info.bytes);
            }
            if removal == Removal::Removed {
                Counters::bump(&self.counters.evictions);
            }
        }
        Ok(())
    }

    fn sweep_temp_files(&self) -> Result<()> {
        let tmp_dir = self.tmp_dir();
        fs_ops::sweep_stale(&tmp_dir, STALE_TEMP_AGE).map_err(|error| io_error(&tmp_dir, error))
    }
}

impl ProgramCache for FileStreamProgramCache {
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>> {
        let found = self.read_entry(key, &self.entry_path(key))?;
        Counters::bump(match found {
            Some(_) => &self.counters.hits,
            None => &self.counters.misses,
        });
        Ok(found)
    }

    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()> {
        let bytes = format::encode(key, program);
        if self.max_bytes.is_some_and(|max| bytes.len() as u64 > max) {
            Counters::bump(&self.counters.rejected);
            return Ok(());
        }
        self.write_entry(&self.entry_path(key), &bytes)?;
        Counters::bump(&self.counters.insertions);
        self.sweep_temp_files()?;
        self.enforce_cap(key)
    }

    fn remove(&self, key: &CacheKey) -> Result<()> {
        let path = self.entry_path(key);
        remove_any(&path).map_err(|error| io_error(&path, error))
    }

    fn clear(&self) -> Result<()> {
        self.walk(|_, path, _| remove_any(&path).map_err(|error| io_error(&path, error)))?;
        self.sweep_temp_files()
    }

    fn stats(&self) -> Result<CacheStats> {
        let found = self.scan()?;
        let bytes = found.iter().map(|f| f.info.bytes).sum();
        Ok(self.counters.snapshot(found.len() as u64, bytes))
    }
}

/// Renames the finished temp file `tmp` to `path`; if that fails, clears what is in the way (a
/// missing or non-directory shard, a directory at the entry's place) and tries once more.
fn install(tmp: &Path, path: &Path) -> io::Result<()> {
    if fs::rename(tmp, path).is_ok() {
        return Ok(());
    }
    if let Some(shard) = path.parent() {
        if fs::symlink_metadata(shard).is_ok_and(|metadata| !metadata.is_dir()) {
            remove_any(shard)?;
        }
        create_private_dir_all(shard)?;
    }
    if fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir()) {
        remove_any(path)?;
    }
    fs::rename(tmp, path)
}

/// The listing of `dir`, or `None` if it does not exist.
fn read_dir_if_present(dir: &Path) -> Result<Option<fs::ReadDir>> {
    match fs::read_dir(dir) {
        Ok(listing) => Ok(Some(listing)),
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(error) => Err(io_error(dir, error)),
    }
}

/// Whether `name` is `len` lowercase hex digits.
fn is_hex(name: &str, len: usize) -> bool {
    name.len() == len
        && name
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use std::fs::{self, File};
    use std::time::{Duration, Instant};

    use super::FileStreamProgramCache;
    use crate::cache::format::{self, FORMAT_VERSION, HEADER_LEN, MAGIC};
    use crate::cache::{CacheKey, ProgramCache};
    use crate::code::{CodeKind, CompiledCode};

    /// A cache in a fresh directory and the path of `key`'s entry, its shard created.
    fn cache_with_entry_dir(key: &CacheKey) -> (tempfile::TempDir, FileStreamProgramCache) {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path());
        let path = cache.entry_path(key);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        (dir, cache)
    }

    /// Asserts that `get` is a quick miss that counts the file as corrupt and removes it.
    fn assert_quick_corrupt_miss(cache: &FileStreamProgramCache, key: &CacheKey) {
        let started = Instant::now();
        assert_eq!(cache.get(key).unwrap(), None);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert!(!cache.entry_path(key).exists());
        let stats = cache.stats().unwrap();
        assert_eq!((stats.corrupt_entries, stats.misses), (1, 1));
    }

    #[test]
    fn a_huge_sparse_file_at_an_entry_path_is_a_quick_miss() {
        let key = CacheKey::from_bytes([7; 32]);
        let (_dir, cache) = cache_with_entry_dir(&key);
        let file = File::create(cache.entry_path(&key)).unwrap();
        file.set_len(8 << 30).unwrap();
        drop(file);
        assert_quick_corrupt_miss(&cache, &key);
    }

    #[test]
    fn a_header_claiming_a_terabyte_is_a_quick_miss() {
        let key = CacheKey::from_bytes([8; 32]);
        let (_dir, cache) = cache_with_entry_dir(&key);
        let header = [
            &MAGIC[..],
            &FORMAT_VERSION.to_le_bytes(),
            &(1u64 << 40).to_le_bytes(),
            key.as_bytes(),
            &[0; 32],
        ]
        .concat();
        assert_eq!(header.len(), HEADER_LEN);
        fs::write(cache.entry_path(&key), [&header[..], &[1, 2, 3]].concat()).unwrap();
        assert_quick_corrupt_miss(&cache, &key);
    }

    #[test]
    fn a_file_longer_than_its_header_states_is_a_miss() {
        let key = CacheKey::from_bytes([9; 32]);
        let (_dir, cache) = cache_with_entry_dir(&key);
        let program = CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new());
        let mut bytes = format::encode(&key, &program);
        fs::write(cache.entry_path(&key), &bytes).unwrap();
        assert_eq!(cache.get(&key).unwrap(), Some(program));
        bytes.extend_from_slice(&[0; 4096]);
        fs::write(cache.entry_path(&key), &bytes).unwrap();
        assert_eq!(cache.get(&key).unwrap(), None);
        assert!(!cache.entry_path(&key).exists());
        assert_eq!(cache.stats().unwrap().corrupt_entries, 1);
    }
}
