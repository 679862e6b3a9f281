//! The fake CUDA driver, NVRTC and NVML of `stub/c/*.c` (and cuBLAS, cuBLASLt, cuRAND and cuFFT,
//! for the tests of those: [`install_with`]): compiled with the C compiler into one shared
//! object, loaded in place of the libraries through `CUDA_SAFE_LIBCUDA`,
//! `CUDA_SAFE_LIBNVRTC` and `CUDA_SAFE_LIBNVML`, and controlled through its `stub_*` functions
//! (call counts and log, injected faults, live objects, misuses, playing another process). Also a
//! `log` logger that keeps the crate's error lines, so a test can count what a `Drop` logged.

pub mod faults;
pub mod nvml;
pub mod ordering;

use std::ffi::{CStr, CString, c_char, c_int, c_ulong, c_void};
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// The C sources, compiled together: the control functions, the driver (`cuda_*.c`, sharing
/// `cuda_stub.h`; the graph files `cuda_graph.h` too), NVRTC, nvJitLink (loaded only where a
/// test points `CUDA_SAFE_LIBNVJITLINK` at the stub: [`install_with`]), NVML (its event sets
/// apart, sharing `libnvml_stub.h`), nvFatbin
/// (likewise, through `CUDA_SAFE_LIBNVFATBIN`), cuBLAS, cuBLASLt, cuRAND, cuFFT, cuSOLVER and cuSPARSE.
const SOURCES: &[&str] = &[
    "stub_control.c",
    "cuda_misc.c",
    "cuda_device.c",
    "cuda_memory.c",
    "cuda_managed.c",
    "cuda_vmm.c",
    "cuda_copy.c",
    "cuda_peer.c",
    "cuda_ipc.c",
    "cuda_code.c",
    "cuda_texture.c",
    "cuda_green.c",
    "cuda_graph.c",
    "cuda_graph_copy.c",
    "cuda_graph_exec.c",
    "cuda_capture.c",
    "cuda_capture_nodes.c",
    "cuda_cudarc.c",
    "cuda_async.c",
    "cuda_race.c",
    "cuda_gpu.c",
    "cuda_gpu_work.c",
    "libnvrtc_stub.c",
    "libnvjitlink_stub.c",
    "libnvml_stub.c",
    "libnvml_events_stub.c",
    "libnvfatbin_stub.c",
    "libblas_stub.c",
    "libcurand_stub.c",
    "libcufft_stub.c",
    "libcusolver_stub.c",
    "libcusolver_eig_stub.c",
    "libcudnn_stub.c",
    "libcudnn_check_stub.c",
    "libcudnn_exec_stub.c",
    "libcudnn_ops_stub.c",
    "libcudnn_norm_stub.c",
    "libcusparse_stub.c",
    "libcusparse_ops_stub.c",
];

/// The kinds of objects the stub counts, in the order of [`Live`] (`range` and `chunk`: VMM
/// reservations and physical allocations; `graph`: graphs (made, cloned or captured; not the
/// bodies nodes own) and executable graphs; `userobj`: user objects; `fd`, last: descriptors of
/// exported pools and chunks open in the process).
pub const KINDS: [&str; 16] = [
    "context", "green", "stream", "event", "pool", "alloc", "library", "program", "nvml", "range",
    "chunk", "array", "texture", "graph", "userobj", "fd",
];

/// Live objects per kind of [`KINDS`].
pub type Live = [i64; 16];

/// One call the stub answered: the exported name and, for `cuCtxSetCurrent`, whether it set a
/// context (1) or none (0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The exported name (`cuMemAllocFromPoolAsync`).
    pub name: String,
    /// The argument the stub logs with it.
    pub arg: i64,
}

impl Call {
    /// Whether this call makes no context current (a guard restoring "none", or an unbind).
    pub fn unbinds(&self) -> bool {
        self.name == "cuCtxSetCurrent" && self.arg == 0
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name.as_str(), self.arg) {
            ("cuCtxSetCurrent", 0) => f.write_str("cuCtxSetCurrent(NULL)"),
            ("cuCtxSetCurrent", _) => f.write_str("cuCtxSetCurrent(ctx)"),
            (name, _) => f.write_str(name),
        }
    }
}

/// The stub's control functions.
#[derive(Debug)]
pub struct Stub {
    reset: unsafe extern "C" fn(),
    disarm: unsafe extern "C" fn(),
    fail: unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int,
    faults_pending: unsafe extern "C" fn() -> c_int,
    calls: unsafe extern "C" fn(*const c_char) -> u64,
    log_len: unsafe extern "C" fn() -> i64,
    log_name: unsafe extern "C" fn(usize) -> *const c_char,
    log_arg: unsafe extern "C" fn(usize) -> i64,
    log_clear: unsafe extern "C" fn(),
    live: unsafe extern "C" fn(*const c_char) -> i64,
    misuse: unsafe extern "C" fn() -> u64,
    last_misuse: unsafe extern "C" fn() -> *const c_char,
    unbind: unsafe extern "C" fn(),
    set_driver_version: unsafe extern "C" fn(c_int),
    play_other_process: unsafe extern "C" fn(c_int),
    hold_gpu: unsafe extern "C" fn(c_int),
    races: unsafe extern "C" fn() -> u64,
    first_race: unsafe extern "C" fn() -> *const c_char,
    races_reset: unsafe extern "C" fn(),
    races_state: unsafe extern "C" fn() -> c_int,
    slow_gpu: unsafe extern "C" fn(c_int),
    race_host_access: unsafe extern "C" fn(u64, usize, c_int),
    refuse_instantiation: unsafe extern "C" fn(c_int),
    gpu_async: unsafe extern "C" fn(c_int, c_ulong),
    gpu_delay: unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int,
    /// Keeps the functions above loaded (for the whole process: the stub is never unloaded).
    _library: libloading::Library,
}

impl Stub {
    /// Disarms every fault and clears call counts, the log and misuses; resets the
    /// checkpoint state. Live objects stay.
    pub fn reset(&self) {
        // SAFETY: `stub_reset` takes nothing and touches only the stub's state.
        unsafe { (self.reset)() }
    }

    /// Disarms every fault that has not fired.
    pub fn disarm(&self) {
        // SAFETY: as `reset`.
        unsafe { (self.disarm)() }
    }

    /// Arms a fault: the `nth` call (from 1) of `name` from now on returns `code`.
    pub fn fail(&self, name: &str, code: i32, nth: usize) {
        let name = CString::new(name).expect("an entry point name");
        let nth = c_int::try_from(nth).expect("a small occurrence");
        // SAFETY: `name` is NUL-terminated and outlives the call, which copies it.
        let armed = unsafe { (self.fail)(name.as_ptr(), code, nth) };
        assert_eq!(armed, 0, "the stub refused the fault on {name:?}");
    }

    /// How many armed faults have not fired.
    pub fn faults_pending(&self) -> usize {
        // SAFETY: as `reset`.
        usize::try_from(unsafe { (self.faults_pending)() }).unwrap_or(0)
    }

    /// Calls of `name` since the last reset.
    pub fn calls(&self, name: &str) -> u64 {
        let name = CString::new(name).expect("an entry point name");
        // SAFETY: `name` is NUL-terminated and outlives the call.
        unsafe { (self.calls)(name.as_ptr()) }
    }

    /// The calls made since the last reset or `take_log`, in order; the log is cleared.
    pub fn take_log(&self) -> Vec<Call> {
        // SAFETY: as `reset`.
        let len = unsafe { (self.log_len)() };
        let len = usize::try_from(len).expect("the stub's call log overflowed");
        let calls = (0..len)
            .map(|index| {
                // SAFETY: `index` is below the log's length, so the name is one of the stub's
                // static strings; the argument read has no precondition.
                let (name, arg) = unsafe {
                    (
                        CStr::from_ptr((self.log_name)(index)),
                        (self.log_arg)(index),
                    )
                };
                Call {
                    name: name.to_string_lossy().into_owned(),
                    arg,
                }
            })
            .collect();
        // SAFETY: as `reset`.
        unsafe { (self.log_clear)() };
        calls
    }

    /// Live objects per kind.
    pub fn live(&self) -> Live {
        KINDS.map(|kind| {
            let kind = CString::new(kind).expect("a kind name");
            // SAFETY: `kind` is NUL-terminated and outlives the call.
            unsafe { (self.live)(kind.as_ptr()) }
        })
    }

    /// Misuses since the last reset, and the last one's description.
    pub fn misuse(&self) -> (u64, String) {
        // SAFETY: as `reset`; the description is a NUL-terminated buffer of the stub's, copied
        // at once.
        unsafe {
            (
                (self.misuse)(),
                CStr::from_ptr((self.last_misuse)())
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    }

    /// Makes no context current on this thread, without counting a call.
    pub fn unbind(&self) {
        // SAFETY: as `reset`.
        unsafe { (self.unbind)() }
    }

    /// Sets the CUDA version `cuDriverGetVersion` reports (13010 by default).
    pub fn set_driver_version(&self, version: i32) {
        // SAFETY: as `reset`.
        unsafe { (self.set_driver_version)(version) }
    }

    /// Holds the GPU's progress (`true`): events recorded from now on report
    /// `CUDA_ERROR_NOT_READY` and host functions queued from now on wait; or releases it
    /// (`false`): those events finish and the host functions run on this thread, in order.
    pub fn hold_gpu(&self, hold: bool) {
        // SAFETY: as `reset`; host functions released here run on this thread.
        unsafe { (self.hold_gpu)(c_int::from(hold)) }
    }

    /// Ordering races the checker of `cuda_race.c` found since the last reset
    /// ([`reset`](Self::reset) or [`races_reset`](Self::races_reset)), and the first one's
    /// description (both operations named).
    pub fn races(&self) -> (u64, String) {
        // SAFETY: as `reset`; the description is a NUL-terminated buffer of the stub's, copied
        // at once.
        unsafe {
            (
                (self.races)(),
                CStr::from_ptr((self.first_race)())
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    }

    /// Forgets the races counted so far (the order the checker knows stays).
    pub fn races_reset(&self) {
        // SAFETY: as `reset`.
        unsafe { (self.races_reset)() }
    }

    /// Whether the race checker still runs (it turns itself off past 4096 streams).
    pub fn race_checker_on(&self) -> bool {
        // SAFETY: as `reset`.
        unsafe { (self.races_state)() != 0 }
    }

    /// Makes the GPU slow for `cuStreamQuery` (`true`): a stream with work the host has not
    /// seen finish reports `CUDA_ERROR_NOT_READY`; or prompt again (`false`).
    pub fn slow_gpu(&self, slow: bool) {
        // SAFETY: as `reset`.
        unsafe { (self.slow_gpu)(c_int::from(slow)) }
    }

    /// Tells the race checker that the host reads (or, with `write`, writes) `bytes` at
    /// `address` now (host-accessible memory the test touches itself).
    pub fn host_access(&self, address: u64, bytes: usize, write: bool) {
        // SAFETY: as `reset`; the stub only looks the address up among its allocations.
        unsafe { (self.race_host_access)(address, bytes, c_int::from(write)) }
    }

    /// Makes the next `cuGraphInstantiateWithParams` fail with `CUDA_ERROR_INVALID_VALUE` and
    /// `result` as its `CUgraphInstantiateResult`, as the driver refuses a graph.
    pub fn refuse_instantiation(&self, result: u32) {
        let result = c_int::try_from(result).expect("a CUgraphInstantiateResult");
        // SAFETY: as `reset`.
        unsafe { (self.refuse_instantiation)(result) }
    }

    /// The stub NVML's event controls: inject events, count live sets and waiting threads.
    pub fn nvml_events(&self) -> nvml::NvmlEvents {
        nvml::NvmlEvents::open(&self._library)
    }

    /// Makes the GPU asynchronous (`c/cuda_gpu.c`): from now on each stream's work is queued
    /// and run in order by a worker thread of the stream's, each copy, memset, kernel and
    /// library call taking `op_time` first, so that work left unordered across streams reads or
    /// writes the wrong data; events, waits, queries and synchronizations follow the workers.
    pub fn async_gpu(&self, op_time: Duration) {
        let micros = c_ulong::try_from(op_time.as_micros()).unwrap_or(c_ulong::MAX);
        // SAFETY: as `reset`; the workers touch only memory the queued work names.
        unsafe { (self.gpu_async)(1, micros) }
    }

    /// Makes the GPU synchronous again (work runs as it is queued), once every queue has
    /// emptied.
    pub fn sync_gpu(&self) {
        // SAFETY: as `reset`.
        unsafe { (self.gpu_async)(0, 0) }
    }

    /// Queues a pause of `time` on `stream` (a long kernel) when the GPU is asynchronous, so
    /// that the stream's later work finishes late; nothing otherwise.
    pub fn gpu_delay(&self, stream: &cuda_safe::Stream, time: Duration) {
        let micros = c_ulong::try_from(time.as_micros()).unwrap_or(c_ulong::MAX);
        // SAFETY: a live stream's handle; the stub only queues a pause on it.
        let code = unsafe { (self.gpu_delay)(stream.as_raw().cast(), micros) };
        assert_eq!(code, 0, "the stub refused a delay on the stream");
    }

    /// Runs `make` as another process: the IPC event handles it takes carry another process
    /// id, so this process can open them (the driver refuses a process's own).
    pub fn as_other_process<T>(&self, make: impl FnOnce() -> T) -> T {
        // SAFETY: as `reset`.
        unsafe { (self.play_other_process)(1) };
        let made = make();
        // SAFETY: as `reset`.
        unsafe { (self.play_other_process)(0) };
        made
    }
}

/// What became of [`install`].
#[derive(Debug)]
pub enum Installed {
    /// The stub is built and the variables point at it.
    Ready(&'static Stub),
    /// No C compiler (or not Linux), outside CI: the reason to print.
    Skipped(String),
}

/// Builds the stub into a temporary directory, points the three
/// library variables at it, loads it for the three crates (then removes the file, which stays
/// mapped) and returns its control functions. Call it first in `main`, before any other thread
/// starts and before anything loads a CUDA library.
///
/// Without a C compiler the tests are skipped, except under `CI`, where that is a failure
/// (this panics); a compile error is always a failure.
pub fn install() -> Installed {
    install_with(&[], |_| {})
}

/// [`install`], pointing `variables` at the stub too, and running `load` with the stub's path
/// (to open the libraries they name) while the stub's file is still there.
pub fn install_with(variables: &[&str], load: impl FnOnce(&Path)) -> Installed {
    if !cfg!(target_os = "linux") {
        return Installed::Skipped("the stub driver is built for Linux only".into());
    }
    let dir = tempfile::Builder::new()
        .prefix("cuda-safe-stub-")
        .tempdir()
        .expect("a temporary directory");
    let library = dir.path().join("libcuda_safe_stub.so");
    if let Err(reason) = compile(&library) {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set, so the stub driver must build: {reason}");
        }
        return Installed::Skipped(reason);
    }
    for variable in [
        cuda_sys::LIBCUDA_PATH_ENV,
        nvrtc_sys::LIBNVRTC_PATH_ENV,
        nvml_sys::LIBNVML_PATH_ENV,
    ]
    .iter()
    .chain(variables)
    {
        // SAFETY: `install` runs first in `main`, before any other thread exists, so nothing
        // reads the environment concurrently.
        unsafe { std::env::set_var(variable, &library) };
    }
    let loaded = [
        cuda_sys::driver().map(|driver| driver.library().path().to_owned()),
        nvrtc_sys::nvrtc().map(|nvrtc| nvrtc.library().path().to_owned()),
        nvml_sys::nvml().map(|nvml| nvml.library().path().to_owned()),
    ];
    for path in loaded {
        assert_eq!(
            path.expect("the stub loads"),
            library,
            "the stub is what loaded"
        );
    }
    load(&library);
    Installed::Ready(Box::leak(Box::new(open(&library))))
}

/// Compiles the sources into `output`; the error says why not (no compiler, or its errors).
pub fn compile(output: &Path) -> Result<(), String> {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("c");
    let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let result = Command::new(&compiler)
        .args([
            "-shared",
            "-fPIC",
            "-pthread",
            "-std=c11",
            "-O1",
            "-Wall",
            "-Wextra",
            // Named as the driver, so that a library that opens `libcuda.so` by name (cudarc,
            // in tests/bridges.rs) finds this one, already loaded, before any on the disk.
            "-Wl,-soname,libcuda.so",
            "-o",
        ])
        .arg(output)
        .args(SOURCES.iter().map(|source| sources.join(source)))
        .arg("-lm")
        .output();
    match result {
        Err(error) => Err(format!(
            "no C compiler: running {} failed ({error}); install gcc (or set CC) to run these tests",
            compiler.to_string_lossy()
        )),
        Ok(done) if !done.status.success() => panic!(
            "the stub driver does not compile ({}):\n{}",
            done.status,
            String::from_utf8_lossy(&done.stderr)
        ),
        Ok(done) => {
            let warnings = String::from_utf8_lossy(&done.stderr);
            if !warnings.trim().is_empty() {
                println!("the stub driver compiles with warnings:\n{warnings}");
            }
            Ok(())
        }
    }
}

/// Loads the stub's control functions.
fn open(path: &Path) -> Stub {
    // SAFETY: the stub's initialisers are the C runtime's only; it is the library the three
    // variables name, so the crate's loaders open this same handle.
    let library = unsafe { libloading::Library::new(path) }.expect("the stub driver loads");
    macro_rules! function {
        ($name:literal) => {
            // SAFETY: the stub exports `$name` with the C signature of the field it fills (see
            // stub_control.c and cuda_misc.c); the copy stays valid while `_library` lives.
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                .expect(concat!("the stub exports ", $name))
        };
    }
    Stub {
        reset: function!("stub_reset"),
        disarm: function!("stub_disarm"),
        fail: function!("stub_fail"),
        faults_pending: function!("stub_faults_pending"),
        calls: function!("stub_calls"),
        log_len: function!("stub_log_len"),
        log_name: function!("stub_log_name"),
        log_arg: function!("stub_log_arg"),
        log_clear: function!("stub_log_clear"),
        live: function!("stub_live"),
        misuse: function!("stub_misuse"),
        last_misuse: function!("stub_last_misuse"),
        unbind: function!("stub_unbind"),
        set_driver_version: function!("stub_set_driver_version"),
        play_other_process: function!("stub_play_other_process"),
        hold_gpu: function!("stub_hold_gpu"),
        races: function!("stub_races"),
        first_race: function!("stub_first_race"),
        races_reset: function!("stub_races_reset"),
        races_state: function!("stub_races_state"),
        slow_gpu: function!("stub_slow_gpu"),
        race_host_access: function!("stub_race_host_access"),
        refuse_instantiation: function!("stub_refuse_instantiation"),
        gpu_async: function!("stub_gpu_async"),
        gpu_delay: function!("stub_gpu_delay"),
        _library: library,
    }
}

/// The error lines the crate logged since the last [`take_error_logs`].
static ERROR_LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps error-level lines (a failed release on drop) in [`ERROR_LINES`]; drops the rest.
struct ErrorLogger;

impl log::Log for ErrorLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() == log::Level::Error
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let mut lines = ERROR_LINES.lock().unwrap_or_else(|e| e.into_inner());
            lines.push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Installs the error-line logger (once per process).
pub fn install_logger() {
    log::set_logger(&ErrorLogger).expect("no other logger");
    log::set_max_level(log::LevelFilter::Error);
}

/// The error lines logged since the last call.
pub fn take_error_logs() -> Vec<String> {
    std::mem::take(&mut *ERROR_LINES.lock().unwrap_or_else(|e| e.into_inner()))
}
