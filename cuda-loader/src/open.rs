//! Opening a library file: the first of its candidates that the dynamic loader accepts.

use std::path::{Path, PathBuf};

use crate::trust::Trust;
use crate::{Attempt, LoadError};

/// Opens the first of `candidates` that is not refused before the dynamic loader sees it (see
/// [`refusal`]) and that the dynamic loader accepts: its path and handle. The error names the
/// library `name` and lists every candidate tried, with the reason for each.
///
/// # Safety
///
/// Opening a library runs its initialisers: every candidate must be a library whose
/// initialisers are sound to run in this process (at this point, from any thread).
pub(crate) unsafe fn open_first_candidate(
    name: &'static str,
    candidates: impl IntoIterator<Item = PathBuf>,
    global: bool,
) -> Result<(PathBuf, libloading::Library), LoadError> {
    let trust = Trust::from_env();
    let mut tried = Vec::new();
    for candidate in candidates {
        if let Some(reason) = refusal(name, &candidate, trust) {
            tried.push(Attempt {
                candidate: candidate.display().to_string(),
                reason,
            });
            continue;
        }
        // SAFETY: loading a library runs its initialisers; the caller promises that those of
        // every candidate are sound to run in this process.
        match unsafe { open_path(&candidate, global) } {
            Ok(library) => return Ok((candidate, library)),
            Err(error) => tried.push(Attempt {
                candidate: candidate.display().to_string(),
                reason: reason(&error),
            }),
        }
    }
    Err(LoadError::LibraryNotFound {
        library: name,
        tried,
    })
}

/// The dynamic loader's message: libloading's summary and, when it has one, the `dlerror` text.
fn reason(error: &libloading::Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.to_string(),
    }
}

/// Opens `path`. When `global` (Unix), with `RTLD_NOW | RTLD_GLOBAL`, as a library the
/// executable is linked to is loaded at startup: every symbol is bound at once (a library that
/// cannot be bound fails here, with the loader's message) and joins the process's global
/// scope. On an H200, launches from 8 threads ran 1.6–2.1 % faster with the driver opened so
/// than with libloading's `RTLD_LAZY | RTLD_LOCAL` (11 of 16 paired rounds, both ABIs), which
/// the other libraries keep.
///
/// # Safety
///
/// As [`libloading::Library::new`]: the library's initialisers run.
unsafe fn open_path(
    path: &std::path::Path,
    global: bool,
) -> Result<libloading::Library, libloading::Error> {
    #[cfg(unix)]
    if global {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // SAFETY: the caller's promise.
        return unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }.map(Into::into);
    }
    #[cfg(not(unix))]
    let _ = global;
    // SAFETY: the caller's promise.
    unsafe { libloading::Library::new(path) }
}

/// Why `candidate`, a candidate for `library`, is not handed to the dynamic loader: a relative
/// path (see [`relative_path`]), not a regular file (see [`not_a_regular_file`]), a path that
/// a user other than root and this one could change (see [`Trust::refusal`]: refused unless
/// `trust` allows it), or a file whose ELF headers do not fit it (see [`truncated`]). Every
/// library's candidates pass here, an override variable's value (`CUDA_SAFE_LIBNCCL`) among
/// them, so the rule is the same for all of them.
fn refusal(library: &str, candidate: &Path, trust: Trust) -> Option<String> {
    relative_path(candidate)
        .or_else(|| not_a_regular_file(candidate))
        .or_else(|| trust.refusal(library, candidate))
        .or_else(|| truncated(candidate))
}

/// Why `candidate`, a path to a file, is not handed to the dynamic loader: its ELF headers are
/// not those of this machine's objects, or they promise more than the file holds (a truncated
/// copy), which the dynamic loader would map and fault reading (SIGBUS, killing the process).
/// Never on systems whose libraries are not ELF files.
fn truncated(candidate: &Path) -> Option<String> {
    #[cfg(all(unix, not(target_vendor = "apple")))]
    {
        crate::elf::refusal(candidate)
    }
    #[cfg(not(all(unix, not(target_vendor = "apple"))))]
    {
        let _ = candidate;
        None
    }
}

/// The reason a relative path (`./libnccl.so.2`, `lib/libcuda.so.1`: one with a folder, which
/// the dynamic loader opens as it is) is refused: it would resolve against whatever the working
/// directory is, so a library planted there would be loaded, as the toolkit roots' rule says
/// ([`LibrarySpec::search_dirs`](crate::LibrarySpec::search_dirs)). An override naming one is
/// still the only candidate (an explicit choice is never replaced by another library): the
/// load fails, saying why. A bare file name (`libnccl.so.2`) is searched for by the loader, not
/// in the working directory, and passes.
fn relative_path(candidate: &Path) -> Option<String> {
    let folder = candidate.parent()?;
    if candidate.is_absolute() || folder.as_os_str().is_empty() {
        return None;
    }
    Some(
        "a relative path, not opened: it would resolve against the working directory; give an \
         absolute path"
            .to_owned(),
    )
}

/// Why `candidate` is not handed to the dynamic loader: it is a path (it holds a `/`, so the
/// loader would open it as it is rather than search for it) to something other than a regular
/// file. `dlopen` of a FIFO blocks until a writer appears, and opening a device file can block
/// or act; a directory the loader refuses anyway, named here more plainly. `None` for a bare
/// file name, a missing path (the loader's own message says so) and a regular file, or a
/// link to one.
fn not_a_regular_file(candidate: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::FileTypeExt;
        if !candidate.as_os_str().as_bytes().contains(&b'/') {
            return None;
        }
        let kind = std::fs::metadata(candidate).ok()?.file_type();
        let what = if kind.is_file() {
            return None;
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "of an unknown kind"
        };
        Some(format!("{what}, not a regular file: not opened"))
    }
    #[cfg(not(unix))]
    {
        let _ = candidate;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{not_a_regular_file, refusal, relative_path};
    #[cfg(target_os = "linux")]
    use crate::test_support::{compiled_probe, remove_probe};
    use crate::trust::Trust;
    use crate::{EntryPoint, Library, LoadError};
    use std::path::{Path, PathBuf};

    static NO_ENTRY_POINTS: [EntryPoint; 0] = [];

    #[test]
    fn missing_library_lists_every_path_tried() {
        let candidates = [
            PathBuf::from("/nonexistent/libcuda.so.1"),
            PathBuf::from("libcuda-loader-test-missing.so.1"),
        ];
        // SAFETY: neither candidate exists, so no library is loaded.
        let error =
            unsafe { Library::open_first("the test library", candidates, &NO_ENTRY_POINTS) }
                .expect_err("neither candidate exists");
        let LoadError::LibraryNotFound { library, tried } = &error else {
            panic!("wrong error: {error:?}");
        };
        assert_eq!(*library, "the test library");
        let paths: Vec<&str> = tried.iter().map(|a| a.candidate.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/nonexistent/libcuda.so.1",
                "libcuda-loader-test-missing.so.1"
            ]
        );
        assert!(tried.iter().all(|a| !a.reason.is_empty()));
        let message = error.to_string();
        assert!(message.contains("/nonexistent/libcuda.so.1"), "{message}");
        assert!(
            message.contains("libcuda-loader-test-missing.so.1"),
            "{message}"
        );
    }

    /// A FIFO, a directory and a device file among the candidates are passed over with the
    /// reason, without being opened: `dlopen` of a FIFO would block until a writer came.
    #[cfg(target_os = "linux")]
    #[test]
    fn candidates_that_are_not_regular_files_are_not_opened() {
        let dir = std::env::temp_dir().join(format!("cuda-loader-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let fifo = dir.join("libcuda.so.1");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|status| status.success()) {
            println!("skipped: mkfifo did not make a FIFO");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        let candidates = [fifo.clone(), dir.clone(), PathBuf::from("/dev/null")];
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // SAFETY: none of the candidates is a library, so none is loaded.
            let opened = unsafe { Library::open_first("the probe", candidates, &NO_ENTRY_POINTS) };
            let _ = sender.send(opened.map(|_| ()));
        });
        let answer = receiver.recv_timeout(std::time::Duration::from_secs(30));
        let _ = std::fs::remove_dir_all(&dir);
        let error = answer
            .expect("opening returns instead of blocking on the FIFO")
            .expect_err("no candidate is a library");
        let LoadError::LibraryNotFound { tried, .. } = &error else {
            panic!("wrong error: {error:?}");
        };
        let reasons: Vec<&str> = tried.iter().map(|a| a.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "a FIFO, not a regular file: not opened",
                "a directory, not a regular file: not opened",
                "a device, not a regular file: not opened",
            ]
        );
    }

    #[test]
    fn bare_names_missing_paths_and_regular_files_go_to_the_loader() {
        assert_eq!(not_a_regular_file(Path::new("libcuda.so.1")), None);
        assert_eq!(
            not_a_regular_file(Path::new("/nonexistent/libcuda.so.1")),
            None
        );
        let file = std::env::temp_dir().join(format!("cuda-loader-file-{}", std::process::id()));
        std::fs::write(&file, b"not a library").expect("write");
        assert_eq!(not_a_regular_file(&file), None);
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn relative_paths_are_refused_and_bare_names_and_absolute_paths_are_not() {
        for relative in ["./libcuda.so.1", "lib/libcuda.so.1", "../x/libnccl.so.2"] {
            let reason = refusal("the probe", Path::new(relative), Trust::Strict).expect("refused");
            assert!(
                reason.starts_with("a relative path, not opened"),
                "{reason}"
            );
        }
        assert_eq!(relative_path(Path::new("libcuda.so.1")), None);
        assert_eq!(
            relative_path(Path::new("/opt/cuda/lib64/libcuda.so.1")),
            None
        );
        // SAFETY: the only candidate is refused before the dynamic loader sees it.
        let error = unsafe {
            Library::open_first(
                "the probe",
                [PathBuf::from("./libc.so.6")],
                &NO_ENTRY_POINTS,
            )
        }
        .unwrap_err();
        let LoadError::LibraryNotFound { tried, .. } = &error else {
            panic!("wrong error: {error:?}");
        };
        assert_eq!(tried.len(), 1);
        assert_eq!(tried[0].candidate, "./libc.so.6");
        assert!(tried[0].reason.contains("working directory"), "{error}");
    }

    #[test]
    fn no_candidates_is_an_error_not_a_panic() {
        // SAFETY: there is no candidate, so no library is loaded.
        let error = unsafe { Library::open_first("nothing", [], &NO_ENTRY_POINTS) }.unwrap_err();
        assert_eq!(
            error.to_string(),
            "nothing could not be loaded; tried no candidates"
        );
    }

    /// A spec whose only candidate is `path`, opened with `global`.
    #[cfg(target_os = "linux")]
    fn spec_for(path: &std::path::Path, global: bool) -> crate::LibrarySpec {
        let file: &'static str = Box::leak(path.to_str().expect("UTF-8 path").into());
        crate::LibrarySpec {
            name: "the probe",
            env_var: "CUDA_LOADER_TEST_NO_SUCH_VARIABLE",
            file_names: Box::leak(Box::new([file])),
            search_dirs: &[],
            wheel_dirs: &[],
            global,
        }
    }

    /// Opens the probe at `path` (its one function `symbol` returns 7) through a spec with
    /// `global`; whether `symbol` is then in the process's global scope, which `dlopen(NULL)`
    /// searches.
    #[cfg(target_os = "linux")]
    fn opened_symbol_is_global(
        path: &std::path::Path,
        symbol: &'static std::ffi::CStr,
        global: bool,
    ) -> bool {
        let entry_points: &'static [EntryPoint; 1] =
            Box::leak(Box::new([EntryPoint::new(symbol, None)]));
        // SAFETY: the probe has no initialisers and one function with the signature used.
        let library =
            unsafe { Library::open(&spec_for(path, global), entry_points) }.expect("opens");
        // SAFETY: the probe's function takes nothing and returns an int.
        let probe = unsafe { library.get::<unsafe extern "C" fn() -> i32>(0) }.expect("resolves");
        // SAFETY: as above.
        assert_eq!(unsafe { probe() }, 7);
        let this = libloading::os::unix::Library::this();
        // SAFETY: only looked up, never called through this handle.
        unsafe { this.get::<unsafe extern "C" fn() -> i32>(symbol.to_bytes()) }.is_ok()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_global_spec_serves_later_lookups_as_a_linked_library() {
        let source = "int cuda_loader_global_probe(void) { return 7; }\n";
        let Some(path) = compiled_probe("global", source) else {
            return;
        };
        assert!(opened_symbol_is_global(
            &path,
            c"cuda_loader_global_probe",
            true
        ));
        remove_probe(&path);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_local_spec_keeps_its_symbols_to_itself() {
        let source = "int cuda_loader_local_probe(void) { return 7; }\n";
        let Some(path) = compiled_probe("local", source) else {
            return;
        };
        assert!(!opened_symbol_is_global(
            &path,
            c"cuda_loader_local_probe",
            false
        ));
        remove_probe(&path);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_global_library_that_cannot_be_bound_fails_at_open_naming_the_symbol() {
        let Some(path) = compiled_probe(
            "unbound",
            "extern int cuda_loader_no_such_symbol(void);\n\
             int cuda_loader_unbound_probe(void) { return cuda_loader_no_such_symbol(); }\n",
        ) else {
            return;
        };
        static PROBE: [EntryPoint; 1] = [EntryPoint::new(c"cuda_loader_unbound_probe", None)];
        // SAFETY: the open fails (RTLD_NOW cannot bind the undefined function), so nothing runs.
        let error = unsafe { Library::open(&spec_for(&path, true), &PROBE) }
            .expect_err("every symbol is bound at open");
        let message = error.to_string();
        assert!(message.contains("cuda_loader_no_such_symbol"), "{message}");
        // A local library is bound lazily, as libloading opens it: the open succeeds (and a
        // call of the unbound function would fail, so none is made).
        // SAFETY: the probe has no initialisers; its function is never called.
        let local = unsafe { Library::open(&spec_for(&path, false), &PROBE) };
        assert!(local.is_ok(), "{local:?}");
        remove_probe(&path);
    }
}
