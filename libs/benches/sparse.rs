//! Sparse products through `cuda_safe_libs::sparse`: the cuSPARSE rows of the C floor
//! `libs_floor.c` (the same C calls), with its figure names, on the primary context of GPU 0
//! with one stream. CSR f32 with `i32` indices, default algorithms, no preprocessing; times are
//! CUDA events around each call, median of the runs after the warm-ups.
//!
//! - `spmv_csr_10M_ms`, `spmv_csr_10M_gbs`: `Sparse::spmv` of a 10^7 x 10^7 matrix with 10
//!   non-zeros a row (20 after 3); GB/s count the row offsets, column indices, values, x and y
//!   once each;
//! - `spmm_csr_1M_x128_ms`: `Sparse::spmm` of a 10^6 x 10^6 such matrix times a 10^6 x 128
//!   row-major dense matrix (10 after 2).
//!
//! The matrices are the floor's: row i's j-th non-zero lies in the j-th of 10 equal bands of
//! columns, at an offset from the floor's 64-bit LCG (seed 20261207), its value uniform in
//! [-1, 1) from the same LCG, then x (and B) from it too. Checks, as the floor's: 300 rows of
//! the SpMV and 200 rows x 128 of the SpMM against the CPU (tolerance 1e-5 of the sum of the
//! terms' magnitudes, plus 1e-6). A failed check prints `FAIL ...` and exits non-zero. Prints
//! `INFO` lines and `FIG name value unit` lines.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Device, DeviceMemoryResource, Event, EventOptions, Result, Stream};
use cuda_safe_libs::sparse::{
    DenseMatrix, DenseVector, Operation, Order, SpMmAlg, SpMvAlg, Sparse, SparseMatrix,
};

/// Non-zeros a row.
const NZR: usize = 10;
/// The SpMV's side.
const SPN: usize = 10_000_000;
/// The SpMM's side and dense columns.
const SMN: usize = 1_000_000;
const SMK: usize = 128;

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The floor's LCG.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }

    /// Uniform in [-1, 1), as f32.
    fn uniform(&mut self) -> f32 {
        self.next() as i32 as f32 * 2f32.powi(-31)
    }

    /// Uniform in [0, n).
    fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next()) * u64::from(n)) >> 32) as u32
    }
}

/// An n x n CSR matrix of the floor's construction, on the host.
struct Csr {
    offsets: Vec<i32>,
    columns: Vec<i32>,
    values: Vec<f32>,
}

impl Csr {
    fn make(n: usize, lcg: &mut Lcg) -> Self {
        let band = (n / NZR) as u32;
        let offsets = (0..=n).map(|i| (i * NZR) as i32).collect();
        let (mut columns, mut values) = (Vec::with_capacity(n * NZR), Vec::with_capacity(n * NZR));
        for _ in 0..n {
            for j in 0..NZR as u32 {
                columns.push((j * band + lcg.below(band)) as i32);
                values.push(lcg.uniform());
            }
        }
        Self {
            offsets,
            columns,
            values,
        }
    }

    /// Row i times column c of the row-major `x` of `ncol` columns: the value and the sum of
    /// the terms' magnitudes.
    fn row(&self, i: usize, x: &[f32], ncol: usize, c: usize) -> (f64, f64) {
        let range = self.offsets[i] as usize..self.offsets[i + 1] as usize;
        range.fold((0.0, 0.0), |(r, s), e| {
            let term =
                f64::from(self.values[e]) * f64::from(x[self.columns[e] as usize * ncol + c]);
            (r + term, s + term.abs())
        })
    }
}

/// `warm` then `reps` runs of `run` between two events; the median ms.
fn time(
    stream: &Stream,
    events: &(Event, Event),
    (warm, reps): (usize, usize),
    mut run: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut times = Vec::with_capacity(reps);
    for round in 0..warm + reps {
        if round >= warm {
            events.0.record(stream)?;
        }
        run()?;
        if round >= warm {
            events.1.record(stream)?;
            events.1.sync()?;
            times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e3);
        }
    }
    stream.sync()?;
    Ok(median(&mut times))
}

/// Prints the check's verdict; `false` when it failed.
fn near(what: &str, got: f64, want: f64, tolerance: f64) -> bool {
    let ok = (got - want).abs() <= tolerance;
    if !ok {
        println!("FAIL {what}: got {got}, want {want} (tolerance {tolerance:.3e})");
    }
    ok
}

/// The rows the floor checks: `count` spread by Knuth's multiplier, the last row last.
fn sampled(count: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |k| {
        if k == count - 1 {
            n - 1
        } else {
            ((k as u64 * 2_654_435_761) % n as u64) as usize
        }
    })
}

fn spmv(
    sparse: &Sparse,
    pool: &DeviceMemoryResource,
    events: &(Event, Event),
    lcg: &mut Lcg,
) -> Result<bool> {
    let stream = sparse.stream();
    let start = Instant::now();
    let host = Csr::make(SPN, lcg);
    let x: Vec<f32> = (0..SPN).map(|_| lcg.uniform()).collect();
    let offsets = pool.allocate_from_host(&host.offsets, stream)?;
    let columns = pool.allocate_from_host(&host.columns, stream)?;
    let values = pool.allocate_from_host(&host.values, stream)?;
    let xd = pool.allocate_from_host(&x, stream)?;
    let mut yd = pool.allocate_zeroed::<f32>(SPN, stream)?;
    // SAFETY: the offsets are i * 10 and every column index lies in its band, below SPN, by
    // construction (`Csr::make`); the arrays are not written while the matrix lives.
    let a = unsafe {
        SparseMatrix::<i32, f32>::csr_unchecked((SPN, SPN, SPN * NZR), &offsets, &columns, &values)
    }?;
    println!(
        "INFO spmv 10M matrix built and uploaded in {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let xv = DenseVector::new(&xd)?;
    let mut yv = DenseVector::new(&mut yd)?;
    let op = Operation::NonTranspose;
    let ms = time(stream, events, (3, 20), || {
        sparse.spmv(op, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
    })?;
    drop((yv, xv, a));
    let y: Vec<f32> = yd.to_vec()?;
    let mut ok = true;
    for i in sampled(300, SPN) {
        let (want, sum) = host.row(i, &x, 1, 0);
        if !near("spmv row", f64::from(y[i]), want, 1e-5 * sum + 1e-6) {
            ok = false;
            break;
        }
    }
    if ok {
        println!("check spmv csr 10M, 300 rows against the CPU ok");
    }
    let bytes = (SPN + 1) as f64 * 4.0 + (SPN * NZR) as f64 * 8.0 + SPN as f64 * 8.0;
    fig("spmv_csr_10M_ms", ms, "ms");
    fig("spmv_csr_10M_gbs", bytes / (ms * 1e-3) / 1e9, "GB/s");
    Ok(ok)
}

fn spmm(
    sparse: &Sparse,
    pool: &DeviceMemoryResource,
    events: &(Event, Event),
    lcg: &mut Lcg,
) -> Result<bool> {
    let stream = sparse.stream();
    let host = Csr::make(SMN, lcg);
    let b: Vec<f32> = (0..SMN * SMK).map(|_| lcg.uniform()).collect();
    let offsets = pool.allocate_from_host(&host.offsets, stream)?;
    let columns = pool.allocate_from_host(&host.columns, stream)?;
    let values = pool.allocate_from_host(&host.values, stream)?;
    let bd = pool.allocate_from_host(&b, stream)?;
    let mut cd = pool.allocate_zeroed::<f32>(SMN * SMK, stream)?;
    // SAFETY: as the SpMV's matrix.
    let a = unsafe {
        SparseMatrix::<i32, f32>::csr_unchecked((SMN, SMN, SMN * NZR), &offsets, &columns, &values)
    }?;
    let bm = DenseMatrix::new(SMN, SMK, Order::RowMajor, &bd)?;
    let mut cm = DenseMatrix::new(SMN, SMK, Order::RowMajor, &mut cd)?;
    let nn = (Operation::NonTranspose, Operation::NonTranspose);
    let ms = time(stream, events, (2, 10), || {
        sparse.spmm(nn, (1.0, 0.0), &a, &bm, &mut cm, SpMmAlg::DEFAULT)
    })?;
    drop((cm, bm, a));
    let c: Vec<f32> = cd.to_vec()?;
    let mut ok = true;
    'rows: for i in sampled(200, SMN) {
        for col in 0..SMK {
            let (want, sum) = host.row(i, &b, SMK, col);
            if !near(
                "spmm entry",
                f64::from(c[i * SMK + col]),
                want,
                1e-5 * sum + 1e-6,
            ) {
                ok = false;
                break 'rows;
            }
        }
    }
    if ok {
        println!("check spmm csr 1M x 128, 200 rows against the CPU ok");
    }
    fig("spmm_csr_1M_x128_ms", ms, "ms");
    println!(
        "INFO spmm 1M x128: {:.4} GFLOP/s (2 nnz 128)",
        2.0 * (SMN * NZR * SMK) as f64 / (ms * 1e-3) / 1e9
    );
    Ok(ok)
}

fn run() -> Result<bool> {
    let start = Instant::now();
    let device = Device::new(0)?;
    device.set_current()?;
    println!(
        "INFO device {} driver {}",
        device.name()?,
        cuda_safe::cuda_driver_version()?
    );
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let timing = EventOptions::default().timing(true);
    let events = (device.create_event(timing)?, device.create_event(timing)?);
    let sparse = Sparse::new(&stream)?;
    println!("INFO cusparse_version {}", sparse.version()?);
    let mut lcg = Lcg(20_261_207);
    let mut ok = spmv(&sparse, &pool, &events, &mut lcg)?;
    ok &= spmm(&sparse, &pool, &events, &mut lcg)?;
    println!("INFO cusparse part {:.1} s", start.elapsed().as_secs_f64());
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
