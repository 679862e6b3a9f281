use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use cuda_sys::LibrarySpec;

use super::{Search, note_of};

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
    let search = search(&[]).unwrap();
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
