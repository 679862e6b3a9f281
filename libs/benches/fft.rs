//! FFTs through `cuda_safe_libs::fft`: the cuFFT measurements of `bench/libs_floor.c`, with its
//! figure names, on the primary context of GPU 0 with one non-blocking stream. Times are CUDA
//! events around the executions, median of the repetitions after warm-ups, as the floor's.
//!
//! - `fft_plan_c2c_16M_ms`: the host time of the process's first plan, a 2^24-point C2C f32
//!   (`FftPlan::new`: `cufftCreate`, `cufftSetAutoAllocation`, `cufftMakePlanMany64`, the work
//!   area from the pool, `cufftSetWorkArea`, `cufftSetStream`). The library is loaded before
//!   the clock starts, as the floor's is by the dynamic linker; an INFO line gives the load's
//!   time and a second plan's;
//! - `fft_c2c_16M_ms` and `fft_c2c_16M_gbs`: its out-of-place forward execution (20 after 5;
//!   GB/s count the 128 MiB read and the 128 MiB written);
//! - `fft_r2c_1024x4096_ms`: a batch of 4096 R2C transforms of 1024 points, dense (cuFFT's basic
//!   layout, as the floor's `cufftPlanMany` with NULL embeddings), 20 x 10 back to back after 10;
//! - `fft_c2c_1024_enqueue_us`: the host time of one 1024-point C2C execution on the stream,
//!   median of 1,000 back to back (no sync) after 100.
//!
//! Inputs come from the floor's 64-bit LCG. Checks, with the floor's tolerances: the 2^24 FFT at
//! 4 bins against a CPU DFT in f64 and an inverse round trip (relative L2 error <= 1e-4); 3 rows
//! of the R2C batch and 15 bins of the small C2C against a CPU DFT. A wrong result exits
//! non-zero. Prints `INFO` lines (versions) and `FIG name value unit` lines.

use std::f64::consts::TAU;
use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Device, Event, EventOptions, Result, Stream};
use cuda_safe_libs::fft::{Complex32, FftDesc, FftDirection, FftPlan};

/// The big transform's points, and its factors (`FN = FM * FM`) for the CPU DFT.
const FN: usize = 1 << 24;
const FM: usize = 1 << 12;
/// The R2C batch: rows of `RN` reals, `RB` of them.
const RN: usize = 1024;
const RB: usize = 4096;
/// Host-cost executions timed.
const NC: usize = 1000;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// The floor's generator: uniform in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 32) as u32 as i32) as f32 * (1.0 / 2_147_483_648.0)
    }
}

/// The median per-call time (ms) of `inner` calls of `call` between two events, over `reps`
/// repetitions after `warm` calls.
fn time_ms(
    stream: &Stream,
    events: &(Event, Event),
    (warm, reps, inner): (usize, usize, usize),
    mut call: impl FnMut() -> Result<()>,
) -> Result<f64> {
    for _ in 0..warm {
        call()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        events.0.record(stream)?;
        for _ in 0..inner {
            call()?;
        }
        events.1.record(stream)?;
        events.1.sync()?;
        times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e3 / inner as f64);
    }
    stream.sync()?;
    Ok(median(&mut times))
}

/// Compares one value; prints the failure.
fn near(what: &str, got: f64, want: f64, tolerance: f64, worst: &mut f64) -> bool {
    let error = (got - want).abs();
    if error.is_nan() || error > tolerance {
        println!("FAIL {what}: got {got:.10}, want {want:.10} (tolerance {tolerance:.3e})");
        return false;
    }
    *worst = worst.max(error / tolerance);
    true
}

/// Bin `k` of the DFT of the `FN` complex points `x`, in f64, as the floor computes it
/// (j = FM a + b: two tables of FM twiddles, no trigonometry in the loop).
fn dft_big(x: &[Complex32], k: usize) -> (f64, f64) {
    let twiddle = |m: usize| {
        let angle = -TAU * (m % FN) as f64 / FN as f64;
        (angle.cos(), angle.sin())
    };
    let outer: Vec<(f64, f64)> = (0..FM).map(|m| twiddle(FM * m * k % FN)).collect();
    let inner: Vec<(f64, f64)> = (0..FM).map(|m| twiddle(m * k % FN)).collect();
    let (mut sr, mut si) = (0.0, 0.0);
    for a in 0..FM {
        let (mut pr, mut pi) = (0.0, 0.0);
        for (b, (c, s)) in inner.iter().enumerate() {
            let v = x[FM * a + b];
            let (xr, xi) = (f64::from(v.re), f64::from(v.im));
            pr += xr * c - xi * s;
            pi += xr * s + xi * c;
        }
        let (c, s) = outer[a];
        sr += pr * c - pi * s;
        si += pr * s + pi * c;
    }
    (sr, si)
}

/// Bin `k` of the DFT of `len` points (`re` and `im` give point j), in f64.
fn dft_small(len: usize, point: impl Fn(usize) -> (f64, f64), k: usize) -> (f64, f64) {
    (0..len).fold((0.0, 0.0), |(sr, si), j| {
        let angle = -TAU * ((j * k) % len) as f64 / len as f64;
        let (xr, xi) = point(j);
        let (c, s) = (angle.cos(), angle.sin());
        (sr + xr * c - xi * s, si + xr * s + xi * c)
    })
}

fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let (major, minor) = device.compute_capability()?;
    println!(
        "INFO device {} sm_{major}{minor} driver {}",
        device.name()?,
        cuda_safe::cuda_driver_version()?
    );
    let stream = device.create_stream(Default::default())?;
    let timing = EventOptions::default().timing(true);
    let events = (device.create_event(timing)?, device.create_event(timing)?);
    let pool = device.default_memory_resource()?;
    let mut ok = true;

    let mut lcg = Lcg(20_261_207);
    let hx: Vec<Complex32> = (0..FN)
        .map(|_| {
            let re = lcg.next();
            Complex32::new(re, lcg.next())
        })
        .collect();
    let fx = pool.allocate_from_host(&hx, &stream)?;
    let mut fy = pool.allocate_zeroed::<Complex32>(FN, &stream)?;
    let mut fz = pool.allocate_zeroed::<Complex32>(FN, &stream)?;
    stream.sync()?;

    // The plan: the first of the process (the library loaded first), then a second one.
    let loaded = Instant::now();
    cuda_safe_libs::fft::cufft_sys::cufft()?;
    let load_ms = loaded.elapsed().as_secs_f64() * 1e3;
    let desc = FftDesc::c2c::<Complex32>(FN);
    let started = Instant::now();
    let plan = FftPlan::new(&stream, &desc)?;
    let cold = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    drop(FftPlan::new(&stream, &desc)?);
    println!(
        "INFO fft c2c 16M plan: workspace {} bytes; a second (warm) plan took {:.3} ms; \
         loading libcufft took {load_ms:.3} ms",
        plan.work_area().map_or(0, |area| area.len()),
        started.elapsed().as_secs_f64() * 1e3
    );
    println!("INFO cufft_version {}", cuda_safe_libs::fft::version()?);
    fig("fft_plan_c2c_16M_ms", cold, "ms");

    let ms = time_ms(&stream, &events, (5, 20, 1), || {
        plan.c2c::<Complex32>(&fx, &mut fy, FftDirection::Forward)
    })?;
    let hy = fy.to_vec::<Complex32>()?;
    let nx = hx
        .iter()
        .map(|v| f64::from(v.re).powi(2) + f64::from(v.im).powi(2))
        .sum::<f64>()
        .sqrt();
    let mut worst = 0.0;
    let mut good = true;
    for k in [0, 1, FN / 3, FN - 1] {
        let (re, im) = dft_big(&hx, k);
        good &= near(
            "fft c2c 16M bin (re)",
            f64::from(hy[k].re),
            re,
            1e-4 * nx,
            &mut worst,
        ) && near(
            "fft c2c 16M bin (im)",
            f64::from(hy[k].im),
            im,
            1e-4 * nx,
            &mut worst,
        );
    }
    if good {
        println!(
            "check fft c2c 16M forward, 4 bins against a CPU DFT ok (worst error / tolerance {worst:.3})"
        );
    }
    ok &= good;
    plan.c2c::<Complex32>(&fy, &mut fz, FftDirection::Inverse)?;
    let back = fz.to_vec::<Complex32>()?;
    let d2: f64 = back
        .iter()
        .zip(&hx)
        .map(|(y, x)| {
            let dr = f64::from(y.re) / FN as f64 - f64::from(x.re);
            let di = f64::from(y.im) / FN as f64 - f64::from(x.im);
            dr * dr + di * di
        })
        .sum();
    let mut worst = 0.0;
    if near(
        "fft c2c 16M round trip, relative L2 error",
        d2.sqrt() / nx,
        0.0,
        1e-4,
        &mut worst,
    ) {
        println!("check fft c2c 16M inverse round trip ok (worst error / tolerance {worst:.3})");
    } else {
        ok = false;
    }
    fig("fft_c2c_16M_ms", ms, "ms");
    let bytes = (FN * std::mem::size_of::<Complex32>()) as f64;
    fig("fft_c2c_16M_gbs", 2.0 * bytes / (ms * 1e-3) / 1e9, "GB/s");
    drop((plan, fz));

    // Batched R2C: 4096 rows of 1024 reals into 4096 rows of 513 complex numbers.
    let reals: Vec<f32> = hx[..RN * RB / 2]
        .iter()
        .flat_map(|v| [v.re, v.im])
        .collect();
    let r2c_desc = FftDesc::r2c::<f32>(RN).batch(RB);
    let r2c = FftPlan::new(&stream, &r2c_desc)?;
    let rx = pool.allocate_from_host(&reals, &stream)?;
    let mut ry = pool.allocate_zeroed::<Complex32>(r2c_desc.output_len()?, &stream)?;
    let ms = time_ms(&stream, &events, (10, 20, 10), || {
        r2c.r2c::<f32>(&rx, &mut ry)
    })?;
    let out = ry.to_vec::<Complex32>()?;
    let (mut worst, mut good) = (0.0, true);
    for row in [0, 1234, RB - 1] {
        let input = &reals[row * RN..(row + 1) * RN];
        let n2 = input
            .iter()
            .map(|v| f64::from(*v).powi(2))
            .sum::<f64>()
            .sqrt();
        for k in 0..=RN / 2 {
            let (re, im) = dft_small(RN, |j| (f64::from(input[j]), 0.0), k);
            let got = out[row * (RN / 2 + 1) + k];
            good &= near(
                "fft r2c row (re)",
                f64::from(got.re),
                re,
                1e-4 * n2,
                &mut worst,
            ) && near(
                "fft r2c row (im)",
                f64::from(got.im),
                im,
                1e-4 * n2,
                &mut worst,
            );
            if !good {
                break;
            }
        }
    }
    if good {
        println!(
            "check fft r2c 1024 x 4096, 3 rows x 513 bins against a CPU DFT ok (worst error / \
             tolerance {worst:.3})"
        );
    }
    ok &= good;
    fig("fft_r2c_1024x4096_ms", ms, "ms");
    let read_write = (RB * RN * 4 + RB * (RN / 2 + 1) * 8) as f64;
    println!(
        "INFO fft r2c 1024x4096: {:.4} GB/s read + write",
        read_write / (ms * 1e-3) / 1e9
    );
    drop((r2c, rx, ry));

    // Host cost of one small execution.
    let small = FftPlan::new(&stream, &FftDesc::c2c::<Complex32>(1024))?;
    let input = fx.as_slice::<Complex32>()?.slice(0..1024)?;
    let mut output = pool.allocate_zeroed::<Complex32>(1024, &stream)?;
    for _ in 0..100 {
        small.c2c::<Complex32>(&input, &mut output, FftDirection::Forward)?;
    }
    stream.sync()?;
    let mut times = Vec::with_capacity(NC);
    for _ in 0..NC {
        let started = Instant::now();
        small.c2c::<Complex32>(&input, &mut output, FftDirection::Forward)?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    stream.sync()?;
    let got = output.to_vec::<Complex32>()?;
    let n2 = hx[..1024]
        .iter()
        .map(|v| f64::from(v.re).powi(2) + f64::from(v.im).powi(2))
        .sum::<f64>()
        .sqrt();
    let (mut worst, mut good) = (0.0, true);
    for k in (0..1024).step_by(73) {
        let point = |j: usize| (f64::from(hx[j].re), f64::from(hx[j].im));
        let (re, im) = dft_small(1024, point, k);
        good &= near(
            "fft c2c 1024 (re)",
            f64::from(got[k].re),
            re,
            1e-4 * n2,
            &mut worst,
        ) && near(
            "fft c2c 1024 (im)",
            f64::from(got[k].im),
            im,
            1e-4 * n2,
            &mut worst,
        );
    }
    if good {
        println!(
            "check fft c2c 1024 (host-cost loop), 15 bins ok (worst error / tolerance {worst:.3})"
        );
    }
    ok &= good;
    fig("fft_c2c_1024_enqueue_us", median(&mut times), "us");
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
