//! `cuda_safe_libs::blas` and `cuda_safe_libs::rand` against the stub libraries of `stub/c`
//! (`libblas_stub.c`, built into the stub driver and loaded through `CUDA_SAFE_LIBCUBLAS`,
//! `CUDA_SAFE_LIBCUBLASLT` and `CUDA_SAFE_LIBCURAND`): the loader finds the libraries the
//! variables name; every size check refuses before the library is called; the results of the
//! stub's CPU arithmetic match a CPU reference (so the column-major and row-major conventions,
//! transposes, leading dimensions, batches and epilogues are passed as cuBLAS reads them); each
//! hot path makes exactly the one library call it wraps and no driver call; errors carry the
//! library's status; every handle is destroyed; a GEMM captured from a graph arena (its
//! workspace and operands the arena's) replays as run eagerly; on the stub's asynchronous GPU
//! a GEMM and a cuRAND fill wait for their operands' streams, and read wrong data without the
//! wait (`ordering.rs`). The stub checks every range a call touches
//! against the driver's allocations: a range past one is a misuse, which fails the run.
//!
//! A `main` of its own (`harness = false`): the stub is built and the variables are set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

mod arena;
mod blas;
mod context;
mod matmul;
mod ordering;
mod rand;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cuda_safe::{Device, DeviceMemoryResource, Stream};
use stub::{Call, Installed, Stub};

/// What every case gets: the stub, its controls of the BLAS libraries, and a stream and pool
/// of the stub's first device, its primary context current.
pub(crate) struct Case {
    pub(crate) stub: &'static Stub,
    pub(crate) blas: BlasControls,
    pub(crate) path: PathBuf,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
}

/// The stub's controls of its cuBLAS, cuBLASLt and cuRAND.
pub(crate) struct BlasControls {
    live: unsafe extern "C" fn(*const std::ffi::c_char) -> i64,
    refuse: unsafe extern "C" fn(i32),
    _library: libloading::Library,
}

impl BlasControls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these signatures (libblas_stub.c).
        unsafe {
            Self {
                live: *library.get(b"blas_stub_live\0").expect("blas_stub_live"),
                refuse: *library
                    .get(b"blas_stub_refuse_heuristic\0")
                    .expect("blas_stub_refuse_heuristic"),
                _library: library,
            }
        }
    }

    /// Live handles of `kind` (`cublas`, `cublaslt`, `lt-descriptor`, `curand`).
    pub(crate) fn live(&self, kind: &str) -> i64 {
        let kind = std::ffi::CString::new(kind).expect("a kind");
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { (self.live)(kind.as_ptr()) }
    }

    /// Makes cuBLASLt's heuristic find nothing (or find again).
    pub(crate) fn refuse_heuristic(&self, refuse: bool) {
        // SAFETY: no precondition.
        unsafe { (self.refuse)(i32::from(refuse)) }
    }
}

/// The names of the calls the stub logged since the last look.
pub(crate) fn names(calls: Vec<Call>) -> Vec<String> {
    calls.into_iter().map(|call| call.name).collect()
}

/// Fails with `message` unless `condition`.
pub(crate) fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// A small deterministic generator of test data in [-1, 1).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    pub(crate) fn vec(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.next()).collect()
    }
}

type CaseFn = fn(&Case) -> Result<(), String>;

fn main() -> ExitCode {
    let variables = [
        cuda_safe_libs::blas::cublas_sys::LIBCUBLAS_PATH_ENV,
        cuda_safe_libs::blas::cublaslt_sys::LIBCUBLASLT_PATH_ENV,
        cuda_safe_libs::rand::curand_sys::LIBCURAND_PATH_ENV,
    ];
    let mut path = PathBuf::new();
    let stub = match stub::install_with(&variables, |library| {
        path = library.to_owned();
        for loaded in [
            cuda_safe_libs::blas::cublas_sys::cublas().map(|l| l.library().path().to_owned()),
            cuda_safe_libs::blas::cublaslt_sys::cublaslt().map(|l| l.library().path().to_owned()),
            cuda_safe_libs::rand::curand_sys::curand().map(|l| l.library().path().to_owned()),
        ] {
            assert_eq!(loaded.expect("the stub loads"), library);
        }
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("blas_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let blas = BlasControls::open(&path);
    let device = Device::new(0).expect("the stub's device");
    device.set_current().expect("its primary context current");
    let case = Case {
        stub,
        blas,
        path,
        stream: device.create_stream(Default::default()).expect("a stream"),
        pool: device.default_memory_resource().expect("the default pool"),
    };
    let cases: Vec<(&str, CaseFn)> = blas::CASES
        .iter()
        .chain(matmul::CASES)
        .chain(rand::CASES)
        .chain(context::CASES)
        .chain(arena::CASES)
        .chain(ordering::CASES)
        .copied()
        .collect();
    let mut failures = 0;
    for (name, run) in &cases {
        case.stub.reset();
        case.stub.take_log();
        match run(&case) {
            Ok(()) => println!("ok   {name}"),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
        let (misuses, last) = case.stub.misuse();
        if misuses != 0 {
            failures += 1;
            println!("FAIL {name}: {misuses} misuse(s) of the stub; last: {last}");
        }
    }
    drop(case.stream);
    drop(case.pool);
    for kind in ["cublas", "cublaslt", "lt-descriptor", "curand"] {
        let live = case.blas.live(kind);
        if live != 0 {
            failures += 1;
            println!("FAIL {live} {kind} handle(s) outlived their owners");
        }
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!("blas_stub: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
