use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use cuda_sys::LibrarySpec;

use super::{Search, identity, note_of, resolve};

/// A library every Debian-like system has, which this test process does not link.
const ZLIB: LibrarySpec = LibrarySpec {
    name: "zlib (a test's stand-in)",
    env_var: "CUDA_SAFE_TEST_NO_SUCH_LIBRARY_PATH",
    file_names: &["libz.so.1"],
    search_dirs: &["CUDA_SAFE_TEST_NO_SUCH_ROOT"],
    wheel_dirs: &[],
    global: false,
};

fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
    move |var| {
        pairs
            .iter()
            .find(|(name, _)| *name == var)
            .map(|(_, value)| OsString::from(value))
    }
}

fn search(pairs: &'static [(&'static str, &'static str)]) -> Option<Search> {
    Search::with(&ZLIB, env(pairs), true)
}

/// The search whose one candidate, the override, is `file`.
fn opening(file: &Path) -> Search {
    let file: &'static str = Box::leak(file.to_str().unwrap().to_owned().into_boxed_str());
    let pairs = Box::leak(Box::new([("CUDA_SAFE_TEST_NO_SUCH_LIBRARY_PATH", file)]));
    search(pairs).unwrap()
}

#[test]
fn everything_the_search_reads_from_the_environment_is_in_the_key() {
    let key = |pairs| search(pairs).unwrap().note_key();
    let base = key(&[]);
    assert_eq!(base, key(&[]));
    for variant in [
        key(&[("LD_LIBRARY_PATH", "/opt/lib")]),
        key(&[("LD_LIBRARY_PATH", "/opt/lib:/usr/lib")]),
        key(&[("LD_PRELOAD", "/opt/lib/libz.so.1")]),
        key(&[("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2")]),
        key(&[("CUDA_SAFE_TEST_NO_SUCH_LIBRARY_PATH", "/opt/libz.so.1")]),
        key(&[("CUDA_SAFE_TEST_NO_SUCH_ROOT", "/opt/toolkit")]),
    ] {
        assert_ne!(variant, base);
    }
    for unclear in ["$ORIGIN/lib", "/opt/lib:$LIB"] {
        let pairs: &'static [(&str, &str)] = Box::leak(Box::new([("LD_LIBRARY_PATH", unclear)]));
        assert!(search(pairs).is_none(), "{unclear}");
    }
    // An empty element is the working directory; a relative one lies in it.
    let cwd = std::env::current_dir().unwrap();
    let relative = search(&[("LD_LIBRARY_PATH", "lib::/opt/lib")]).unwrap();
    assert_eq!(
        relative.library_path,
        [cwd.join("lib"), cwd.join("."), PathBuf::from("/opt/lib")]
    );
    assert_ne!(relative.note_key(), key(&[("LD_LIBRARY_PATH", "/opt/lib")]));
    assert!(Search::with(&ZLIB, env(&[]), false).is_none());
}

#[test]
fn a_note_holds_while_its_files_stay_and_misses_when_one_changes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libfake.so.1");
    fs::write(&file, b"one").unwrap();
    let watched_dir = dir.path().join("lib");
    fs::create_dir(&watched_dir).unwrap();
    let absent = dir.path().join("toolkit/libfake.so.1");
    let watched = [watched_dir.clone(), absent.clone()];
    let search = opening(&file);
    let note = |file: &Path| note_of(file, &watched, "13.0").unwrap();
    assert_eq!(search.recall(&note(&file)).as_deref(), Some("13.0"));

    // Replaced in place (same inode), renamed over, or a watched path changed: a miss.
    let before = note(&file);
    fs::write(&file, b"two!").unwrap();
    assert_eq!(search.recall(&before), None, "rewritten in place");
    let before = note(&file);
    let newer = dir.path().join("newer");
    fs::write(&newer, b"two!").unwrap();
    fs::rename(&newer, &file).unwrap();
    assert_eq!(search.recall(&before), None, "renamed over");
    let before = note(&file);
    fs::write(watched_dir.join("libfake.so.2"), b"x").unwrap();
    assert_eq!(
        search.recall(&before),
        None,
        "a file added to a watched directory"
    );
    let before = note(&file);
    fs::create_dir_all(absent.parent().unwrap()).unwrap();
    fs::write(&absent, b"x").unwrap();
    assert_eq!(search.recall(&before), None, "a candidate appeared");
    assert_eq!(search.recall(&note(&file)).as_deref(), Some("13.0"));

    // Notes that are not this module's, or damaged, are misses.
    let text = String::from_utf8(note(&file)).unwrap();
    for damaged in [
        text.replacen("library note 1", "library note 2", 1),
        text.replacen("opened", "watch", 1),
        text.replacen("value\t13.0\n", "", 1),
        format!("{text}opened\t{}\tabsent\n", file.display()),
        format!("{text}other\tline\n"),
        text.replacen("watch", "watch\t", 1),
    ] {
        assert_eq!(search.recall(damaged.as_bytes()), None, "{damaged}");
    }
    assert_eq!(search.recall(&[0xff, 0xfe]), None);
    assert!(note_of(&file, &watched, "").is_none());
    assert!(note_of(&file, &watched, "13.0\tx").is_none());
    assert!(note_of(&PathBuf::from("/tmp/a\nb"), &watched, "13.0").is_none());
}

/// A note naming a file other than the one the search would open is refused, though that
/// file is as the note says; so is any note when the search would open nothing it can tell.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn a_note_naming_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (file, other) = (
        dir.path().join("libfake.so.1"),
        dir.path().join("decoy.so.1"),
    );
    fs::write(&file, b"the library").unwrap();
    fs::write(&other, b"another library").unwrap();
    let search = opening(&file);
    let note = |named: &Path| note_of(named, &[], "13.0").unwrap();
    assert_eq!(search.recall(&note(&file)).as_deref(), Some("13.0"));
    assert_eq!(
        search.recall(&note(&other)),
        None,
        "another file, true identity"
    );
    let text = String::from_utf8(note(&file)).unwrap();
    let renamed = text.replacen(file.to_str().unwrap(), other.to_str().unwrap(), 1);
    assert_eq!(search.recall(renamed.as_bytes()), None, "another path");
    // The override is a directory: the loader refuses it, and no note holds.
    let directory = opening(dir.path());
    assert_eq!(directory.recall(&note(dir.path())), None);
}

/// The loader's order: the candidates in turn; a bare name in each `LD_LIBRARY_PATH`
/// directory, then through `ld.so.cache`; relative paths and non-files passed over; what
/// could be a CPU level's sub-directory says nothing.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn the_file_opened_is_told_in_the_loader_order() {
    let dir = tempfile::tempdir().unwrap();
    let name = "libcuda-safe-no-such-library.so.1";
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    fs::create_dir(&first).unwrap();
    fs::create_dir(&second).unwrap();
    let candidates = [PathBuf::from(name), second.join(name)];
    let library_path = [first.clone()];
    let pick = || resolve::pick(&candidates, &library_path, false);
    assert_eq!(pick(), None, "nothing to open");
    fs::write(second.join(name), b"x").unwrap();
    assert_eq!(pick(), Some(second.join(name)), "the second candidate");
    fs::write(first.join(name), b"x").unwrap();
    assert_eq!(pick(), Some(first.join(name)), "LD_LIBRARY_PATH first");
    fs::create_dir(first.join("glibc-hwcaps")).unwrap();
    assert_eq!(pick(), None, "a CPU level's directory could come first");

    let passed_over = [
        PathBuf::from("relative").join(name),
        first.clone(),
        second.join(name),
    ];
    assert_eq!(
        resolve::pick(&passed_over, &[], false),
        Some(second.join(name)),
        "a relative path and a directory are passed over"
    );

    // libc, through the machine's own cache: the file this process mapped.
    let getpid: unsafe extern "C" fn() -> libc::pid_t = libc::getpid;
    let libc = getpid as *const std::ffi::c_void;
    match (
        resolve::pick(&[PathBuf::from("libc.so.6")], &[], false),
        super::loader::file_of(libc),
    ) {
        (Some(picked), Some(mapped)) => assert_eq!(identity(&picked), identity(&mapped)),
        (picked, mapped) => println!("libc not told here ({picked:?}, {mapped:?}): skipped"),
    }
}

/// The whole round: a search made before the library is loaded, the file the loader opened
/// learnt from one of its symbols, recalled from the note; once loaded, no search is made.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn an_opened_library_is_learnt_from_its_symbol_and_recalled() {
    let Some(search) = Search::of(&ZLIB) else {
        println!("libz is loaded already (or the process is not clean): nothing to learn");
        return;
    };
    // SAFETY: zlib's initialisers are sound to run in any process.
    let library = match unsafe { libloading::Library::new("libz.so.1") } {
        Ok(library) => library,
        Err(error) => {
            println!("no libz.so.1 here ({error}): skipped");
            return;
        }
    };
    // SAFETY: only the address is used.
    let symbol = unsafe { library.get::<*const std::ffi::c_void>(b"zlibVersion\0") }.unwrap();
    let note = search
        .note(Path::new("libz.so.1"), *symbol, "1.3")
        .expect("the loaded file is found");
    assert_eq!(search.recall(&note).as_deref(), Some("1.3"));
    let text = String::from_utf8(note).unwrap();
    assert!(text.contains("\nwatch\t/etc/ld.so.cache\t"), "{text}");
    // A candidate that did not open names no file.
    assert!(
        search
            .note(Path::new("libz.so.9"), *symbol, "1.3")
            .is_none()
    );
    assert!(
        Search::of(&ZLIB).is_none(),
        "loaded now, so the loader would return it"
    );
    drop(library);
}

#[cfg(unix)]
#[test]
fn decimals_are_written_as_format_writes_them() {
    for value in [
        0i128,
        7,
        10,
        999,
        -1,
        -1_000_000_007,
        u64::MAX.into(),
        i64::MIN.into(),
    ] {
        let mut text = String::new();
        super::push_decimal(&mut text, value);
        assert_eq!(text, value.to_string());
    }
}

/// A note of a bare name found in an `LD_LIBRARY_PATH` directory: recalled while the
/// directories are as noted (their sub-directories not looked at again), missed when one
/// gains a CPU level's sub-directory, or when a link there that led nowhere comes to lead to a
/// file the loader would now open first.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn a_note_through_the_library_path_holds_while_its_directories_do() {
    let dir = tempfile::tempdir().unwrap();
    let name = "libcuda-safe-no-such-library.so.1";
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    fs::create_dir(&first).unwrap();
    fs::create_dir(&second).unwrap();
    fs::write(second.join(name), b"x").unwrap();
    let spec = LibrarySpec {
        file_names: &["libcuda-safe-no-such-library.so.1"],
        ..ZLIB
    };
    let path = format!("{}:{}", first.display(), second.display());
    let env = move |var: &str| (var == "LD_LIBRARY_PATH").then(|| OsString::from(&path));
    let search = Search::with(&spec, env, true).unwrap();
    let note = || {
        let watched: Vec<PathBuf> = search.library_path.clone();
        note_of(&second.join(name), &watched, "13.0").unwrap()
    };
    assert_eq!(search.recall(&note()).as_deref(), Some("13.0"));

    let before = note();
    fs::create_dir(first.join("glibc-hwcaps")).unwrap();
    assert_eq!(search.recall(&before), None, "a sub-directory appeared");
    fs::remove_dir(first.join("glibc-hwcaps")).unwrap();
    assert_eq!(search.recall(&note()).as_deref(), Some("13.0"));

    // A dangling link in the first directory: the directory stays as noted when its target
    // appears, but the loader would open the first directory's file now.
    let target = dir.path().join("elsewhere.so");
    std::os::unix::fs::symlink(&target, first.join(name)).unwrap();
    let before = note();
    assert_eq!(search.recall(&before).as_deref(), Some("13.0"));
    fs::write(&target, b"y").unwrap();
    assert_eq!(
        search.recall(&before),
        None,
        "a link came to lead to a file"
    );

    // A note that does not watch the directories has them looked at again.
    let unwatched = note_of(&first.join(name), &[], "13.0").unwrap();
    assert_eq!(search.recall(&unwatched).as_deref(), Some("13.0"));
    fs::create_dir(second.join("tls")).unwrap();
    assert_eq!(
        search.recall(&unwatched).as_deref(),
        Some("13.0"),
        "found before"
    );
    fs::create_dir(first.join("tls")).unwrap();
    assert_eq!(
        search.recall(&unwatched),
        None,
        "a sub-directory, looked at again"
    );
}
