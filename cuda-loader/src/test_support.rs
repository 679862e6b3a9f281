//! What the loader's tests share: private temporary folders, copies of this process's own
//! libraries, and workers run in a child process (a test whose `dlopen` could kill the process
//! runs there, so the test binary survives to report it). Compiled for tests only: an
//! `expect` here fails a test, never a user's process.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder under the temporary directory, named after `stem` and this process, with
/// permissions `mode` (set explicitly: the umask must not decide whether the loader trusts it).
pub(crate) fn temp_dir(stem: &str, mode: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuda-loader-{stem}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    set_mode(&dir, mode);
    dir
}

/// Sets `path`'s permission bits to `mode`.
pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Compiles `source` into a shared library `lib<stem>.so` in a fresh private folder (see
/// [`temp_dir`]; the library `0755`); `None` (with the reason printed) where no C compiler
/// runs.
pub(crate) fn compiled_probe(stem: &str, source: &str) -> Option<PathBuf> {
    let dir = temp_dir(stem, 0o700);
    let (c_file, library) = (dir.join("probe.c"), dir.join(format!("lib{stem}.so")));
    std::fs::write(&c_file, source).expect("write the probe's source");
    let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let built = Command::new(compiler)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&c_file)
        .status();
    match built {
        Ok(status) if status.success() => {
            set_mode(&library, 0o755);
            Some(library)
        }
        other => {
            println!("skipped: no C compiler built the probe library ({other:?})");
            None
        }
    }
}

/// Removes a probe's folder (a loaded library stays mapped).
pub(crate) fn remove_probe(library: &Path) {
    if let Some(dir) = library.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The absolute path of the library of this process whose file name starts with `prefix`
/// (`libc.so`), from its memory map; `None` where there is none (not Linux).
pub(crate) fn loaded_library(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            Path::new(path)
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
        })
        .map(PathBuf::from)
}

/// Runs the ignored test `worker` (its full path, `elf::tests::worker`) alone in a child
/// process of this test binary, with `vars` set and `removed` unset; its output, after checking
/// that it exited rather than died of a signal (a SIGBUS in `dlopen`).
pub(crate) fn run_worker(worker: &str, vars: &[(&str, &Path)], removed: &[&str]) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args([
        worker,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (name, value) in vars {
        command.env(name, value);
    }
    for name in removed {
        command.env_remove(name);
    }
    let output = command.output().expect("the worker runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.code().is_some(),
        "the worker died ({}), so the process that loaded the library would have too:\n{stdout}",
        output.status
    );
    assert!(output.status.success(), "the worker failed:\n{stdout}");
    output
}

/// What follows `prefix` on each line of `output`'s standard output that holds it (the first
/// such line also holds the test harness's `test ... ` before it).
pub(crate) fn reported(output: &Output, prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once(prefix))
        .map(|(_, report)| report.to_owned())
        .collect()
}

/// The override variable of [`open_worker`]'s spec.
pub(crate) const OVERRIDE_VAR: &str = "CUDA_LOADER_TEST_OVERRIDE";

/// The toolkit root variable of [`open_worker`]'s spec.
pub(crate) const ROOT_VAR: &str = "CUDA_LOADER_TEST_ROOT";

/// The one file name of [`open_worker`]'s spec.
pub(crate) const PROBE_FILE_NAME: &str = "libcuda-loader-test-probe.so.1";

/// [`open_worker`]'s full name, for [`run_worker`].
pub(crate) const OPEN_WORKER: &str = "test_support::open_worker";

/// Worker: opens the spec whose override is [`OVERRIDE_VAR`] and whose toolkit root is
/// [`ROOT_VAR`], as a `-sys` crate opens its library, and prints `opened: <path>`, or
/// `tried: <candidate> | <reason>` for each candidate tried.
#[test]
#[ignore = "a worker: run in a child process by the tests that need one"]
fn open_worker() {
    use crate::{EntryPoint, Library, LibrarySpec, LoadError};
    static SPEC: LibrarySpec = LibrarySpec {
        name: "the probe",
        env_var: OVERRIDE_VAR,
        file_names: &[PROBE_FILE_NAME],
        search_dirs: &[ROOT_VAR],
        wheel_dirs: &[],
        global: false,
    };
    static NO_ENTRY_POINTS: [EntryPoint; 0] = [];
    // SAFETY: the candidates are the tests' own: copies of this process's libc (truncated, so
    // refused before they load) or probes without initialisers; no symbol is called.
    match unsafe { Library::open(&SPEC, &NO_ENTRY_POINTS) } {
        Ok(library) => println!("opened: {}", library.path().display()),
        Err(LoadError::LibraryNotFound { tried, .. }) => {
            for attempt in tried {
                println!("tried: {} | {}", attempt.candidate, attempt.reason);
            }
        }
        Err(error) => println!("error: {error}"),
    }
}
