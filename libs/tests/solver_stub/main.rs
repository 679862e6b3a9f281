//! `cuda_safe_libs::solver` against the stub cuSOLVER of `stub/c` (`libcusolver_stub.c` and
//! `libcusolver_eig_stub.c`, built into the stub driver and loaded through
//! `CUDA_SAFE_LIBCUSOLVER`): the loader finds the library the variable names; each routine's
//! results reconstruct its input on the CPU (P A = L U, L Lᵀ = A, Q R = A, V Λ Vᵀ = A,
//! U Σ Vᵀ = A), so dimensions, leading dimensions, pivots and batches reach the library as
//! cuSOLVER reads them; every size check refuses before the library is called, as does memory
//! of another device until its pool grants access; `info` outputs
//! become typed errors naming the pivot, the minor or the matrix of a batch; the workspaces are
//! sized by the queries and reused; every handle is destroyed. The stub checks every range a
//! routine touches against the driver's allocations: a range past one is a misuse, which fails
//! the run.
//!
//! A `main` of its own (`harness = false`): the stub is built and the variable is set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

mod checks;
mod devices;
mod factor;
mod spectral;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::solver::SolverElement;
use stub::{Installed, Stub};

/// What every case gets: the stub, its controls of cuSOLVER, and a stream and pool of the
/// stub's first device, its primary context current.
pub(crate) struct Case {
    pub(crate) stub: &'static Stub,
    pub(crate) solver: SolverControls,
    pub(crate) path: PathBuf,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
}

/// The stub's controls of its cuSOLVER.
pub(crate) struct SolverControls {
    live: unsafe extern "C" fn(*const std::ffi::c_char) -> i64,
    force_info: unsafe extern "C" fn(i32),
    _library: libloading::Library,
}

impl SolverControls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these signatures (libcusolver_stub.c).
        unsafe {
            Self {
                live: *library
                    .get(b"cusolver_stub_live\0")
                    .expect("cusolver_stub_live"),
                force_info: *library
                    .get(b"cusolver_stub_force_info\0")
                    .expect("cusolver_stub_force_info"),
                _library: library,
            }
        }
    }

    /// Live objects of `kind` (`cusolver`, `params`, `gesvdj`).
    pub(crate) fn live(&self, kind: &str) -> i64 {
        let kind = std::ffi::CString::new(kind).expect("a kind");
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { (self.live)(kind.as_ptr()) }
    }

    /// Makes the next eigensolver or SVD report `info`.
    pub(crate) fn force_info(&self, info: i32) {
        // SAFETY: no precondition.
        unsafe { (self.force_info)(info) }
    }
}

/// Fails with `message` unless `condition`.
pub(crate) fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// A small deterministic generator of test data in [-1, 1).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    pub(crate) fn vec(&mut self, len: usize) -> Vec<f64> {
        (0..len).map(|_| self.next()).collect()
    }
}

/// The element types the cases run in, with the tolerance of each.
pub(crate) trait Real: SolverElement + std::fmt::Debug {
    const TOLERANCE: f64;
    fn of(value: f64) -> Self;
    fn value(self) -> f64;
}

impl Real for f32 {
    const TOLERANCE: f64 = 1e-4;
    fn of(value: f64) -> Self {
        value as f32
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const TOLERANCE: f64 = 1e-10;
    fn of(value: f64) -> Self {
        value
    }
    fn value(self) -> f64 {
        self
    }
}

impl Case {
    /// `values` as `T`s in a new buffer on the case's stream.
    pub(crate) fn upload<T: Real>(&self, values: &[f64]) -> Result<Buffer, String> {
        let typed: Vec<T> = values.iter().map(|&v| T::of(v)).collect();
        self.pool
            .allocate_from_host(&typed, &self.stream)
            .map_err(|e| e.to_string())
    }

    /// A buffer's `T`s as f64s.
    pub(crate) fn download<T: Real>(&self, buffer: &Buffer) -> Result<Vec<f64>, String> {
        let values: Vec<T> = buffer.to_vec().map_err(|e| e.to_string())?;
        Ok(values.into_iter().map(T::value).collect())
    }
}

/// Element (i, j) of a column-major matrix with leading dimension `ld`.
pub(crate) fn at(values: &[f64], ld: usize, i: usize, j: usize) -> f64 {
    values[i + j * ld]
}

/// Whether `got` is within `tolerance` (relative to the largest of `want`) of `want`, over the
/// `rows x cols` elements both hold with leading dimensions `ld_got` and `ld_want`.
pub(crate) fn close(
    what: &str,
    got: &[f64],
    ld_got: usize,
    want: &[f64],
    ld_want: usize,
    (rows, cols): (usize, usize),
    tolerance: f64,
) -> Result<(), String> {
    let scale = want.iter().fold(1.0f64, |max, v| max.max(v.abs()));
    for j in 0..cols {
        for i in 0..rows {
            let (g, w) = (at(got, ld_got, i, j), at(want, ld_want, i, j));
            ensure((g - w).abs() <= tolerance * scale, || {
                format!("{what}: element ({i}, {j}) is {g}, want {w}")
            })?;
        }
    }
    Ok(())
}

/// The column-major product of `a` (m x k, ld lda) and `b` (k x n, ld ldb), packed.
pub(crate) fn product(
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    (m, n, k): (usize, usize, usize),
) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            c[i + j * m] = (0..k).map(|p| at(a, lda, i, p) * at(b, ldb, p, j)).sum();
        }
    }
    c
}

type CaseFn = fn(&Case) -> Result<(), String>;

fn main() -> ExitCode {
    let variables = [cuda_safe_libs::solver::cusolver_sys::LIBCUSOLVER_PATH_ENV];
    let mut path = PathBuf::new();
    let stub = match stub::install_with(&variables, |library| {
        path = library.to_owned();
        let loaded =
            cuda_safe_libs::solver::cusolver_sys::cusolver().map(|l| l.library().path().to_owned());
        assert_eq!(loaded.expect("the stub loads"), library);
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("solver_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let solver = SolverControls::open(&path);
    let device = Device::new(0).expect("the stub's device");
    device.set_current().expect("its primary context current");
    let case = Case {
        stub,
        solver,
        path,
        stream: device.create_stream(Default::default()).expect("a stream"),
        pool: device.default_memory_resource().expect("the default pool"),
    };
    let cases: Vec<(&str, CaseFn)> = factor::CASES
        .iter()
        .chain(spectral::CASES)
        .chain(checks::CASES)
        .chain(devices::CASES)
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
    for kind in ["cusolver", "params", "gesvdj"] {
        let live = case.solver.live(kind);
        if live != 0 {
            failures += 1;
            println!("FAIL {live} {kind} object(s) outlived their owners");
        }
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!("solver_stub: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
