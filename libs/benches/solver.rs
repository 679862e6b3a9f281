//! Dense factorizations through `cuda_safe_libs::solver`: the cuSOLVER rows of the C floor
//! `libs_floor.c` (the same C calls), with its figure names, on the primary context of GPU 0
//! with one stream. f64, column-major 4096 x 4096, the 64-bit `cusolverDnX` API; times are CUDA
//! events around each run, median of the runs after the warm-ups; the input is restored by a
//! device copy before each run, outside the events.
//!
//! - `lu_4096_ms`: `Solver::getrf` + `Solver::getrs` with one right-hand side (10 after 1);
//! - `chol_4096_ms`: `Solver::potrf`, lower (10 after 2);
//! - `eigh_4096_ms`: `Solver::syevd` with eigenvectors (3, after one on the leading 512 block);
//! - `svd_4096_ms`: `Solver::gesvd` with all of U and Vᵀ (2, after one on the leading 512
//!   block);
//! - `svdj_batch_32x10000_ms`: `Solver::gesvdj_batched` of 10,000 32 x 32 f32 matrices with
//!   vectors, cuSOLVER's default tolerance and sweeps (10 after 2).
//!
//! Inputs are uniform in [-1, 1) from a 64-bit LCG on the host: a general A, a symmetric Y, an
//! SPD P = Y + n I. Checks, as the floor's: ‖A x − b‖ / ‖b‖ ≤ 1e-8 for LU; 64 entries of
//! L Lᵀ = P; Σ λ = trace Y; Σ σ² = ‖A‖²_F; U Σ Vᵀ = A for 100 of the batched matrices (1e-4 of
//! the largest σ); every `info` 0. A failed check prints `FAIL ...` and exits non-zero. Prints
//! `INFO` lines and `FIG name value unit` lines.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Buffer, Device, Event, EventOptions, Result, Stream};
use cuda_safe_libs::solver::{Fill, Info, Layout, Solver, SvdVectors, Transpose};

const N: usize = 4096;
const BM: usize = 32;
const BATCH: usize = 10_000;

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The floor's LCG: uniform in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        f64::from((self.0 >> 32) as u32 as i32) * 2f64.powi(-31)
    }
}

/// What `time` asks its closure to do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Restore the input (outside the events).
    Prep,
    /// Run the measured calls.
    Run,
}

/// `warm` then `reps` runs of `step(Step::Run)`, each after `step(Step::Prep)` (outside the
/// events); the median ms.
fn time(
    stream: &Stream,
    events: &(Event, Event),
    (warm, reps): (usize, usize),
    mut step: impl FnMut(Step) -> Result<()>,
) -> Result<f64> {
    let mut times = Vec::with_capacity(reps);
    for round in 0..warm + reps {
        step(Step::Prep)?;
        if round >= warm {
            events.0.record(stream)?;
        }
        step(Step::Run)?;
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
        println!("FAIL {what}: {got} vs {want} (tolerance {tolerance:.3e})");
    }
    ok
}

/// Keeps the last run's infos to check after the timing.
fn keep(slot: &mut Vec<Info>, info: Info) -> Result<()> {
    slot.clear();
    slot.push(info);
    Ok(())
}

fn check_infos(what: &str, infos: Vec<Info>) -> bool {
    for info in infos {
        if let Err(error) = info.check() {
            println!("FAIL {what}: {error}");
            return false;
        }
    }
    true
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
    let solver = Solver::new(&stream)?;
    println!("INFO cusolver_version {}", solver.version()?);
    let nn = N * N;
    let mut lcg = Lcg(1);
    let a: Vec<f64> = (0..nn).map(|_| lcg.next()).collect();
    let mut y = vec![0.0; nn];
    for j in 0..N {
        for i in j..N {
            let value = lcg.next();
            y[i + j * N] = value;
            y[j + i * N] = value;
        }
    }
    let b: Vec<f64> = (0..N).map(|_| lcg.next()).collect();
    let mut p = y.clone();
    for i in 0..N {
        p[i + i * N] += N as f64;
    }
    let (a0, y0, p0) = (
        pool.allocate_from_host(&a, &stream)?,
        pool.allocate_from_host(&y, &stream)?,
        pool.allocate_from_host(&p, &stream)?,
    );
    let b0 = pool.allocate_from_host(&b, &stream)?;
    let mut work = pool.allocate_zeroed::<f64>(nn, &stream)?;
    let mut rhs = pool.allocate_zeroed::<f64>(N, &stream)?;
    let mut pivots = pool.allocate_zeroed::<i64>(N, &stream)?;
    let mut w = pool.allocate_zeroed::<f64>(N, &stream)?;
    let square = Layout::square(N);
    let mut ok = true;

    // LU + solve.
    let mut infos = Vec::new();
    let ms = time(&stream, &events, (1, 10), |step| {
        if step == Step::Prep {
            work.copy_from(&a0)?;
            return rhs.copy_from(&b0);
        }
        let lu = solver.getrf::<f64>(&square, &mut work, &mut pivots)?;
        let solve = solver.getrs::<f64>(
            Transpose::No,
            &square,
            &work,
            &pivots,
            &Layout::new(N, 1),
            &mut rhs,
        )?;
        keep(&mut infos, lu)?;
        infos.push(solve);
        Ok(())
    })?;
    ok &= check_infos("lu info", std::mem::take(&mut infos));
    let x: Vec<f64> = rhs.to_vec()?;
    let mut residual = b.iter().map(|v| -v).collect::<Vec<_>>();
    for j in 0..N {
        for i in 0..N {
            residual[i] += a[i + j * N] * x[j];
        }
    }
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let relative = norm(&residual) / norm(&b);
    println!("INFO lu 4096: ||A x - b|| / ||b|| = {relative:.3e}");
    ok &= near("lu 4096 ||A x - b|| / ||b||", relative, 0.0, 1e-8);
    fig("lu_4096_ms", ms, "ms");

    // Cholesky.
    let ms = time(&stream, &events, (2, 10), |step| match step {
        Step::Prep => work.copy_from(&p0),
        Step::Run => keep(
            &mut infos,
            solver.potrf::<f64>(Fill::Lower, &square, &mut work)?,
        ),
    })?;
    ok &= check_infos("chol info", std::mem::take(&mut infos));
    let l: Vec<f64> = work.to_vec()?;
    let mut pick = Lcg(7);
    for _ in 0..64 {
        let (mut i, mut j) = (
            ((pick.next() + 1.0) / 2.0 * N as f64) as usize % N,
            ((pick.next() + 1.0) / 2.0 * N as f64) as usize % N,
        );
        if i < j {
            std::mem::swap(&mut i, &mut j);
        }
        let r: f64 = (0..=j).map(|k| l[i + k * N] * l[j + k * N]).sum();
        ok &= near(
            "chol 4096 (L L^T)_ij",
            r,
            p[i + j * N],
            1e-13 * N as f64 * (N as f64 + 1.0),
        );
    }
    fig("chol_4096_ms", ms, "ms");

    // Symmetric eigenproblem with vectors: a warm-up on the leading 512 block.
    work.copy_from(&y0)?;
    solver
        .syevd::<f64>(
            Fill::Lower,
            true,
            &Layout::square(512).ld(N),
            &mut work,
            &mut w,
        )?
        .check()?;
    let ms = time(&stream, &events, (0, 3), |step| match step {
        Step::Prep => work.copy_from(&y0),
        Step::Run => keep(
            &mut infos,
            solver.syevd::<f64>(Fill::Lower, true, &square, &mut work, &mut w)?,
        ),
    })?;
    ok &= check_infos("eigh info", std::mem::take(&mut infos));
    let values: Vec<f64> = w.to_vec()?;
    let trace: f64 = (0..N).map(|i| y[i + i * N]).sum();
    let (sum, size) = values
        .iter()
        .fold((0.0, 0.0), |(s, a), v| (s + v, a + v.abs()));
    ok &= near("eigh sum of eigenvalues vs trace", sum, trace, 1e-10 * size);
    fig("eigh_4096_ms", ms, "ms");

    // SVD with all of U and Vᵀ: a warm-up on the leading 512 block.
    let mut u = pool.allocate_zeroed::<f64>(nn, &stream)?;
    let mut vt = pool.allocate_zeroed::<f64>(nn, &stream)?;
    work.copy_from(&a0)?;
    let mut small_u = pool.allocate_zeroed::<f64>(512 * 512, &stream)?;
    let mut small_vt = pool.allocate_zeroed::<f64>(512 * 512, &stream)?;
    solver
        .gesvd::<f64>(
            SvdVectors::All,
            &Layout::square(512).ld(N),
            &mut work,
            &mut w,
            &mut small_u,
            &mut small_vt,
        )?
        .check()?;
    let ms = time(&stream, &events, (0, 2), |step| {
        if step == Step::Prep {
            return work.copy_from(&a0);
        }
        let info =
            solver.gesvd::<f64>(SvdVectors::All, &square, &mut work, &mut w, &mut u, &mut vt)?;
        keep(&mut infos, info)
    })?;
    ok &= check_infos("svd info", std::mem::take(&mut infos));
    let sigma: Vec<f64> = w.to_vec()?;
    let frobenius: f64 = a.iter().map(|v| v * v).sum();
    let squares: f64 = sigma.iter().map(|v| v * v).sum();
    ok &= near(
        "svd sum sigma^2 vs ||A||_F^2",
        squares,
        frobenius,
        1e-10 * frobenius,
    );
    fig("svd_4096_ms", ms, "ms");
    drop((u, vt, small_u, small_vt, work));

    ok &= batched(&stream, &events, &solver, &pool)?;
    println!("INFO total {:.1} s", start.elapsed().as_secs_f64());
    Ok(ok)
}

/// The batched Jacobi SVDs of 10,000 32 x 32 f32 matrices.
fn batched(
    stream: &Stream,
    events: &(Event, Event),
    solver: &Solver,
    pool: &cuda_safe::DeviceMemoryResource,
) -> Result<bool> {
    let count = BATCH * BM * BM;
    let mut lcg = Lcg(3);
    let a: Vec<f32> = (0..count).map(|_| lcg.next() as f32).collect();
    let a0 = pool.allocate_from_host(&a, stream)?;
    let mut work: Buffer = pool.allocate_zeroed::<f32>(count, stream)?;
    let mut s = pool.allocate_zeroed::<f32>(BATCH * BM, stream)?;
    let mut u = pool.allocate_zeroed::<f32>(count, stream)?;
    let mut v = pool.allocate_zeroed::<f32>(count, stream)?;
    let layout = Layout::square(BM);
    let mut infos = Vec::new();
    let ms = time(stream, events, (2, 10), |step| {
        if step == Step::Prep {
            return work.copy_from(&a0);
        }
        let info =
            solver.gesvdj_batched::<f32>(&layout, BATCH, &mut work, &mut s, &mut u, &mut v)?;
        keep(&mut infos, info)
    })?;
    let ok = check_infos("svdj batch info", infos);
    let (s, u, v): (Vec<f32>, Vec<f32>, Vec<f32>) = (s.to_vec()?, u.to_vec()?, v.to_vec()?);
    for b in (0..BATCH).step_by(BATCH / 100) {
        let (base, sb) = (b * BM * BM, &s[b * BM..(b + 1) * BM]);
        let largest = sb.iter().fold(0.0f64, |m, x| m.max(f64::from(*x)));
        for i in 0..BM {
            for j in 0..BM {
                let x: f64 = (0..BM)
                    .map(|k| {
                        f64::from(u[base + i + k * BM])
                            * f64::from(sb[k])
                            * f64::from(v[base + j + k * BM])
                    })
                    .sum();
                if !near(
                    "svdj batch (U S V^T)_ij",
                    x,
                    f64::from(a[base + i + j * BM]),
                    1e-4 * largest,
                ) {
                    return Ok(false);
                }
            }
        }
    }
    println!("check svdj batch: U S V^T = A for 100 matrices ok");
    fig("svdj_batch_32x10000_ms", ms, "ms");
    Ok(ok)
}
