//! Unit tests of the on-disk cache that need its insides: huge and hostile files at an entry's
//! place, and a full disk (injected through `temp::faults`).

use std::fs::{self, File};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{FileStreamProgramCache, MAX_ENTRY_BYTES};
use crate::cache::format::{self, FORMAT_VERSION, HEADER_LEN, MAGIC};
use crate::cache::temp::faults;
use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};

/// A cache in a fresh directory, the shard of `key`'s entry created.
fn cache_with_entry_dir(key: &CacheKey) -> (tempfile::TempDir, FileStreamProgramCache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path()).unwrap();
    let path = cache.entry_path(key);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    (dir, cache)
}

/// Asserts that `get` is a quick miss that counts the file as corrupt and removes it.
fn assert_quick_corrupt_miss(cache: &FileStreamProgramCache, key: &CacheKey) {
    let started = Instant::now();
    assert_eq!(cache.get(key).unwrap(), None);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(fs::symlink_metadata(cache.entry_path(key)).is_err());
    let stats = cache.stats().unwrap();
    assert_eq!((stats.corrupt_entries, stats.misses), (1, 1));
}

/// A sound header for `key` stating `payload_len` bytes of payload.
fn header(key: &CacheKey, payload_len: u64) -> Vec<u8> {
    let header = [
        &MAGIC[..],
        &FORMAT_VERSION.to_le_bytes(),
        &payload_len.to_le_bytes(),
        key.as_bytes(),
        &[0; 16],
    ]
    .concat();
    assert_eq!(header.len(), HEADER_LEN);
    header
}

/// Writes a sparse file at `path`: `header`, then holes up to `len` bytes.
fn sparse_entry(path: &Path, header: &[u8], len: u64) {
    fs::write(path, header).unwrap();
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
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
    let bytes = [&header(&key, 1 << 40)[..], &[1, 2, 3]].concat();
    fs::write(cache.entry_path(&key), bytes).unwrap();
    assert_quick_corrupt_miss(&cache, &key);
}

/// A sparse file whose sound header states exactly the file's length: before the size limit,
/// 1 GiB took 3.4 s and 1.05 GB of memory to refuse, 12 GiB 42 s and 12.6 GB.
#[test]
fn a_sparse_entry_whose_header_claims_gigabytes_is_refused_from_its_size() {
    for payload_len in [1 << 30, 12 << 30, MAX_ENTRY_BYTES - HEADER_LEN as u64 + 1] {
        let key = CacheKey::from_bytes([10; 32]);
        let (_dir, cache) = cache_with_entry_dir(&key);
        let len = payload_len + HEADER_LEN as u64;
        sparse_entry(&cache.entry_path(&key), &header(&key, payload_len), len);
        assert_quick_corrupt_miss(&cache, &key);
    }
}

#[test]
fn a_file_longer_than_its_header_states_is_a_miss() {
    let key = CacheKey::from_bytes([9; 32]);
    let (_dir, cache) = cache_with_entry_dir(&key);
    let program = CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new());
    let mut bytes = format::encode(&key, &program, None);
    fs::write(cache.entry_path(&key), &bytes).unwrap();
    assert_eq!(cache.get(&key).unwrap(), Some(program));
    bytes.extend_from_slice(&[0; 4096]);
    fs::write(cache.entry_path(&key), &bytes).unwrap();
    assert_eq!(cache.get(&key).unwrap(), None);
    assert!(!cache.entry_path(&key).exists());
    assert_eq!(cache.stats().unwrap().corrupt_entries, 1);
}

/// A FIFO at an entry's place: `get` used to block forever in `open`, waiting for a writer.
#[cfg(unix)]
#[test]
fn a_fifo_at_an_entry_path_is_a_quick_miss_and_removed() {
    let key = CacheKey::from_bytes([11; 32]);
    let (_dir, cache) = cache_with_entry_dir(&key);
    let path = std::ffi::CString::new(cache.entry_path(&key).into_os_string().into_encoded_bytes())
        .unwrap();
    // SAFETY: `path` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);

    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(cache.get(&key).map(|hit| (hit, cache.stats())));
    });
    let (hit, stats) = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("get blocked on a FIFO")
        .unwrap();
    assert_eq!(hit, None);
    assert_eq!(stats.unwrap().corrupt_entries, 1);
}

/// A symbolic link at an entry's place is never followed, even to a sound entry.
#[cfg(unix)]
#[test]
fn a_link_at_an_entry_path_is_not_followed() {
    let key = CacheKey::from_bytes([12; 32]);
    let (dir, cache) = cache_with_entry_dir(&key);
    let program = CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new());
    let elsewhere = dir.path().join("elsewhere");
    fs::write(&elsewhere, format::encode(&key, &program, None)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cache.entry_path(&key)).unwrap();
    assert_quick_corrupt_miss(&cache, &key);
    assert!(elsewhere.exists(), "the link's target is not the cache's");
}

fn program(n: u8) -> CompiledCode {
    CompiledCode::new(CodeKind::Cubin, vec![n; 1000], Vec::new())
}

/// The size of one entry file of `program(_)`.
fn entry_size() -> u64 {
    format::encode(&CacheKey::from_bytes([0; 32]), &program(0), None).len() as u64
}

/// A disk that fills up below the cap: eviction used to run only after a successful write, so
/// a full cache never freed itself. Now the write is retried once after evicting enough.
#[test]
fn a_full_disk_makes_a_capped_put_evict_and_write_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_max_bytes(100 * entry_size());
    for n in 1..=3 {
        cache
            .put(&CacheKey::from_bytes([n; 32]), &program(n))
            .unwrap();
    }
    faults::fill_disk_for(1);
    cache
        .put(&CacheKey::from_bytes([4; 32]), &program(4))
        .unwrap();

    let held: Vec<_> = cache.entries().unwrap().iter().map(|e| e.key).collect();
    let key = |n| CacheKey::from_bytes([n; 32]);
    assert_eq!(held, [key(4), key(3), key(2)], "the oldest made room");
    let stats = cache.stats().unwrap();
    assert_eq!((stats.evictions, stats.failed_stores), (1, 0));
    assert_eq!(cache.get(&key(4)).unwrap(), Some(program(4)));
}

/// When even a second write fails, the put reports it, counts it, and leaves no temp file.
#[test]
fn a_disk_that_stays_full_fails_the_put_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_max_bytes(100 * entry_size());
    cache
        .put(&CacheKey::from_bytes([1; 32]), &program(1))
        .unwrap();
    faults::fill_disk_for(2);
    let error = cache
        .put(&CacheKey::from_bytes([2; 32]), &program(2))
        .unwrap_err();
    assert!(
        matches!(error, crate::error::Error::CacheIo { .. }),
        "{error}"
    );
    let stats = cache.stats().unwrap();
    assert_eq!(
        (stats.entries, stats.evictions, stats.failed_stores),
        (0, 1, 1)
    );
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);

    // Without a cap the cache does not evict: the put fails at once.
    let uncapped = FileStreamProgramCache::new(dir.path()).unwrap();
    uncapped
        .put(&CacheKey::from_bytes([1; 32]), &program(1))
        .unwrap();
    faults::fill_disk_for(1);
    assert!(
        uncapped
            .put(&CacheKey::from_bytes([3; 32]), &program(3))
            .is_err()
    );
    let stats = uncapped.stats().unwrap();
    assert_eq!((stats.entries, stats.failed_stores), (1, 1));
}

/// A noted entry comes back with its note from `get_noted` and as a plain program from `get`;
/// a plain entry is no noted one; a note over the cap is refused before anything is written;
/// a damaged noted entry is a corrupt miss for both.
#[test]
fn noted_entries_keep_their_note_and_are_checked_as_entries() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path()).unwrap();
    let (noted, plain) = (CacheKey::from_bytes([1; 32]), CacheKey::from_bytes([2; 32]));
    cache.put_noted(&noted, b"the note", &program(1)).unwrap();
    cache.put(&plain, &program(2)).unwrap();
    assert_eq!(
        cache
            .get_noted(&noted, &mut |note| note == b"the note")
            .unwrap(),
        Some((b"the note".to_vec(), program(1)))
    );
    assert_eq!(cache.get_noted(&noted, &mut |_| false).unwrap(), None);
    assert_eq!(cache.get(&noted).unwrap(), Some(program(1)));
    assert_eq!(cache.get_noted(&plain, &mut |_| true).unwrap(), None);
    let stats = cache.stats().unwrap();
    assert_eq!(
        (stats.entries, stats.insertions, stats.hits, stats.misses),
        (2, 2, 2, 0),
        "a noted miss or refusal counts nowhere: {stats:?}"
    );

    let huge = vec![b'n'; crate::cache::MAX_NOTE_BYTES + 1];
    let other = CacheKey::from_bytes([3; 32]);
    assert!(cache.put_noted(&other, &huge, &program(3)).is_err());
    assert!(!cache.entry_path(&other).exists());

    let path = cache.entry_path(&noted);
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&path, &bytes).unwrap();
    assert_eq!(cache.get_noted(&noted, &mut |_| true).unwrap(), None);
    assert!(!path.exists(), "the damaged entry is removed");
    assert_eq!(cache.stats().unwrap().corrupt_entries, 1);
}

/// With noted copies off, `put_noted` writes nothing and `get_noted` finds nothing, not even a
/// noted copy another handle stored; `get` still reads that copy as a plain program.
#[test]
fn noted_copies_off_store_and_find_none() {
    let dir = tempfile::tempdir().unwrap();
    let plain = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_noted_copies(false);
    assert!(!plain.noted_copies());
    let key = CacheKey::from_bytes([4; 32]);
    plain.put_noted(&key, b"the note", &program(4)).unwrap();
    assert!(!plain.entry_path(&key).exists());
    let huge = vec![b'n'; crate::cache::MAX_NOTE_BYTES + 1];
    assert!(
        plain.put_noted(&key, &huge, &program(4)).is_err(),
        "still checked"
    );

    let keeping = FileStreamProgramCache::new(dir.path()).unwrap();
    assert!(keeping.noted_copies());
    keeping.put_noted(&key, b"the note", &program(4)).unwrap();
    assert_eq!(plain.get_noted(&key, &mut |_| true).unwrap(), None);
    assert_eq!(plain.get(&key).unwrap(), Some(program(4)));
    let stats = plain.stats().unwrap();
    assert_eq!(
        (stats.entries, stats.insertions, stats.hits, stats.misses),
        (1, 0, 1, 0),
        "{stats:?}"
    );
}
