//! `cuda_safe_libs::fft` against the stub cuFFT of `stub/c` (`libcufft_stub.c`, built into the
//! stub driver and loaded through `CUDA_SAFE_LIBCUFFT`): the loader finds the library the
//! variable names; plans are made with automatic allocation off and a work area from the memory
//! pool; every check refuses before cuFFT is called (memory of another device until its pool
//! grants access included); the stub's DFT (computed directly on the
//! CPU) matches a reference here for every kind, precision, rank, batch and layout, so the sizes,
//! embeddings, strides and distances are passed as cuFFT reads them; an execution is the one
//! cuFFT call it wraps; the plan cache hits and evicts; errors carry cuFFT's status; every plan
//! is destroyed, before its work area is freed. The stub checks every range a call touches
//! against the driver's allocations: a range past one is a misuse, which fails the run.
//!
//! A `main` of its own (`harness = false`): the stub is built and the variable is set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

mod cache;
mod checks;
mod devices;
mod transforms;

use std::path::Path;
use std::process::ExitCode;

use cuda_safe::{Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::fft::cufft_sys;
use stub::{Call, Installed, Stub};

/// What every case gets: the stub, its cuFFT controls, and a stream and pool of the stub's
/// first device, its primary context current.
pub(crate) struct Case {
    pub(crate) stub: &'static Stub,
    pub(crate) fft: FftControls,
    pub(crate) device: Device,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
}

/// The stub's controls of its cuFFT.
pub(crate) struct FftControls {
    live: unsafe extern "C" fn() -> i64,
    work_size: unsafe extern "C" fn(i64),
    _library: libloading::Library,
}

impl FftControls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these signatures (libcufft_stub.c).
        unsafe {
            Self {
                live: *library.get(b"fft_stub_live\0").expect("fft_stub_live"),
                work_size: *library
                    .get(b"fft_stub_set_work_size\0")
                    .expect("fft_stub_set_work_size"),
                _library: library,
            }
        }
    }

    /// Live plans.
    pub(crate) fn live(&self) -> i64 {
        // SAFETY: no precondition.
        unsafe { (self.live)() }
    }

    /// Makes the next plans ask for `bytes` of work area (`None`: the stub's default).
    pub(crate) fn set_work_size(&self, bytes: Option<usize>) {
        let bytes = bytes.map_or(-1, |bytes| i64::try_from(bytes).expect("a small size"));
        // SAFETY: no precondition.
        unsafe { (self.work_size)(bytes) }
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

/// A complex number of the reference, in f64.
pub(crate) type C64 = (f64, f64);

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

/// The DFT of `x` (row-major over `shape`) with the exponent's sign `sign`, directly.
pub(crate) fn dft(shape: &[usize], x: &[C64], sign: f64) -> Vec<C64> {
    let count: usize = shape.iter().product();
    let index = |mut flat: usize| {
        let mut at = [0usize; 3];
        for d in (0..shape.len()).rev() {
            at[d] = flat % shape[d];
            flat /= shape[d];
        }
        at
    };
    (0..count)
        .map(|k| {
            let kk = index(k);
            x.iter()
                .enumerate()
                .fold((0.0, 0.0), |(re, im), (j, (a, b))| {
                    let jj = index(j);
                    let turns: f64 = (0..shape.len())
                        .map(|d| ((jj[d] * kk[d]) % shape[d]) as f64 / shape[d] as f64)
                        .sum();
                    let angle = sign * std::f64::consts::TAU * turns;
                    let (c, s) = (angle.cos(), angle.sin());
                    (re + a * c - b * s, im + a * s + b * c)
                })
        })
        .collect()
}

/// Checks `got` against `want` within `tolerance` times the largest magnitude wanted.
pub(crate) fn close(what: &str, got: &[C64], want: &[C64], tolerance: f64) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{what}: {} values, want {}", got.len(), want.len())
    })?;
    let scale = want
        .iter()
        .map(|(re, im)| re.hypot(*im))
        .fold(1.0, f64::max);
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        let error = (g.0 - w.0).hypot(g.1 - w.1);
        ensure(error <= tolerance * scale, || {
            format!("{what}: value {index}: got {g:?}, want {w:?}")
        })?;
    }
    Ok(())
}

type CaseFn = fn(&Case) -> Result<(), String>;

fn main() -> ExitCode {
    let mut path = std::path::PathBuf::new();
    let stub = match stub::install_with(&[cufft_sys::LIBCUFFT_PATH_ENV], |library| {
        path = library.to_owned();
        let loaded = cufft_sys::cufft().map(|cufft| cufft.library().path().to_owned());
        assert_eq!(loaded.expect("the stub loads"), library);
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fft_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let device = Device::new(0).expect("the stub's device");
    device.set_current().expect("its primary context current");
    let case = Case {
        stub,
        fft: FftControls::open(&path),
        stream: device.create_stream(Default::default()).expect("a stream"),
        pool: device.default_memory_resource().expect("the default pool"),
        device,
    };
    let cases: Vec<(&str, CaseFn)> = transforms::CASES
        .iter()
        .chain(checks::CASES)
        .chain(devices::CASES)
        .chain(cache::CASES)
        .copied()
        .collect();
    let mut failures = 0;
    for (name, run) in &cases {
        case.stub.reset();
        case.stub.take_log();
        case.fft.set_work_size(None);
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
    let live = case.fft.live();
    if live != 0 {
        failures += 1;
        println!("FAIL {live} cuFFT plan(s) outlived their owners");
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!("fft_stub: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
