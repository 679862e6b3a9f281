//! An opened library and its lazily resolved entry points.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Attempt, CudaVersion, Introduced, LibrarySpec, LoadError, NcclVersion};

/// One exported function of a library: its symbol and the release that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint {
    symbol: &'static CStr,
    since: Option<Introduced>,
}

impl EntryPoint {
    /// An entry point named `symbol`, introduced in CUDA `since` (`12040`) when known.
    pub const fn new(symbol: &'static CStr, since: Option<u32>) -> Self {
        let since = match since {
            Some(version) => Some(Introduced::Cuda(CudaVersion(version))),
            None => None,
        };
        Self { symbol, since }
    }

    /// An entry point of NCCL named `symbol`, introduced in the NCCL release whose
    /// `NCCL_VERSION_CODE` is `since` (`21800`) when known.
    pub const fn nccl(symbol: &'static CStr, since: Option<u32>) -> Self {
        let since = match since {
            Some(version) => Some(Introduced::Nccl(NcclVersion(version))),
            None => None,
        };
        Self { symbol, since }
    }

    /// The exported symbol, as the dynamic loader sees it (`cuMemAlloc_v2`).
    pub fn symbol(&self) -> &'static CStr {
        self.symbol
    }

    /// The symbol as text.
    pub fn name(&self) -> &'static str {
        self.symbol.to_str().unwrap_or("<non-UTF-8 symbol>")
    }

    /// The CUDA version that introduced this symbol, when the headers say so (`None` for an
    /// NCCL entry point: see [`introduced`](Self::introduced)).
    pub fn since(&self) -> Option<CudaVersion> {
        self.since.and_then(Introduced::cuda)
    }

    /// The release (CUDA or NCCL) that introduced this symbol, when the headers say so.
    pub fn introduced(&self) -> Option<Introduced> {
        self.since
    }
}

/// A loaded library with `N` entry points, each resolved on first use and then cached.
///
/// The `-sys` crates keep one `Library` per process in a static, so the addresses handed out by
/// [`get`](Self::get) stay valid for the life of the process. Resolution is thread-safe: two
/// threads racing to resolve the same entry point store the same address.
#[derive(Debug)]
pub struct Library<const N: usize> {
    name: &'static str,
    path: PathBuf,
    entry_points: &'static [EntryPoint; N],
    slots: [AtomicUsize; N],
    library: libloading::Library,
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
/// than with libloading's `RTLD_LAZY | RTLD_LOCAL` (11 of 16 paired rounds, both ABIs;
/// `docs/performance.md`, "Under contention"), which the other libraries keep.
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

/// Slot value of an entry point not looked up yet.
const UNRESOLVED: usize = 0;

/// Slot value of an entry point looked up and found missing, so `dlsym` is not asked again.
///
/// No function lives at address 1, so the value cannot collide with a resolved address.
const MISSING: usize = 1;

impl<const N: usize> Library<N> {
    /// Opens the library described by `spec`, trying each of its candidates in order.
    ///
    /// # Safety
    ///
    /// Opening a library runs its initialisers, and the methods built on the result call its
    /// symbols with the signatures `entry_points` claims. Every candidate of `spec` must be a
    /// library whose initialisers are sound to run in this process (at this point, from any
    /// thread), and whose exported symbols named in `entry_points` have the C signatures the
    /// callers of [`get`](Self::get) will use.
    pub unsafe fn open(
        spec: &LibrarySpec,
        entry_points: &'static [EntryPoint; N],
    ) -> Result<Self, LoadError> {
        // SAFETY: the caller vouches for every candidate of `spec`, as `open_first` requires.
        unsafe { Self::open_candidates(spec.name, spec.candidates(), entry_points, spec.global) }
    }

    /// Opens the first of `candidates` that the dynamic loader accepts, as a [`LibrarySpec`]
    /// with `global: false` is opened (`RTLD_LAZY | RTLD_LOCAL`).
    ///
    /// The error lists every candidate tried and the loader's reason for each.
    ///
    /// # Safety
    ///
    /// Opening a library runs its initialisers, and the methods built on the result call its
    /// symbols with the signatures `entry_points` claims. Every candidate must be a library whose
    /// initialisers are sound to run in this process (at this point, from any thread), and whose
    /// exported symbols named in `entry_points` have the C signatures the callers of
    /// [`get`](Self::get) will use.
    pub unsafe fn open_first(
        name: &'static str,
        candidates: impl IntoIterator<Item = PathBuf>,
        entry_points: &'static [EntryPoint; N],
    ) -> Result<Self, LoadError> {
        // SAFETY: the caller's promise, as this function requires.
        unsafe { Self::open_candidates(name, candidates, entry_points, false) }
    }

    /// [`open_first`](Self::open_first), with the symbols in the global scope when `global`.
    ///
    /// # Safety
    ///
    /// As [`open_first`](Self::open_first).
    unsafe fn open_candidates(
        name: &'static str,
        candidates: impl IntoIterator<Item = PathBuf>,
        entry_points: &'static [EntryPoint; N],
        global: bool,
    ) -> Result<Self, LoadError> {
        let mut tried = Vec::new();
        for candidate in candidates {
            if let Some(reason) = not_a_regular_file(&candidate) {
                tried.push(Attempt {
                    candidate: candidate.display().to_string(),
                    reason,
                });
                continue;
            }
            // SAFETY: loading a library runs its initialisers; the caller promises that those
            // of every candidate are sound to run in this process.
            match unsafe { open_path(&candidate, global) } {
                Ok(library) => {
                    return Ok(Self {
                        name,
                        path: candidate,
                        entry_points,
                        slots: [const { AtomicUsize::new(UNRESOLVED) }; N],
                        library,
                    });
                }
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

    /// The library's display name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The path or file name the library was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry points this library was opened with.
    pub fn entry_points(&self) -> &'static [EntryPoint; N] {
        self.entry_points
    }

    /// Whether the entry point at `index` exists in the loaded library (resolving it if needed).
    pub fn has(&self, index: usize) -> bool {
        self.resolve(index) != MISSING
    }

    /// The entry point at `index` as a function pointer of type `F`.
    ///
    /// The first call looks the symbol up; later calls cost one relaxed atomic load. A symbol
    /// found missing is remembered as such, so later calls fail without asking the dynamic
    /// loader again.
    ///
    /// # Safety
    ///
    /// `F` must be the exact C signature of `entry_points[index]`, and the pointer must not be
    /// called after this `Library` is dropped.
    ///
    /// # Panics
    ///
    /// Panics if `index >= N` (the generated callers only pass constant, in-range indices).
    #[inline(always)]
    pub unsafe fn get<F: Copy>(&self, index: usize) -> Result<F, LoadError> {
        const { assert!(size_of::<F>() == size_of::<usize>()) };
        // Relaxed is enough: the value is UNRESOLVED, MISSING or an address inside a library
        // that was fully mapped before this `Library` was published to other threads.
        let address = self.slots[index].load(Ordering::Relaxed);
        let address = if address <= MISSING {
            self.address(index)?
        } else {
            address
        };
        // SAFETY: `address` is the non-null address of the symbol, and the caller promises that
        // `F` is a function pointer type with its C signature (same size, asserted above).
        Ok(unsafe { std::mem::transmute_copy::<usize, F>(&address) })
    }

    /// The address of the entry point at `index`, or the error naming it when it is missing.
    #[cold]
    #[inline(never)]
    fn address(&self, index: usize) -> Result<usize, LoadError> {
        let address = self.resolve(index);
        if address == MISSING {
            let entry = &self.entry_points[index];
            return Err(LoadError::SymbolMissing {
                library: self.name,
                path: self.path.clone(),
                symbol: entry.name(),
                since: entry.introduced(),
            });
        }
        Ok(address)
    }

    /// The slot of the entry point at `index`, looking the symbol up the first time only: the
    /// result, an address or [`MISSING`], is stored so the dynamic loader is asked once.
    fn resolve(&self, index: usize) -> usize {
        let cached = self.slots[index].load(Ordering::Relaxed);
        if cached != UNRESOLVED {
            return cached;
        }
        let entry = &self.entry_points[index];
        // SAFETY: the symbol is only read as an address here; `get`'s caller states its type.
        let found = unsafe { self.library.get::<*mut std::ffi::c_void>(entry.symbol()) };
        let address = match found {
            Ok(symbol) if *symbol as usize > MISSING => *symbol as usize,
            _ => MISSING,
        };
        self.slots[index].store(address, Ordering::Relaxed);
        address
    }
}

#[cfg(test)]
mod tests {
    use super::{EntryPoint, Library, MISSING, UNRESOLVED, not_a_regular_file};
    use crate::LoadError;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::Ordering;

    static LIBC_ENTRY_POINTS: [EntryPoint; 3] = [
        EntryPoint::new(c"getpid", None),
        EntryPoint::new(c"cuNoSuchEntryPoint_v9", Some(12040)),
        EntryPoint::nccl(c"ncclNoSuchEntryPoint", Some(21800)),
    ];

    fn libc() -> Library<3> {
        // SAFETY: libc's initialisers have run already in this process; only lookups happen,
        // and the only function ever called is `getpid`, with its real signature.
        unsafe { Library::open_first("libc", [PathBuf::from("libc.so.6")], &LIBC_ENTRY_POINTS) }
            .expect("libc.so.6 loads on every Linux test machine")
    }

    #[test]
    fn missing_library_lists_every_path_tried() {
        let candidates = [
            PathBuf::from("/nonexistent/libcuda.so.1"),
            PathBuf::from("libcuda-loader-test-missing.so.1"),
        ];
        // SAFETY: neither candidate exists, so no library is loaded.
        let error =
            unsafe { Library::open_first("the test library", candidates, &LIBC_ENTRY_POINTS) }
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
            let opened =
                unsafe { Library::open_first("the probe", candidates, &LIBC_ENTRY_POINTS) };
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
    fn no_candidates_is_an_error_not_a_panic() {
        // SAFETY: there is no candidate, so no library is loaded.
        let error = unsafe { Library::open_first("nothing", [], &LIBC_ENTRY_POINTS) }.unwrap_err();
        assert_eq!(
            error.to_string(),
            "nothing could not be loaded; tried no candidates"
        );
    }

    #[test]
    fn present_symbol_resolves_and_is_callable() {
        let library = libc();
        // SAFETY: `getpid` has this signature in every libc.
        let getpid = unsafe { library.get::<unsafe extern "C" fn() -> i32>(0) }.unwrap();
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { getpid() };
        assert_eq!(pid as u32, std::process::id());
        // The second lookup comes from the cache and gives the same address.
        // SAFETY: as above.
        let again = unsafe { library.get::<unsafe extern "C" fn() -> i32>(0) }.unwrap();
        assert_eq!(getpid as usize, again as usize);
        assert!(library.has(0));
    }

    #[test]
    fn missing_symbol_is_a_typed_error_naming_it() {
        let library = libc();
        assert!(!library.has(1));
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        match &error {
            LoadError::SymbolMissing {
                symbol,
                since,
                path,
                ..
            } => {
                assert_eq!(*symbol, "cuNoSuchEntryPoint_v9");
                assert_eq!(since.and_then(|v| v.cuda()).map(|v| v.0), Some(12040));
                assert_eq!(path, &PathBuf::from("libc.so.6"));
            }
            other => panic!("wrong error: {other:?}"),
        }
        let message = error.to_string();
        assert!(message.contains("cuNoSuchEntryPoint_v9"), "{message}");
        assert!(message.contains("CUDA 12.4"), "{message}");
    }

    #[test]
    fn a_missing_nccl_symbol_names_the_nccl_release() {
        let library = libc();
        assert_eq!(library.entry_points()[2].since(), None);
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(2) }.unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("introduced in NCCL 2.18; update NCCL"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_symbol_is_remembered_and_still_reported() {
        let library = libc();
        assert_eq!(library.slots[1].load(Ordering::Relaxed), UNRESOLVED);
        // SAFETY: never called; the lookup fails.
        let first = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        // The slot now records the miss, so later calls skip `dlsym`.
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        for _ in 0..3 {
            // SAFETY: as above.
            let again = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
            assert_eq!(again, first);
            assert!(!library.has(1));
        }
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        // The present symbol's slot is untouched by the miss and resolves to a real address.
        assert!(library.has(0));
        assert!(library.slots[0].load(Ordering::Relaxed) > MISSING);
    }

    #[test]
    fn has_remembers_a_miss_before_any_get() {
        let library = libc();
        assert!(!library.has(1));
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        assert!(matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cuNoSuchEntryPoint_v9",
                ..
            }
        ));
    }

    #[test]
    fn library_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Library<3>>();
    }

    /// Compiles `source` into a shared library under the temporary directory, named after
    /// `stem` and this process; `None` (with the reason printed) where no C compiler runs.
    #[cfg(target_os = "linux")]
    fn compiled_probe(stem: &str, source: &str) -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("cuda-loader-{stem}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let (c_file, library) = (dir.join("probe.c"), dir.join(format!("lib{stem}.so")));
        std::fs::write(&c_file, source).expect("write the probe's source");
        let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let built = std::process::Command::new(compiler)
            .args(["-shared", "-fPIC", "-o"])
            .arg(&library)
            .arg(&c_file)
            .status();
        match built {
            Ok(status) if status.success() => Some(library),
            other => {
                println!("skipped: no C compiler built the probe library ({other:?})");
                None
            }
        }
    }

    /// Removes a probe's directory (a loaded library stays mapped).
    #[cfg(target_os = "linux")]
    fn remove_probe(library: &std::path::Path) {
        if let Some(dir) = library.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
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
