//! `cuda_safe_libs::sparse` against the stub cuSPARSE of `stub/c` (`libcusparse_stub.c` and
//! `libcusparse_ops_stub.c`, built into the stub driver and loaded through
//! `CUDA_SAFE_LIBCUSPARSE`): the loader finds the library the variable names; SpMV, SpMM,
//! SDDMM, SpGEMM and the conversions (computed on the CPU by the stub) match dense references
//! computed here, for both index types, both value types, CSR, COO and blocked ELL; every check
//! refuses before cuSPARSE is called (memory of another device until its pool grants access
//! included); a repeated SpMV is the one cuSPARSE call; a preprocessed
//! matrix keeps its buffer; errors carry cuSPARSE's status; no descriptor outlives its owner.
//! The stub checks every range and index a call touches against the driver's allocations and
//! the matrices: a range or an index past one is a misuse, which fails the run.
//!
//! A `main` of its own (`harness = false`): the stub is built and the variable is set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

mod checks;
mod devices;
mod products;

use std::path::Path;
use std::process::ExitCode;

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::sparse::{SparseIndex, SparseValue, cusparse_sys};
use stub::{Call, Installed, Stub};

/// What every case gets: the stub, its cuSPARSE controls, and a stream and pool of the stub's
/// first device, its primary context current.
pub(crate) struct Case {
    pub(crate) stub: &'static Stub,
    pub(crate) sparse: SparseControls,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
}

/// The stub's controls of its cuSPARSE.
pub(crate) struct SparseControls {
    live: unsafe extern "C" fn(*const std::ffi::c_char) -> i64,
    buffer_size: unsafe extern "C" fn(i64),
    _library: libloading::Library,
}

/// The kinds of objects the stub cuSPARSE counts.
const SPARSE_KINDS: [&str; 5] = ["handle", "spmat", "dnmat", "dnvec", "spgemm"];

impl SparseControls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these signatures (libcusparse_stub.c).
        unsafe {
            Self {
                live: *library
                    .get(b"sparse_stub_live\0")
                    .expect("sparse_stub_live"),
                buffer_size: *library
                    .get(b"sparse_stub_set_buffer_size\0")
                    .expect("sparse_stub_set_buffer_size"),
                _library: library,
            }
        }
    }

    /// Live objects of each kind of [`SPARSE_KINDS`].
    pub(crate) fn live(&self) -> Vec<(&'static str, i64)> {
        SPARSE_KINDS
            .iter()
            .map(|kind| {
                let name = std::ffi::CString::new(*kind).expect("a kind");
                // SAFETY: a NUL-terminated name that outlives the call.
                (*kind, unsafe { (self.live)(name.as_ptr()) })
            })
            .collect()
    }

    /// Makes the size queries answer `bytes` (`None`: the stub's default, 256).
    pub(crate) fn set_buffer_size(&self, bytes: Option<usize>) {
        let bytes = bytes.map_or(-1, |bytes| i64::try_from(bytes).expect("a small size"));
        // SAFETY: no precondition.
        unsafe { (self.buffer_size)(bytes) }
    }
}

/// The names of the cuSPARSE calls the stub logged since the last look.
pub(crate) fn sparse_calls(calls: Vec<Call>) -> Vec<String> {
    calls
        .into_iter()
        .map(|call| call.name)
        .filter(|name| name.starts_with("cusparse"))
        .collect()
}

/// Fails with `message` unless `condition`.
pub(crate) fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// The error's text.
pub(crate) fn err(error: cuda_safe::Error) -> String {
    error.to_string()
}

/// Deterministic test data in [-1, 1).
pub(crate) fn data(len: usize, mut state: u64) -> Vec<f64> {
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// A row-major `rows` x `cols` matrix with about a third of its elements non-zero.
pub(crate) fn sparse_dense(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    data(rows * cols, seed)
        .into_iter()
        .enumerate()
        .map(|(at, v)| if (at * 7 + 3) % 3 == 0 { v } else { 0.0 })
        .collect()
}

/// The value types the tests run, converted from and to f64.
pub(crate) trait Real: SparseValue<Scalar = Self> + Copy {
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    fn from_f64(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// The index types the tests run.
pub(crate) trait Index: SparseIndex + TryFrom<i64> {
    fn of(value: usize) -> Self {
        Self::signed(value as i64)
    }
    fn signed(value: i64) -> Self {
        Self::try_from(value).ok().expect("a small index")
    }
}

impl Index for i32 {}
impl Index for i64 {}

/// The CSR arrays of a row-major dense matrix, on the device.
pub(crate) struct DeviceCsr {
    pub(crate) offsets: Buffer,
    pub(crate) columns: Buffer,
    pub(crate) values: Buffer,
    pub(crate) nnz: usize,
}

impl Case {
    /// Uploads `host`.
    pub(crate) fn upload<T: bytemuck::Pod>(&self, host: &[T]) -> Result<Buffer, String> {
        self.pool
            .allocate_from_host(host, &self.stream)
            .map_err(err)
    }

    /// Uploads `host` as `T`s.
    pub(crate) fn upload_as<T: Real>(&self, host: &[f64]) -> Result<Buffer, String> {
        let converted: Vec<T> = host.iter().map(|&v| T::from_f64(v)).collect();
        self.upload(&converted)
    }

    /// The CSR form of the row-major `dense`, uploaded.
    pub(crate) fn csr<I: Index, T: Real>(
        &self,
        dense: &[f64],
        (rows, cols): (usize, usize),
    ) -> Result<DeviceCsr, String> {
        let (mut offsets, mut columns, mut values) = (vec![I::of(0)], Vec::new(), Vec::new());
        for r in 0..rows {
            for c in 0..cols {
                if dense[r * cols + c] != 0.0 {
                    columns.push(I::of(c));
                    values.push(dense[r * cols + c]);
                }
            }
            offsets.push(I::of(columns.len()));
        }
        Ok(DeviceCsr {
            nnz: values.len(),
            offsets: self.upload(&offsets)?,
            columns: self.upload(&columns)?,
            values: self.upload_as::<T>(&values)?,
        })
    }
}

/// `T`s downloaded as f64.
pub(crate) fn download<T: Real>(buffer: &Buffer) -> Result<Vec<f64>, String> {
    Ok(buffer
        .to_vec::<T>()
        .map_err(err)?
        .into_iter()
        .map(T::to_f64)
        .collect())
}

/// Checks `got` against `want` within `tolerance` times the largest magnitude wanted.
pub(crate) fn close(what: &str, got: &[f64], want: &[f64], tolerance: f64) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{what}: {} values, want {}", got.len(), want.len())
    })?;
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        ensure((g - w).abs() <= tolerance * scale, || {
            format!("{what}: value {index}: got {g}, want {w}")
        })?;
    }
    Ok(())
}

/// Element (i, j) of `op(A)`, for a row-major A of `cols` columns.
pub(crate) fn at(a: &[f64], cols: usize, transpose: bool, (i, j): (usize, usize)) -> f64 {
    if transpose {
        a[j * cols + i]
    } else {
        a[i * cols + j]
    }
}

type CaseFn = fn(&Case) -> Result<(), String>;

fn main() -> ExitCode {
    let mut path = std::path::PathBuf::new();
    let stub = match stub::install_with(&[cusparse_sys::LIBCUSPARSE_PATH_ENV], |library| {
        path = library.to_owned();
        let loaded = cusparse_sys::cusparse().map(|cusparse| cusparse.library().path().to_owned());
        assert_eq!(loaded.expect("the stub loads"), library);
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("sparse_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let device = Device::new(0).expect("the stub's device");
    device.set_current().expect("its primary context current");
    let case = Case {
        stub,
        sparse: SparseControls::open(&path),
        stream: device.create_stream(Default::default()).expect("a stream"),
        pool: device.default_memory_resource().expect("the default pool"),
    };
    let cases: Vec<(&str, CaseFn)> = products::CASES
        .iter()
        .chain(checks::CASES)
        .chain(devices::CASES)
        .copied()
        .collect();
    let mut failures = 0;
    for (name, run) in &cases {
        case.stub.reset();
        case.stub.take_log();
        case.sparse.set_buffer_size(None);
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
        let leaked: Vec<_> = case
            .sparse
            .live()
            .into_iter()
            .filter(|(_, n)| *n != 0)
            .collect();
        if !leaked.is_empty() {
            failures += 1;
            println!("FAIL {name}: cuSPARSE objects outlived their owners: {leaked:?}");
        }
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!("sparse_stub: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
