//! The on-disk cache: layout, permissions, corruption handling, LRU eviction, temp sweeping.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use cuda_safe::cache::{
    CacheKey, CodeKind, CompiledCode, FileStreamProgramCache, ProgramCache, RECENCY_GRANULARITY,
    STALE_TEMP_AGE,
};
use tempfile::TempDir;

fn key(n: u8) -> CacheKey {
    CacheKey::from_bytes([n; 32])
}

fn program(n: u8, size: usize) -> CompiledCode {
    CompiledCode::new(
        CodeKind::Cubin,
        vec![n; size],
        vec![(format!("k<{n}>"), format!("_Z1kILi{n}EEvv"))],
    )
}

/// A cache in a fresh directory (the root is created by the cache).
fn cache() -> (TempDir, FileStreamProgramCache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path().join("cache")).unwrap();
    (dir, cache)
}

/// The size of one entry file for `program(_, size)`.
fn file_size(size: usize) -> u64 {
    let (_dir, cache) = cache();
    cache.put(&key(0), &program(0, size)).unwrap();
    cache.stats().unwrap().bytes
}

#[test]
fn entries_survive_the_handle_and_live_where_documented() {
    let (_dir, cache) = cache();
    assert_eq!(
        cache.get(&key(0xab)).unwrap(),
        None,
        "an empty cache is a miss"
    );
    cache.put(&key(0xab), &program(1, 100)).unwrap();

    let path = cache.entry_path(&key(0xab));
    let hex = key(0xab).to_string();
    assert_eq!(
        path,
        cache.root().join("entries").join(&hex[..2]).join(&hex[2..])
    );
    assert!(path.is_file());

    let fresh = FileStreamProgramCache::new(cache.root()).unwrap();
    assert_eq!(fresh.get(&key(0xab)).unwrap(), Some(program(1, 100)));
    let listed = fresh.entries().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key, key(0xab));
    assert_eq!(listed[0].bytes, fs::metadata(&path).unwrap().len());
    let stats = fresh.stats().unwrap();
    assert_eq!(
        (stats.entries, stats.hits, stats.corrupt_entries),
        (1, 1, 0)
    );
}

#[cfg(unix)]
#[test]
fn directories_are_0700_and_files_0600() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, cache) = cache();
    cache.put(&key(1), &program(1, 10)).unwrap();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let entry = cache.entry_path(&key(1));
    let shard = entry.parent().unwrap();
    for dir in [
        cache.root(),
        &cache.root().join("entries"),
        shard,
        &cache.root().join("tmp"),
    ] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    assert_eq!(mode(&entry), 0o600);
}

/// Damages the stored entry with `damage`, then checks: a miss, counted, the file gone, and a
/// clean store and hit afterwards.
fn damaged_entry_is_a_miss_and_restorable(what: &str, damage: impl FnOnce(&Path)) {
    let (_dir, cache) = cache();
    let stored = program(7, 64);
    cache.put(&key(7), &stored).unwrap();
    let path = cache.entry_path(&key(7));
    damage(&path);

    assert_eq!(cache.get(&key(7)).unwrap(), None, "{what}");
    assert_eq!(cache.stats().unwrap().corrupt_entries, 1, "{what}");
    assert!(
        fs::symlink_metadata(&path).is_err(),
        "{what}: not cleaned up"
    );
    assert_eq!(
        fs::read_dir(cache.root().join("tmp")).unwrap().count(),
        0,
        "{what}"
    );

    cache.put(&key(7), &stored).unwrap();
    assert_eq!(cache.get(&key(7)).unwrap(), Some(stored), "{what}");
    assert_eq!(cache.stats().unwrap().corrupt_entries, 1, "{what}");
}

fn truncate_to(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn overwrite(path: &Path, at: u64, bytes: &[u8]) {
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

#[test]
fn truncated_entries_are_misses() {
    let len = file_size(64);
    for keep in [0, 1, 40, 84, len / 2, len - 1] {
        damaged_entry_is_a_miss_and_restorable(&format!("truncated to {keep}"), |path| {
            truncate_to(path, keep)
        });
    }
}

#[test]
fn a_flipped_byte_anywhere_is_a_miss() {
    let (_dir, cache) = cache();
    let stored = program(7, 64);
    cache.put(&key(7), &stored).unwrap();
    let path = cache.entry_path(&key(7));
    let pristine = fs::read(&path).unwrap();
    for at in 0..pristine.len() {
        let mut damaged = pristine.clone();
        damaged[at] ^= 0x20;
        fs::write(&path, &damaged).unwrap();
        assert_eq!(cache.get(&key(7)).unwrap(), None, "byte {at} flipped");
        assert!(!path.exists(), "byte {at} flipped: not cleaned up");
    }
    assert_eq!(
        cache.stats().unwrap().corrupt_entries,
        pristine.len() as u64
    );
    fs::write(&path, &pristine).unwrap();
    assert_eq!(cache.get(&key(7)).unwrap(), Some(stored));
}

#[test]
fn wrong_magic_extra_bytes_and_another_keys_file_are_misses() {
    damaged_entry_is_a_miss_and_restorable("wrong magic", |path| overwrite(path, 0, b"NOTCACHE"));
    damaged_entry_is_a_miss_and_restorable("a byte appended", |path| {
        OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(&[0])
            .unwrap();
    });
    damaged_entry_is_a_miss_and_restorable("another key's entry", |path| {
        let (_dir, other) = cache();
        other.put(&key(8), &program(7, 64)).unwrap();
        fs::copy(other.entry_path(&key(8)), path).unwrap();
    });
}

#[test]
fn a_zero_length_file_is_a_miss() {
    damaged_entry_is_a_miss_and_restorable("zero length", |path| {
        File::create(path).unwrap();
    });
}

#[test]
fn a_directory_in_the_entrys_place_is_a_miss() {
    damaged_entry_is_a_miss_and_restorable("a directory", |path| {
        fs::remove_file(path).unwrap();
        fs::create_dir(path).unwrap();
        fs::write(path.join("inside"), b"x").unwrap();
    });
}

#[test]
fn obstacles_in_the_way_of_a_store_are_cleared() {
    let (_dir, cache) = cache();
    let path = cache.entry_path(&key(3));
    let shard = path.parent().unwrap();

    fs::create_dir_all(cache.root().join("entries")).unwrap();
    fs::write(shard, b"a file where the shard directory goes").unwrap();
    assert_eq!(cache.get(&key(3)).unwrap(), None);
    cache.put(&key(3), &program(3, 5)).unwrap();
    assert_eq!(cache.get(&key(3)).unwrap(), Some(program(3, 5)));

    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    cache.put(&key(3), &program(3, 6)).unwrap();
    assert_eq!(cache.get(&key(3)).unwrap(), Some(program(3, 6)));
}

#[test]
fn the_least_recently_used_file_is_evicted_first() {
    let size = file_size(100);
    let (_dir, cache) = cache();
    let cache = cache.with_max_bytes(3 * size);
    for n in 1..=3 {
        cache.put(&key(n), &program(n, 100)).unwrap();
        // Written longer ago than a hit leaves alone, oldest first.
        let written = SystemTime::now() - RECENCY_GRANULARITY * (10 - n as u32);
        fs::File::options()
            .append(true)
            .open(cache.entry_path(&key(n)))
            .unwrap()
            .set_modified(written)
            .unwrap();
    }
    assert!(cache.get(&key(1)).unwrap().is_some());
    cache.put(&key(4), &program(4, 100)).unwrap();

    let held: Vec<_> = cache.entries().unwrap().iter().map(|e| e.key).collect();
    assert_eq!(held, [key(4), key(1), key(3)], "most recently used first");
    let stats = cache.stats().unwrap();
    assert_eq!(
        (stats.entries, stats.bytes, stats.evictions),
        (3, 3 * size, 1)
    );
    assert_eq!(cache.get(&key(2)).unwrap(), None);

    // A hit on an entry used within the granularity writes nothing.
    let path = cache.entry_path(&key(1));
    let before = fs::metadata(&path).unwrap().modified().unwrap();
    assert!(cache.get(&key(1)).unwrap().is_some());
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), before);
}

#[test]
fn a_put_keeps_what_it_wrote_and_refuses_what_cannot_fit() {
    let size = file_size(100);
    let (_dir, cache) = cache();
    let cache = cache.with_max_bytes(size);
    cache.put(&key(1), &program(1, 100)).unwrap();
    cache.put(&key(2), &program(2, 100)).unwrap();
    assert_eq!(cache.get(&key(1)).unwrap(), None);
    assert_eq!(cache.get(&key(2)).unwrap(), Some(program(2, 100)));

    cache.put(&key(3), &program(3, 101)).unwrap();
    assert_eq!(cache.get(&key(3)).unwrap(), None);
    assert!(!cache.entry_path(&key(3)).exists());
    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.rejected, stats.evictions), (1, 1, 1));
}

#[test]
fn stale_temp_files_of_the_cache_are_swept_and_everything_else_kept() {
    let (_dir, cache) = cache();
    let tmp = cache.root().join("tmp");
    let long_ago = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
    let age = |path: &Path| {
        File::open(path).unwrap().set_modified(long_ago).unwrap();
    };
    let stale = tmp.join("cusafe-1000-1-1.tmp");
    fs::write(&stale, b"left by a writer that died in 1970").unwrap();
    age(&stale);
    let grave = tmp.join("cusafe-1000-1-2.evicted");
    fs::write(&grave, b"left by an evictor that died in 1970").unwrap();
    age(&grave);
    // Not the cache's names, however old: never touched.
    let mut foreign = Vec::new();
    for name in ["1000-1-1.tmp", "leftover", "cusafe-notes.txt"] {
        let path = tmp.join(name);
        fs::write(&path, b"x").unwrap();
        age(&path);
        foreign.push(path);
    }
    let fresh = tmp.join(format!(
        "cusafe-{}-1-3.tmp",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    fs::write(&fresh, b"being written").unwrap();
    // Its writer is alive: it holds the file's lock, as writers do from before their first byte.
    let writer = File::open(&fresh).unwrap();
    lock(&writer);

    cache.put(&key(1), &program(1, 1)).unwrap();
    assert!(!stale.exists() && !grave.exists());
    assert!(fresh.exists());
    assert!(foreign.iter().all(|path| path.exists()));
}

/// Takes the exclusive `flock` a writer holds on its temp file.
fn lock(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` on a descriptor borrowed for the call.
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
}

/// A writer killed mid-`put` leaves a temp file with bytes in it and no lock: it used to stay
/// five minutes, counted against the cap and evicting good entries. Now the next `put` reaps
/// it at once, and `stats` never counts it, while a live writer's file stays and counts.
#[test]
fn a_killed_writers_temp_file_is_reaped_at_once_and_never_counted() {
    let dir = tempfile::tempdir().unwrap();
    let entry = file_size(1000);
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_max_bytes(3 * entry);
    cache.put(&key(1), &program(1, 1000)).unwrap();
    cache.put(&key(2), &program(2, 1000)).unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let tmp = dir.path().join("tmp");
    // A real writer, killed: the child locks its temp file, writes, and is killed mid-put.
    let killed = tmp.join(format!("cusafe-{now}-1-killed.tmp"));
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 9>'{}' && flock -x 9 && head -c {entry} /dev/zero >&9 && exec sleep 60",
            killed.display()
        ))
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while fs::metadata(&killed).map_or(0, |m| m.len()) < entry {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the writer never wrote"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let live = tmp.join(format!("cusafe-{now}-1-live.tmp"));
    fs::write(&live, vec![0; 100]).unwrap();
    let writer = File::open(&live).unwrap();
    lock(&writer);
    // While the child lives, its file is a live writer's: counted.
    assert_eq!(cache.stats().unwrap().bytes, 2 * entry + entry + 100);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        cache.stats().unwrap().bytes,
        2 * entry + 100,
        "a dead writer's file is not counted"
    );
    cache.put(&key(3), &program(3, 1000)).unwrap();
    assert!(!killed.exists(), "reaped at once");
    assert!(live.exists());
    let stats = cache.stats().unwrap();
    // Three entries and the live writer's bytes fit the cap but for 100 bytes: one evicted.
    assert_eq!((stats.entries, stats.evictions), (2, 1), "{stats:?}");
    drop(writer);
}

#[test]
fn remove_and_clear_delete_entries_only() {
    let (_dir, cache) = cache();
    for n in 1..=3 {
        cache.put(&key(n), &program(n, 10)).unwrap();
    }
    let foreign = cache.root().join("entries").join("README");
    fs::write(&foreign, b"not an entry").unwrap();
    let blocked = cache.entry_path(&key(9));
    fs::create_dir_all(&blocked).unwrap();

    cache.remove(&key(2)).unwrap();
    cache.remove(&key(2)).unwrap();
    assert_eq!(cache.get(&key(2)).unwrap(), None);
    assert_eq!(cache.stats().unwrap().entries, 2);

    cache.clear().unwrap();
    assert_eq!(cache.entries().unwrap(), []);
    assert!(!blocked.exists());
    assert!(foreign.exists());
    assert_eq!(cache.stats().unwrap().bytes, 0);
}
