//! The on-disk cache against other users and odd file systems: roots and directories others
//! own or may write (the default root included), another user's entry files, a `tmp/` that is
//! a link or holds unrelated files, unreadable entries and read-only caches.
//!
//! Permission checks do not apply to the superuser, so when these tests run as root the
//! checks that need an ordinary user run in a child process of this binary as `nobody`, and
//! "another user" is `nobody` too.
#![cfg(unix)]

use std::fs::{self, File};
use std::os::unix::fs::{PermissionsExt, chown, lchown, symlink};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use cuda_safe::Error;
use cuda_safe::cache::{CacheKey, CodeKind, CompiledCode, FileStreamProgramCache, ProgramCache};

/// `nobody`: another user, for tests run as root.
const OTHER_UID: u32 = 65534;
/// Set in a child started by [`unprivileged`].
const CHILD_VAR: &str = "CUDA_SAFE_HOSTILE_CHILD";
/// The cache home a child of [`default_root_in`] uses.
const XDG_VAR: &str = "XDG_CACHE_HOME";

fn key(n: u8) -> CacheKey {
    CacheKey::from_bytes([n; 32])
}

fn program(n: u8) -> CompiledCode {
    CompiledCode::new(
        CodeKind::Cubin,
        vec![n; 64],
        vec![(format!("k<{n}>"), format!("_Z1kILi{n}EEvv"))],
    )
}

fn is_superuser() -> bool {
    // SAFETY: `geteuid` has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The reason of a [`Error::CacheNotPrivate`] for `path`, or a panic.
fn refusal(result: cuda_safe::Result<FileStreamProgramCache>, path: &Path) -> String {
    match result {
        Err(Error::CacheNotPrivate {
            path: refused,
            reason,
        }) => {
            assert_eq!(refused, path);
            reason.into_owned()
        }
        other => panic!("expected a refusal of {}, got {other:?}", path.display()),
    }
}

/// What another user plants: a sound entry for `key` holding their code, at `root`'s place
/// for it (written through a cache of their own elsewhere, then copied).
fn plant_entry(root: &Path, key: &CacheKey, code: &CompiledCode) -> std::path::PathBuf {
    let theirs = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(theirs.path()).unwrap();
    cache.put(key, code).unwrap();
    let path = root
        .join("entries")
        .join(&key.to_string()[..2])
        .join(&key.to_string()[2..]);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::copy(cache.entry_path(key), &path).unwrap();
    path
}

/// A root pre-created world-writable (by anyone, before the victim's first use): the victim's
/// `get` used to return whatever another user planted there.
#[test]
fn a_root_or_sub_directory_others_may_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    fs::create_dir(&root).unwrap();
    chmod(&root, 0o777);
    plant_entry(&root, &key(1), &program(66));
    let reason = refusal(FileStreamProgramCache::new(&root), &root);
    assert!(
        reason.contains("writable by group or others (mode 0777)"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("chmod go-w {}", root.display())),
        "{reason}"
    );

    // Group-writable is no better; the owner's fix makes it usable.
    chmod(&root, 0o770);
    refusal(FileStreamProgramCache::new(&root), &root);
    chmod(&root, 0o755);
    for sub in ["entries", "tmp"] {
        let path = root.join(sub);
        fs::create_dir_all(&path).unwrap();
        chmod(&path, 0o777);
        refusal(FileStreamProgramCache::new(&root), &path);
        chmod(&path, 0o700);
    }
    let cache = FileStreamProgramCache::new(&root).unwrap();
    // The planted entry is the owner's now (they trusted it); a new root gets 0700.
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(66)));
    let fresh = FileStreamProgramCache::new(dir.path().join("new")).unwrap();
    for path in [
        fresh.root(),
        &fresh.root().join("entries"),
        &fresh.root().join("tmp"),
    ] {
        assert_eq!(mode(path), 0o700, "{}", path.display());
    }
}

/// A root, or its `entries/`, owned by another user: refused, whatever its mode.
#[test]
fn a_root_or_entries_owned_by_another_user_is_refused() {
    if !is_superuser() {
        // An ordinary user cannot give a directory away; "/" is another user's (root's).
        let reason = refusal(FileStreamProgramCache::new("/"), Path::new("/"));
        assert!(reason.contains("owned by uid 0"), "{reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    fs::create_dir(&root).unwrap();
    chmod(&root, 0o700);
    plant_entry(&root, &key(1), &program(66));
    chown(&root, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let reason = refusal(FileStreamProgramCache::new(&root), &root);
    assert!(
        reason.contains("owned by uid 65534, not by this user (uid 0)"),
        "{reason}"
    );

    chown(&root, Some(0), Some(0)).unwrap();
    let entries = root.join("entries");
    chown(&entries, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    chmod(&entries, 0o700);
    refusal(FileStreamProgramCache::new(&root), &entries);
}

/// Entry files are checked on the open file: another user's (planted through a directory
/// that was writable once), or one others may write, is never returned.
#[test]
fn an_entry_file_of_another_user_or_writable_by_others_is_never_returned() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path()).unwrap();
    let writable = plant_entry(dir.path(), &key(1), &program(66));
    chmod(&writable, 0o666);
    assert_eq!(cache.get(&key(1)).unwrap(), None);
    assert!(!writable.exists(), "removed as corrupt");
    let mut expected_corrupt = 1;
    if is_superuser() {
        let foreign = plant_entry(dir.path(), &key(2), &program(66));
        chown(&foreign, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        assert_eq!(cache.get(&key(2)).unwrap(), None);
        assert!(!foreign.exists());
        expected_corrupt += 1;
    }
    let stats = cache.stats().unwrap();
    assert_eq!((stats.corrupt_entries, stats.hits), (expected_corrupt, 0));
    cache.put(&key(1), &program(1)).unwrap();
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1)));
}

/// Runs [`default_root_worker`] with `XDG_CACHE_HOME=xdg` and returns its report.
fn default_root_in(xdg: &Path) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["default_root_worker", "--exact", "--ignored", "--nocapture"])
        .env(XDG_VAR, xdg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    stdout
}

/// The default (XDG) root is checked like any other: pre-created world-writable or owned by
/// another user, it is refused.
#[test]
fn the_default_root_is_checked_too() {
    let xdg = tempfile::tempdir().unwrap();
    let report = default_root_in(xdg.path());
    assert!(report.contains("accepted"), "{report}");
    let root = xdg.path().join("cuda-safe/program-cache");
    assert_eq!(mode(&root), 0o700);

    let xdg = tempfile::tempdir().unwrap();
    let root = xdg.path().join("cuda-safe/program-cache");
    fs::create_dir_all(&root).unwrap();
    chmod(&root, 0o777);
    let report = default_root_in(xdg.path());
    assert!(report.contains("refused:"), "{report}");
    assert!(report.contains("writable by group or others"), "{report}");
    if is_superuser() {
        chmod(&root, 0o700);
        chown(&root, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        let report = default_root_in(xdg.path());
        assert!(report.contains("owned by uid 65534"), "{report}");
    }
}

/// A child of [`the_default_root_is_checked_too`]: reports what `with_default_root` says.
#[test]
#[ignore = "a worker process of the_default_root_is_checked_too, which runs it"]
fn default_root_worker() {
    if std::env::var_os(XDG_VAR).is_none() {
        return;
    }
    match FileStreamProgramCache::with_default_root() {
        Ok(cache) => println!("accepted {}", cache.root().display()),
        Err(error) => println!("refused: {error}"),
    }
}

/// A directory tree of someone's, with a file and a sub-directory older than an hour.
fn victim_tree(at: &Path) -> Vec<std::path::PathBuf> {
    fs::create_dir_all(at.join("old-subdir")).unwrap();
    let files = [
        at.join("notes.txt"),
        at.join("1000-1-1.tmp"),
        at.join("old-subdir/kept"),
    ];
    let long_ago = SystemTime::now() - Duration::from_secs(3 * 60 * 60);
    for file in &files {
        fs::write(file, b"precious").unwrap();
        File::open(file).unwrap().set_modified(long_ago).unwrap();
    }
    File::open(at.join("old-subdir"))
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    files.to_vec()
}

/// `tmp/` replaced by a link (before the cache opens, or while it is open): one `put` used to
/// delete the link target's files and sub-directories older than an hour.
#[test]
fn a_tmp_link_is_replaced_and_its_target_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    let files = victim_tree(&victim);
    let root = dir.path().join("cache");
    fs::create_dir_all(&root).unwrap();
    symlink(&victim, root.join("tmp")).unwrap();

    let cache = FileStreamProgramCache::new(&root)
        .unwrap()
        .with_stale_temp_age(Duration::ZERO);
    assert!(fs::symlink_metadata(root.join("tmp")).unwrap().is_dir());
    cache.put(&key(1), &program(1)).unwrap();

    fs::remove_dir(root.join("tmp")).unwrap();
    symlink(&victim, root.join("tmp")).unwrap();
    cache.put(&key(2), &program(2)).unwrap();
    cache.clear().unwrap();
    assert!(fs::symlink_metadata(root.join("tmp")).unwrap().is_dir());
    for file in &files {
        assert_eq!(fs::read(file).unwrap(), b"precious", "{}", file.display());
    }
}

/// A file or link of this user's where `entries/` or `tmp/` goes is replaced by a directory;
/// another user's is refused.
#[test]
fn a_non_directory_where_a_sub_directory_goes_is_repaired_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("entries"), b"a file").unwrap();
    symlink("/nowhere", dir.path().join("tmp")).unwrap();
    let cache = FileStreamProgramCache::new(dir.path()).unwrap();
    for sub in ["entries", "tmp"] {
        let path = dir.path().join(sub);
        assert!(fs::symlink_metadata(&path).unwrap().is_dir(), "{sub}");
        assert_eq!(mode(&path), 0o700);
    }
    cache.put(&key(1), &program(1)).unwrap();
    if is_superuser() {
        let tmp = dir.path().join("tmp");
        fs::remove_dir_all(&tmp).unwrap();
        symlink("/nowhere", &tmp).unwrap();
        lchown(&tmp, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        let reason = refusal(FileStreamProgramCache::new(dir.path()), &tmp);
        assert!(
            reason.contains("a symbolic link owned by uid 65534"),
            "{reason}"
        );
        // The open cache refuses to write through it too, and counts the failure.
        assert!(matches!(
            cache.put(&key(2), &program(2)),
            Err(Error::CacheNotPrivate { .. })
        ));
        assert_eq!(cache.stats().unwrap().failed_stores, 1);
    }
}

/// A root the user picked that already has an unrelated `tmp/`: only the cache's own files
/// there are ever swept.
#[test]
fn an_unrelated_tmp_in_a_chosen_root_keeps_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = victim_tree(&dir.path().join("tmp"));
    chmod(&dir.path().join("tmp"), 0o700);
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_stale_temp_age(Duration::ZERO);
    cache.put(&key(1), &program(1)).unwrap();
    cache.clear().unwrap();
    for file in &files {
        assert_eq!(fs::read(file).unwrap(), b"precious", "{}", file.display());
    }
}

/// Runs `body` where file permissions apply: here for an ordinary user, else (as root) in a
/// child of this binary running `test` as `nobody`.
fn unprivileged(test: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD_VAR).is_some() || !is_superuser() {
        body();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env(CHILD_VAR, "1")
        .env_remove(XDG_VAR)
        .uid(OTHER_UID)
        .gid(OTHER_UID)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// An entry file nobody may read: `get` used to fail with `EACCES` where a miss is promised.
#[test]
fn an_unreadable_entry_is_a_miss() {
    unprivileged("an_unreadable_entry_is_a_miss", || {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path()).unwrap();
        cache.put(&key(1), &program(1)).unwrap();
        let path = cache.entry_path(&key(1));
        chmod(&path, 0o000);
        assert_eq!(cache.get(&key(1)).unwrap(), None);
        assert!(path.exists(), "not damaged, so left in place");
        let stats = cache.stats().unwrap();
        assert_eq!((stats.misses, stats.corrupt_entries), (1, 0));
        // The next store replaces it.
        cache.put(&key(1), &program(1)).unwrap();
        assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1)));
    });
}

/// A shard directory nobody may list: `stats` used to fail on it. Now it reports it, with the
/// entries of every other shard, and `entries` lists those.
#[test]
fn an_unreadable_shard_is_reported_not_an_error() {
    unprivileged("an_unreadable_shard_is_reported_not_an_error", || {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path()).unwrap();
        cache.put(&key(1), &program(1)).unwrap();
        cache.put(&key(2), &program(2)).unwrap();
        let shard = cache.entry_path(&key(1));
        let shard = shard.parent().unwrap();
        chmod(shard, 0o000);
        let stats = cache.stats().unwrap();
        chmod(shard, 0o700);
        assert_eq!(
            (stats.entries, stats.unreadable_shards),
            (1, 1),
            "{stats:?}"
        );
        assert_eq!(cache.stats().unwrap().unreadable_shards, 0);
        assert_eq!(cache.entries().unwrap().len(), 2);
    });
}

/// A capped `put` whose eviction meets an entry it may not remove: it used to fail after
/// storing, leaving the cap unenforced. Now it stores, skips that entry, and evicts the next.
#[test]
fn a_capped_put_that_cannot_evict_everything_still_succeeds() {
    unprivileged(
        "a_capped_put_that_cannot_evict_everything_still_succeeds",
        || {
            let dir = tempfile::tempdir().unwrap();
            let probe = FileStreamProgramCache::new(dir.path().join("probe")).unwrap();
            probe.put(&key(9), &program(9)).unwrap();
            let entry = probe.stats().unwrap().bytes;

            let cache = FileStreamProgramCache::new(dir.path().join("cache"))
                .unwrap()
                .with_max_bytes(3 * entry);
            for n in 1..=3 {
                cache.put(&key(n), &program(n)).unwrap();
            }
            let stuck = cache.entry_path(&key(1));
            chmod(stuck.parent().unwrap(), 0o500);
            let put = cache.put(&key(4), &program(4));
            chmod(stuck.parent().unwrap(), 0o700);
            put.unwrap();

            let held: Vec<_> = cache.entries().unwrap().iter().map(|e| e.key).collect();
            assert_eq!(held, [key(4), key(3), key(1)]);
            let stats = cache.stats().unwrap();
            assert_eq!(
                (stats.bytes, stats.evictions, stats.failed_stores),
                (3 * entry, 1, 0)
            );
        },
    );
}

/// A cache its user may read but not write: hits work, a damaged entry is a miss (it stays),
/// and a `put` fails and is counted.
#[test]
fn a_read_only_cache_serves_hits_and_misses() {
    unprivileged("a_read_only_cache_serves_hits_and_misses", || {
        let dir = tempfile::tempdir().unwrap();
        let writer = FileStreamProgramCache::new(dir.path()).unwrap();
        writer.put(&key(1), &program(1)).unwrap();
        writer.put(&key(2), &program(2)).unwrap();
        let damaged = writer.entry_path(&key(2));
        let mut bytes = fs::read(&damaged).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&damaged, bytes).unwrap();

        let dirs = [
            dir.path().to_path_buf(),
            dir.path().join("entries"),
            dir.path().join("tmp"),
            writer.entry_path(&key(1)).parent().unwrap().to_path_buf(),
            damaged.parent().unwrap().to_path_buf(),
        ];
        for path in &dirs {
            chmod(path, 0o500);
        }
        let reader = FileStreamProgramCache::new(dir.path()).map(|cache| {
            (
                cache.get(&key(1)),
                cache.get(&key(2)),
                cache.put(&key(3), &program(3)),
                cache.stats(),
            )
        });
        for path in &dirs {
            chmod(path, 0o700);
        }
        let (hit, miss, put, stats) = reader.unwrap();
        assert_eq!(hit.unwrap(), Some(program(1)));
        assert_eq!(miss.unwrap(), None);
        assert!(damaged.exists(), "a read-only cache cannot remove it");
        assert!(put.is_err());
        let stats = stats.unwrap();
        assert_eq!(
            (
                stats.hits,
                stats.misses,
                stats.corrupt_entries,
                stats.failed_stores
            ),
            (1, 1, 1, 1)
        );
    });
}
