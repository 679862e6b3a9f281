//! A fresh process's disk hit keys its program without loading NVRTC: the program cache's note
//! on the NVRTC file the loader opens, end to end, with the stub driver and NVRTC of
//! `stub/c` (built with the C compiler), each request in a process of its own:
//!
//! 1. the first run finds no note: it loads NVRTC to ask its version, compiles, and stores the
//!    entry and the note;
//! 2. the next runs key from the note and hit without mapping NVRTC at all, and store nothing
//!    (one entry file per program: no second copy);
//! 3. the note removed, NVRTC's file replaced in place, or another loader environment
//!    (`LD_LIBRARY_PATH`): NVRTC is loaded and asked, the note written anew, and the run after
//!    that needs NVRTC no more; the hits store nothing;
//! 4. a cached link does the same for nvJitLink: the fresh process's hit maps no nvJitLink,
//!    from the note or from the link's noted copy alone; with noted copies off, one entry;
//! 5. a note that proves wrong is rewritten by the first process that learns NVRTC's own
//!    version, even one where NVRTC was loaded by someone else first, so the next one maps no
//!    NVRTC;
//! 6. the explicit path (`Program::cache_key`, then the cache's `get`) keys from the note of
//!    the open on-disk cache as well: NVRTC mapped in the first run only;
//! 7. a planted note naming a file other than the one the loader would open (with that file's
//!    true identity, nothing watched) is refused, on both paths: NVRTC is loaded and the note
//!    written anew;
//! 8. a note naming the right file and a wrong version is rewritten by the first fresh
//!    process, and the next maps no NVRTC, on both paths.
//!
//! A `main` of its own (`harness = false`): each run is a child process with the library
//! variables set before anything loads a library. Without a C compiler it prints that it
//! skipped (and fails under `CI`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use cuda_safe::cache::{CacheKey, FileStreamProgramCache, ProgramCache};
use cuda_safe::{CodeKind, KernelCache, Program, ProgramOptions};

use cuda_safe_stub as stub;

/// Set in a child: the cache directory it requests its kernel through.
const CHILD: &str = "CUDA_SAFE_CACHE_NOTES_CHILD";
/// Set in a child (to anything): it links through the cache instead.
const LINK_CHILD: &str = "CUDA_SAFE_CACHE_NOTES_LINK";
/// Set in a child (to anything): its cache keeps no noted copies.
const PLAIN_CHILD: &str = "CUDA_SAFE_CACHE_NOTES_PLAIN";
/// Set in a child (to anything): it keys with `Program::cache_key` and looks up by hand.
const EXPLICIT_CHILD: &str = "CUDA_SAFE_CACHE_NOTES_EXPLICIT";
/// Set in a child (to a file of NVRTC's name): it requests its kernel, then loads that file
/// (as another library of the process could load its own NVRTC) and requests a second
/// program's.
const PRELOAD_CHILD: &str = "CUDA_SAFE_CACHE_NOTES_PRELOAD";
/// Set in a child (to anything): it requests the second program's kernel alone.
const SECOND_CHILD: &str = "CUDA_SAFE_CACHE_NOTES_SECOND";
/// The version the stub NVRTC gives (`stub/c/libnvrtc_stub.c`).
const STUB_VERSION: &str = "CUDA_SAFE_STUB_NVRTC_VERSION";
/// The file name NVRTC is loaded from (a copy of the stub, apart from the driver's).
const NVRTC_FILE: &str = "libnvrtc-stub.so";
/// The file name nvJitLink is loaded from (another copy).
const NVJITLINK_FILE: &str = "libnvjitlink-stub.so";

fn main() -> ExitCode {
    if let Some(dir) = std::env::var_os(CHILD) {
        return child(Path::new(&dir));
    }
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        println!("cache_notes: notes are made on Linux with glibc only; skipped");
        return ExitCode::SUCCESS;
    }
    let scratch = tempfile::Builder::new()
        .prefix("cuda-safe-notes-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a temporary directory under the target directory");
    let driver = scratch.path().join("libcuda-stub.so");
    if let Err(reason) = stub::compile(&driver) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so the stub must build: {reason}"
        );
        println!("cache_notes: skipped: {reason}");
        return ExitCode::SUCCESS;
    }
    let nvrtc = scratch.path().join(NVRTC_FILE);
    std::fs::copy(&driver, &nvrtc).expect("a copy of the stub for NVRTC");
    std::fs::copy(&driver, scratch.path().join(NVJITLINK_FILE)).expect("a copy for nvJitLink");
    let cache = scratch.path().join("cache");
    let run = |extra: &[(&str, &str)]| request(&driver, &nvrtc, &cache, extra);
    links(&run, scratch.path());
    wrong_note(&run, scratch.path());
    explicit(&run, scratch.path());
    kernels(&run, scratch.path(), &nvrtc);
    println!("cache_notes: 1 passed, 0 failed");
    ExitCode::SUCCESS
}

/// A run that loaded its compiler: `hit` as given, `inserted` entries stored.
const fn asked(hit: bool, inserted: u64) -> Run {
    Run {
        nvrtc_mapped: true,
        hit,
        inserted,
    }
}

/// A run that hit without loading its compiler, and stored nothing.
const NOTED_HIT: Run = Run {
    nvrtc_mapped: false,
    hit: true,
    inserted: 0,
};

/// Steps 1 to 3, in the default cache (`KernelCache` requests), with steps 7 and 8 there.
fn kernels(run: &dyn Fn(&Env) -> Run, dir: &Path, nvrtc: &Path) {
    let cache = dir.join("cache");
    assert_eq!(run(&[]), asked(false, 1), "the first run compiles");
    for _ in 0..2 {
        assert_eq!(
            run(&[]),
            NOTED_HIT,
            "a hit needs no NVRTC and stores nothing"
        );
    }
    assert_eq!(note_files(&cache).len(), 1, "one note, on NVRTC");
    assert_eq!(
        (entry_count(&cache), noted_entries(&cache).len()),
        (1, 0),
        "one entry file for the program: no noted copy"
    );

    std::fs::remove_dir_all(cache.join("notes")).unwrap();
    assert_eq!(run(&[]), asked(true, 0), "no note: NVRTC is asked");
    assert_eq!(run(&[]), NOTED_HIT, "and noted again");

    // Replaced in place: same path, new contents (one byte more, still a library).
    let mut bytes = std::fs::read(nvrtc).unwrap();
    bytes.push(0);
    std::fs::write(nvrtc, bytes).unwrap();
    assert_eq!(run(&[]), asked(true, 0), "a changed file is asked");
    assert_eq!(run(&[]), NOTED_HIT, "and noted again");

    let decoy = dir.join("decoy");
    std::fs::create_dir(&decoy).unwrap();
    let decoy = decoy.join(NVRTC_FILE);
    std::fs::copy(nvrtc, &decoy).unwrap();
    foreign_note(run, &cache, &[], &decoy);
    wrong_version(run, &cache, &[], asked(true, 0));

    let elsewhere = dir.join("lib");
    std::fs::create_dir(&elsewhere).unwrap();
    let other = [("LD_LIBRARY_PATH", elsewhere.to_str().unwrap())];
    assert_eq!(run(&other), asked(true, 0), "another search is asked");
    assert_eq!(run(&other), NOTED_HIT);
    assert_eq!(
        (entry_count(&cache), noted_entries(&cache).len()),
        (1, 0),
        "every run keyed the program alike"
    );
    assert_eq!(note_files(&cache).len(), 2, "a note per search");
}

/// Steps 6 to 8 in a cache of their own (`dir/explicit`), keyed by `Program::cache_key`.
fn explicit(run: &dyn Fn(&Env) -> Run, dir: &Path) {
    let cache = dir.join("explicit");
    let explicit = [(EXPLICIT_CHILD, "1"), (CHILD, cache.to_str().unwrap())];
    assert_eq!(run(&explicit), asked(false, 1), "the first run compiles");
    for _ in 0..2 {
        assert_eq!(run(&explicit), NOTED_HIT, "the key from the note");
    }
    let decoy = dir.join("explicit-decoy");
    std::fs::create_dir(&decoy).unwrap();
    let decoy = decoy.join(NVRTC_FILE);
    std::fs::copy(dir.join(NVRTC_FILE), &decoy).unwrap();
    foreign_note(run, &cache, &explicit, &decoy);
    // The key made from the wrong note misses; the compile learns NVRTC's version and the
    // note is rewritten (the code stored under that key, which no later process makes).
    wrong_version(run, &cache, &explicit, asked(false, 1));
}

/// Step 7: the note of `cache` replaced by one naming `decoy` (a copy of NVRTC elsewhere,
/// with its true identity, nothing watched): refused, and written anew.
fn foreign_note(run: &dyn Fn(&Env) -> Run, cache: &Path, extra: &Env, decoy: &Path) {
    let (key, text) = the_note(cache);
    let version = text
        .lines()
        .find_map(|line| line.strip_prefix("value\t"))
        .expect("a value line");
    let planted = format!(
        "cuda-safe library note 1\nvalue\t{version}\nopened\t{}\t{}\n",
        decoy.display(),
        identity(decoy)
    );
    plant(cache, &key, &planted);
    assert_eq!(
        run(extra),
        asked(true, 0),
        "a note naming a file the loader would not open is refused"
    );
    assert_ne!(the_note(cache).1, planted, "and written anew");
    assert_eq!(run(extra), NOTED_HIT);
}

/// Step 8: the note of `cache` naming a version NVRTC does not give: the first run (which
/// then sees `first`) rewrites it, the next maps no NVRTC.
fn wrong_version(run: &dyn Fn(&Env) -> Run, cache: &Path, extra: &Env, first: Run) {
    let (key, text) = the_note(cache);
    let wrong: String = text
        .lines()
        .map(|line| match line.strip_prefix("value\t") {
            Some(_) => "value\t12.7\n".to_owned(),
            None => format!("{line}\n"),
        })
        .collect();
    assert_ne!(wrong, text, "the stub NVRTC is not 12.7");
    plant(cache, &key, &wrong);
    assert_eq!(run(extra), first, "the wrong version is found out");
    assert_eq!(the_note(cache).1, text, "the note is rewritten");
    assert_eq!(run(extra), NOTED_HIT, "and the next process needs no NVRTC");
}

/// The note files of the cache at `cache`.
fn note_files(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache.join("notes"))
        .map(|listing| listing.map(|item| item.unwrap().path()).collect())
        .unwrap_or_default()
}

/// The one note of the cache at `cache`: its key and text.
fn the_note(cache: &Path) -> (CacheKey, String) {
    let files = note_files(cache);
    assert_eq!(files.len(), 1, "one note in {}", cache.display());
    let name = files[0].file_name().unwrap().to_str().unwrap();
    let key: CacheKey = name.parse().unwrap();
    let note = FileStreamProgramCache::new(cache)
        .unwrap()
        .get_note(&key)
        .expect("a sound note");
    (key, String::from_utf8(note).unwrap())
}

/// Stores `text` as the note under `key` of the cache at `cache`, as its user could.
fn plant(cache: &Path, key: &CacheKey, text: &str) {
    FileStreamProgramCache::new(cache)
        .unwrap()
        .put_note(key, text.as_bytes())
        .unwrap();
}

/// A file's identity as a note records it (`docs/program-cache.md`).
fn identity(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    format!(
        "{}:{}:{}:{}.{}:{}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

fn entry_count(cache: &Path) -> u64 {
    FileStreamProgramCache::new(cache)
        .unwrap()
        .stats()
        .unwrap()
        .entries
}

/// The entry files with a note inside (the payload's flag byte, after the 68-byte header,
/// has bit 1 set: `docs/program-cache.md`).
fn noted_entries(cache: &Path) -> Vec<PathBuf> {
    let mut noted = Vec::new();
    for shard in std::fs::read_dir(cache.join("entries")).unwrap() {
        for entry in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if bytes.get(69).is_some_and(|flags| flags & 2 != 0) {
                noted.push(path);
            }
        }
    }
    noted
}

/// Step 4, in caches of their own (`dir/links`, `dir/plain-links`): a link, a hit from the
/// note, a hit from the noted copy alone; with noted copies off, one entry file.
fn links(run: &dyn Fn(&Env) -> Run, dir: &Path) {
    let cache = dir.join("links");
    let (cache_text, library) = (cache.to_str().unwrap(), dir.join(NVJITLINK_FILE));
    let library = library.to_str().unwrap();
    let link = [
        (LINK_CHILD, "1"),
        (CHILD, cache_text),
        (cuda_safe::nvjitlink_sys::LIBNVJITLINK_PATH_ENV, library),
    ];
    let linked = run(&link);
    assert!(
        linked.nvrtc_mapped && !linked.hit,
        "the first run links: {linked:?}"
    );
    assert_eq!(noted_entries(&cache).len(), 1, "the link's noted copy");
    assert_eq!(run(&link), NOTED_HIT, "a cached link needs no nvJitLink");
    std::fs::remove_dir_all(cache.join("notes")).unwrap();
    assert_eq!(
        run(&link),
        NOTED_HIT,
        "the link's noted copy holds its note"
    );

    let plain = dir.join("plain-links");
    let plain_link = [
        (LINK_CHILD, "1"),
        (PLAIN_CHILD, "1"),
        (CHILD, plain.to_str().unwrap()),
        (cuda_safe::nvjitlink_sys::LIBNVJITLINK_PATH_ENV, library),
    ];
    let linked = run(&plain_link);
    assert!(linked.nvrtc_mapped && !linked.hit, "{linked:?}");
    assert_eq!(run(&plain_link), NOTED_HIT, "the note on nvJitLink serves");
    assert_eq!(
        (entry_count(&plain), noted_entries(&plain).len()),
        (1, 0),
        "one entry file, no noted copy"
    );
}

/// Step 5, in a cache of its own (`dir/versions`): a note on NVRTC 12.4; then NVRTC of the
/// same file says 12.6 in a process that loaded another NVRTC before the note could be
/// checked, and compiles a second program: the note is rewritten there, so the next process
/// hits the second program's 12.6 entry without NVRTC.
fn wrong_note(run: &dyn Fn(&Env) -> Run, dir: &Path) {
    let cache = dir.join("versions");
    let cache = cache.to_str().unwrap();
    assert_eq!(
        run(&[(CHILD, cache), (STUB_VERSION, "12.4")]),
        asked(false, 1)
    );
    let other = dir.join("other-nvrtc");
    std::fs::create_dir(&other).unwrap();
    let other = other.join("libnvrtc.so.12");
    std::fs::copy(dir.join(NVRTC_FILE), &other).unwrap();
    let other = other.to_str().unwrap();
    let preloaded = run(&[
        (CHILD, cache),
        (STUB_VERSION, "12.6"),
        (PRELOAD_CHILD, other),
    ]);
    assert_eq!(
        preloaded,
        asked(true, 1),
        "the first program from the 12.4 note, the second compiled by 12.6"
    );
    assert_eq!(entry_count(Path::new(cache)), 2, "an entry per version");
    assert_eq!(
        run(&[(CHILD, cache), (STUB_VERSION, "12.6"), (SECOND_CHILD, "1")]),
        NOTED_HIT,
        "the note was rewritten: the 12.6 entry is the hit"
    );
}

/// Extra environment variables of a run.
type Env<'a> = [(&'a str, &'a str)];

/// What one run saw (`nvrtc_mapped`: the compiler of the run, nvJitLink for a link; the
/// entries the run's cache stored).
#[derive(Debug, PartialEq, Eq)]
struct Run {
    nvrtc_mapped: bool,
    hit: bool,
    inserted: u64,
}

/// One request in a fresh process, the stub as the driver and NVML, its copy as NVRTC.
fn request(driver: &Path, nvrtc: &Path, cache: &Path, extra: &[(&str, &str)]) -> Run {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, cache)
        .env(cuda_safe::sys::LIBCUDA_PATH_ENV, driver)
        .env(cuda_safe::nvml_sys::LIBNVML_PATH_ENV, driver)
        .env(cuda_safe::nvrtc_sys::LIBNVRTC_PATH_ENV, nvrtc)
        .env_remove("LD_LIBRARY_PATH")
        .envs(extra.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let field = |name: &str| {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .to_owned()
    };
    Run {
        nvrtc_mapped: field("nvrtc_mapped=") == "1",
        hit: field("hit=") == "1",
        inserted: field("inserted=").parse().unwrap(),
    }
}

/// Prints what a child saw: whether `library` is mapped, whether it hit, what it stored.
fn report(library: &str, hit: bool, inserted: u64) -> ExitCode {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mapped = maps.lines().any(|line| line.ends_with(library));
    println!(
        "nvrtc_mapped={} hit={} inserted={inserted}",
        u8::from(mapped),
        u8::from(hit)
    );
    ExitCode::SUCCESS
}

/// The child: a kernel through a `KernelCache` over the disk cache at `dir`, as a user's
/// program asks for it (or keyed by hand, or a link).
fn child(dir: &Path) -> ExitCode {
    let device = cuda_safe::Device::new(0).expect("the stub's device");
    device.set_current().expect("a current context");
    if std::env::var_os(LINK_CHILD).is_some() {
        return link_child(dir);
    }
    let options = ProgramOptions::default().arch("sm_90");
    let first = "extern \"C\" __global__ void twice() {}";
    if std::env::var_os(EXPLICIT_CHILD).is_some() {
        return explicit_child(dir, Program::new(first, options).unwrap());
    }
    // Another program (another key) with the kernel the stub driver knows.
    let second = "extern \"C\" __global__ void twice() { /* the second program */ }";
    let kernels = KernelCache::new(FileStreamProgramCache::new(dir).unwrap());
    let request = |source: &str, name: &str| {
        let program = Program::new(source, options.clone()).unwrap();
        kernels
            .kernel(&program, CodeKind::Ptx, name)
            .expect("the kernel");
    };
    if std::env::var_os(SECOND_CHILD).is_some() {
        request(second, "twice");
    } else {
        request(first, "twice");
    }
    let _other = std::env::var_os(PRELOAD_CHILD).map(|path| {
        // SAFETY: a copy of the stub, whose initialisers do nothing.
        let library = unsafe { libloading::Library::new(path) }.expect("the other NVRTC");
        request(second, "twice");
        library
    });
    let stats = kernels.programs().stats().unwrap();
    report(NVRTC_FILE, stats.hits == 1, stats.insertions)
}

/// The explicit child: the cache opened, the key made, the entry looked up, as `cuda.core`'s
/// users write it; a miss compiles and stores.
fn explicit_child(dir: &Path, program: Program) -> ExitCode {
    let cache = FileStreamProgramCache::new(dir).unwrap();
    let key = program.cache_key(CodeKind::Ptx).unwrap();
    let hit = match cache.get(&key).unwrap() {
        Some(code) => code.kind() == CodeKind::Ptx,
        None => {
            let compiled = program.compile(CodeKind::Ptx).unwrap();
            cache.put(&key, compiled.code()).unwrap();
            false
        }
    };
    report(NVRTC_FILE, hit, cache.stats().unwrap().insertions)
}

/// The link child: two LTO-IR units (compiled before the link, not through its cache) linked
/// through the disk cache at `dir`.
fn link_child(dir: &Path) -> ExitCode {
    let arch = "sm_90";
    let mut linker =
        cuda_safe::Linker::new(cuda_safe::LinkerOptions::default().arch(arch).lto(true)).unwrap();
    for (name, source) in [
        ("a.ltoir", "__device__ int a() { return 1; }"),
        ("b.ltoir", "__device__ int b() { return 2; }"),
    ] {
        let options = ProgramOptions::default()
            .arch(arch)
            .relocatable_device_code(true);
        let code = Program::new(source, options)
            .unwrap()
            .compile(CodeKind::LtoIr)
            .unwrap();
        linker.add_compiled(code.code(), name).unwrap();
    }
    let cache = FileStreamProgramCache::new(dir)
        .unwrap()
        .with_noted_copies(std::env::var_os(PLAIN_CHILD).is_none());
    let linked = linker
        .link_cached(CodeKind::Cubin, &cache)
        .expect("the link");
    let inserted = cache.stats().unwrap().insertions;
    report(NVJITLINK_FILE, linked.from_cache(), inserted)
}
