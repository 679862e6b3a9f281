//! Dense linear algebra through `cuda_safe_libs::blas` and `cuda_safe_libs::rand`: the
//! measurements of `bench/floors/blas_floor.c`, with its figure names, on the primary context
//! of GPU 0 with one non-blocking stream. TFLOP/s count 2·m·n·k; times are CUDA events around
//! each call, median of 20 after 5 warm-ups.
//!
//! - `Blas::gemm` bf16 A and B (f32 compute), column-major, m = n = k in {256, 1024, 4096,
//!   8192}: `gemm_bf16_N` (N/N, bf16 D), `gemm_bf16_f32out_N` (N/N, f32 D), `gemm_bf16_tn_N`,
//!   `gemm_bf16_tn_f32out_N` (T/N);
//! - `Blas::gemm` f32 4096³, plain (`sgemm_4096`) and with TF32 allowed (`sgemm_tf32_4096`):
//!   `cublasGemmEx` in f32 and `CUBLAS_COMPUTE_32F_FAST_TF32`, where the floor calls
//!   `cublasSgemm` with `CUBLAS_TF32_TENSOR_OP_MATH`;
//! - the host cost of one 256³ bf16 GEMM: each call's host time in 1,000 back to back
//!   (`gemm_bf16_256_enqueue_us`, median) and call + stream sync
//!   (`gemm_bf16_256_call_plus_sync_us`);
//! - `Matmul` 8192³ with a 32 MiB workspace: bf16 plain (`lt_bf16_8192`), GELU+bias
//!   (`lt_bf16_gelu_bias_8192`), and on sm_90 and later FP8 e4m3 T/N into bf16 (`lt_fp8_8192`),
//!   with `lt_fp8_over_bf16_8192` (the FP8 row over the bf16 row, in this process); a plan
//!   cuBLASLt refuses prints `FIG name 0 unsupported`, as the floor does;
//! - `Generator` Philox4x32-10 uniform and normal into 256M floats, GB/s written
//!   (`curand_uniform_gbs`, `curand_normal_gbs`), median of 10 after 2.
//!
//! Inputs are normal (sigma 0.5), made on the host and rounded to bf16 and e4m3 there; every
//! product is checked at 8 entries against a CPU dot product of the rounded inputs with the
//! floor's tolerance (`|got - want| <= 1e-2 |want| + f * sum|a b|`, f = 1e-3, 3e-3 for TF32,
//! 1e-2 for FP8), the random numbers by their mean and variance; a wrong result exits non-zero.
//! Prints `INFO` lines (versions) and `FIG name value unit` lines.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Buffer, Device, Error, Event, EventOptions, Result, Stream};
use cuda_safe_libs::blas::{
    Blas, BlasElement, CublasError, Epilogue, F8E4M3, Gemm, Matmul, MatmulCall, MatmulDesc, Scalars,
};
use cuda_safe_libs::rand::{Generator, RngKind};
use half::bf16;

const NMAX: usize = 8192;
const NS: usize = 4096;
const WARM: usize = 5;
const TIMED: usize = 20;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

fn tflops(n: usize, ms: f64) -> f64 {
    2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12
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

/// Normal numbers of sigma 0.5 (Box-Muller on a 64-bit LCG).
fn normals(n: usize, mut state: u64) -> Vec<f32> {
    let mut uniform = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            (0.5 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect()
}

/// The element types the checks read back.
trait Readable: BlasElement {
    fn value(self) -> f64;
}

impl Readable for f32 {
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Readable for bf16 {
    fn value(self) -> f64 {
        f64::from(self.to_f32())
    }
}

impl Readable for F8E4M3 {
    fn value(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// The GELU of the epilogue (tanh approximation).
fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x)).tanh())
}

/// Checks 8 entries of the n x n column-major D of op(A) B (A and B n x n with ld n, on the
/// host) against CPU dot products, as the floor does; prints the worst error over tolerance.
#[allow(clippy::too_many_arguments)]
fn check<I: Readable, O: Readable>(
    what: &str,
    a: &[I],
    b: &[I],
    n: usize,
    transpose_a: bool,
    d: &Buffer,
    bias: Option<&[bf16]>,
    f: f64,
) -> Result<bool> {
    let points = [
        (0, 0),
        (n - 1, n - 1),
        (n / 2, n / 3),
        (n / 7, n - 3),
        (1, n / 2 + 1),
        (n - 2, 5),
        (2 * n / 3, n / 5),
        (n / 9, 3 * n / 4),
    ];
    let view = d.as_slice::<O>()?;
    let mut worst: f64 = 0.0;
    for (i, j) in points {
        let (mut want, mut size) = (0.0, 0.0);
        for p in 0..n {
            let x = a[if transpose_a { i * n + p } else { p * n + i }].value();
            let y = b[j * n + p].value();
            want += x * y;
            size += (x * y).abs();
        }
        if let Some(bias) = bias {
            want = gelu(want + f64::from(bias[i].to_f32()));
        }
        let got = view.slice(j * n + i..j * n + i + 1)?.to_vec()?[0].value();
        let tolerance = 1e-2 * want.abs() + f * size;
        let error = (got - want).abs();
        // A NaN fails too.
        if error.is_nan() || error > tolerance {
            eprintln!(
                "WRONG {what} at ({i},{j}): got {got}, want {want} (tolerance {tolerance:.3e})"
            );
            return Ok(false);
        }
        worst = worst.max(error / tolerance);
    }
    println!("check {what} ok (worst error / tolerance {worst:.3})");
    Ok(true)
}

/// Events around each of `WARM + TIMED` runs of `call`; the median in milliseconds.
fn time(
    stream: &Stream,
    events: &(Event, Event),
    mut call: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut times = Vec::with_capacity(TIMED);
    for round in 0..WARM + TIMED {
        if round >= WARM {
            events.0.record(stream)?;
        }
        call()?;
        if round >= WARM {
            events.1.record(stream)?;
            events.1.sync()?;
            times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e3);
        }
    }
    stream.sync()?;
    Ok(median(&mut times))
}

fn run() -> Result<bool> {
    let start = Instant::now();
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
    let mut blas = Blas::new(&stream)?;
    let matmul = Matmul::new(&stream)?;
    println!("INFO cublas_version {}", blas.version()?);
    println!("INFO cublaslt_version {}", matmul.version()?);
    println!("INFO curand_version {}", cuda_safe_libs::rand::version()?);

    // Inputs: normal(0, 0.5), rounded to bf16 (and e4m3) on the host.
    let fp8 = major >= 9;
    let nn = NMAX * NMAX;
    let (fa, fb) = (normals(nn, 1), normals(nn, 2));
    let host_a: Vec<bf16> = fa.iter().copied().map(bf16::from_f32).collect();
    let host_b: Vec<bf16> = fb.iter().copied().map(bf16::from_f32).collect();
    let (host_a8, host_b8): (Vec<F8E4M3>, Vec<F8E4M3>) = if fp8 {
        (
            fa.iter().copied().map(F8E4M3::from_f32).collect(),
            fb.iter().copied().map(F8E4M3::from_f32).collect(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let (host_af, host_bf) = (fa[..NS * NS].to_vec(), fb[..NS * NS].to_vec());
    drop((fa, fb));
    let host_bias: Vec<bf16> = normals(NMAX, 3).into_iter().map(bf16::from_f32).collect();
    let a = pool.allocate_from_host(&host_a, &stream)?;
    let b = pool.allocate_from_host(&host_b, &stream)?;
    let af = pool.allocate_from_host(&host_af, &stream)?;
    let bf = pool.allocate_from_host(&host_bf, &stream)?;
    let bias = pool.allocate_from_host(&host_bias, &stream)?;
    let mut c32 = pool.allocate_zeroed::<f32>(nn, &stream)?;
    let mut c16 = pool.allocate_zeroed::<bf16>(nn, &stream)?;
    println!(
        "INFO inputs ready in {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );

    // Blas::gemm sweep.
    for n in [256, 1024, 4096, 8192] {
        for transposed in [false, true] {
            let shape = if transposed {
                Gemm::new(n, n, n).transpose_a()
            } else {
                Gemm::new(n, n, n)
            };
            for f32_out in [false, true] {
                let host = Scalars::host(1.0f32, 0.0);
                let ms = if f32_out {
                    time(&stream, &events, || {
                        blas.gemm::<bf16, f32>(&shape, host, &a, &b, &mut c32)
                    })?
                } else {
                    time(&stream, &events, || {
                        blas.gemm::<bf16, bf16>(&shape, host, &a, &b, &mut c16)
                    })?
                };
                let layout = if transposed { "TN" } else { "NN" };
                let what = format!(
                    "gemm bf16 {layout} {} out {n}",
                    if f32_out { "f32" } else { "bf16" }
                );
                let ok = if f32_out {
                    check::<bf16, f32>(&what, &host_a, &host_b, n, transposed, &c32, None, 1e-3)?
                } else {
                    check::<bf16, bf16>(&what, &host_a, &host_b, n, transposed, &c16, None, 1e-3)?
                };
                if !ok {
                    return Ok(false);
                }
                let name = format!(
                    "gemm_bf16_{}{}{n}_tflops",
                    if transposed { "tn_" } else { "" },
                    if f32_out { "f32out_" } else { "" }
                );
                fig(&name, tflops(n, ms), "TFLOP/s");
            }
        }
    }

    // f32 4096³, plain and TF32.
    let shape = Gemm::new(NS, NS, NS);
    for tf32 in [false, true] {
        blas.allow_tf32(tf32);
        let ms = time(&stream, &events, || {
            blas.gemm::<f32, f32>(&shape, Scalars::host(1.0, 0.0), &af, &bf, &mut c32)
        })?;
        let (what, factor) = if tf32 {
            ("sgemm tf32 4096", 3e-3)
        } else {
            ("sgemm fp32 4096", 1e-3)
        };
        if !check::<f32, f32>(what, &host_af, &host_bf, NS, false, &c32, None, factor)? {
            return Ok(false);
        }
        let name = if tf32 {
            "sgemm_tf32_4096_tflops"
        } else {
            "sgemm_4096_tflops"
        };
        fig(name, tflops(NS, ms), "TFLOP/s");
    }
    blas.allow_tf32(false);

    // Host cost of one 256³ bf16 GEMM.
    if !host_cost(&blas, &stream, (&a, &b, &mut c16), &host_a, &host_b)? {
        return Ok(false);
    }

    // cuBLASLt 8192³.
    let square = Gemm::new(NMAX, NMAX, NMAX);
    let mut bf16_rate = None;
    let desc = MatmulDesc::new::<bf16, bf16, bf16>(square);
    if let Some(plan) = plan("lt_bf16_8192_tflops", &matmul, &desc)? {
        let ms = time(&stream, &events, || {
            matmul.run(
                &plan,
                MatmulCall::new::<bf16, bf16, bf16>(&a, &b, &mut c16)?,
            )
        })?;
        if !check::<bf16, bf16>(
            "lt bf16 8192",
            &host_a,
            &host_b,
            NMAX,
            false,
            &c16,
            None,
            1e-3,
        )? {
            return Ok(false);
        }
        fig("lt_bf16_8192_tflops", tflops(NMAX, ms), "TFLOP/s");
        bf16_rate = Some(tflops(NMAX, ms));
    }
    let desc = MatmulDesc::new::<bf16, bf16, bf16>(square).epilogue(Epilogue::GeluBias);
    if let Some(plan) = plan("lt_bf16_gelu_bias_8192_tflops", &matmul, &desc)? {
        let ms = time(&stream, &events, || {
            let call =
                MatmulCall::new::<bf16, bf16, bf16>(&a, &b, &mut c16)?.bias::<bf16>(&bias)?;
            matmul.run(&plan, call)
        })?;
        let what = "lt bf16 gelu+bias 8192";
        if !check::<bf16, bf16>(
            what,
            &host_a,
            &host_b,
            NMAX,
            false,
            &c16,
            Some(&host_bias),
            1e-3,
        )? {
            return Ok(false);
        }
        fig("lt_bf16_gelu_bias_8192_tflops", tflops(NMAX, ms), "TFLOP/s");
    }
    if fp8 {
        let a8 = pool.allocate_from_host(&host_a8, &stream)?;
        let b8 = pool.allocate_from_host(&host_b8, &stream)?;
        let desc = MatmulDesc::new::<F8E4M3, F8E4M3, bf16>(square.transpose_a());
        if let Some(plan) = plan("lt_fp8_8192_tflops", &matmul, &desc)? {
            let ms = time(&stream, &events, || {
                matmul.run(
                    &plan,
                    MatmulCall::new::<F8E4M3, F8E4M3, bf16>(&a8, &b8, &mut c16)?,
                )
            })?;
            let what = "lt fp8 e4m3 TN 8192";
            if !check::<F8E4M3, bf16>(what, &host_a8, &host_b8, NMAX, true, &c16, None, 1e-2)? {
                return Ok(false);
            }
            let rate = tflops(NMAX, ms);
            fig("lt_fp8_8192_tflops", rate, "TFLOP/s");
            if let Some(bf16_rate) = bf16_rate {
                fig("lt_fp8_over_bf16_8192", rate / bf16_rate, "x");
            }
        }
    } else {
        eprintln!("lt_fp8_8192_tflops refused: FP8 needs sm_90 here, device is sm_{major}{minor}");
        println!("FIG lt_fp8_8192_tflops 0 unsupported");
    }

    // cuRAND, 256M floats, into freed room.
    drop((a, b, af, bf, c32, c16, bias));
    let ok = curand(&stream, &events, &pool)?;
    println!("INFO total {:.1} s", start.elapsed().as_secs_f64());
    println!("DONE");
    Ok(ok)
}

/// The 256³ host-cost loops; `Ok(false)` when the product is wrong.
fn host_cost(
    blas: &Blas,
    stream: &Stream,
    (a, b, c): (&Buffer, &Buffer, &mut Buffer),
    host_a: &[bf16],
    host_b: &[bf16],
) -> Result<bool> {
    let shape = Gemm::new(256, 256, 256);
    let host = Scalars::host(1.0f32, 0.0);
    for _ in 0..20 {
        blas.gemm::<bf16, bf16>(&shape, host, a, b, c)?;
    }
    stream.sync()?;
    let mut times = vec![0f64; 1000];
    for time in &mut times {
        let start = Instant::now();
        blas.gemm::<bf16, bf16>(&shape, host, a, b, c)?;
        *time = start.elapsed().as_secs_f64() * 1e6;
    }
    stream.sync()?;
    fig("gemm_bf16_256_enqueue_us", median(&mut times), "us");
    for time in &mut times {
        let start = Instant::now();
        blas.gemm::<bf16, bf16>(&shape, host, a, b, c)?;
        stream.sync()?;
        *time = start.elapsed().as_secs_f64() * 1e6;
    }
    fig("gemm_bf16_256_call_plus_sync_us", median(&mut times), "us");
    check::<bf16, bf16>(
        "gemm_ex bf16 NN bf16 out 256 (host-cost loop)",
        host_a,
        host_b,
        256,
        false,
        c,
        None,
        1e-3,
    )
}

/// The plan of one cuBLASLt row, or `None` (with `FIG name 0 unsupported` printed, as the floor
/// prints it) when cuBLASLt refuses it.
fn plan(
    name: &str,
    matmul: &Matmul,
    desc: &MatmulDesc,
) -> Result<Option<std::sync::Arc<cuda_safe_libs::blas::MatmulPlan>>> {
    match matmul.plan(desc) {
        Ok(plan) => {
            println!(
                "INFO {name} heuristic workspace {} bytes",
                plan.workspace_size()
            );
            Ok(Some(plan))
        }
        Err(refused)
            if matches!(refused, Error::Unsupported { .. })
                || matches!(
                    refused.library_error::<CublasError>(),
                    Some(CublasError::MatmulRefused { .. })
                ) =>
        {
            eprintln!("{name} refused: {refused}");
            println!("FIG {name} 0 unsupported");
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// The cuRAND rows; `Ok(false)` when the numbers' moments are off.
fn curand(
    stream: &Stream,
    events: &(Event, Event),
    pool: &cuda_safe::DeviceMemoryResource,
) -> Result<bool> {
    let n = 256usize << 20;
    let mut out = pool.allocate_zeroed::<f32>(n, stream)?;
    let mut generator = Generator::new(stream, RngKind::Philox4x32_10)?;
    generator.set_seed(20_261_201)?;
    for normal in [false, true] {
        let mut times = Vec::with_capacity(10);
        for round in 0..12 {
            if round >= 2 {
                events.0.record(stream)?;
            }
            if normal {
                generator.normal::<f32>(&mut out, 0.0, 1.0)?;
            } else {
                generator.uniform::<f32>(&mut out)?;
            }
            if round >= 2 {
                events.1.record(stream)?;
                events.1.sync()?;
                times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e3);
            }
        }
        stream.sync()?;
        let sample: Vec<f32> = out.as_slice::<f32>()?.slice(..1 << 20)?.to_vec()?;
        if !normal && !sample.iter().all(|v| *v > 0.0 && *v <= 1.0) {
            eprintln!("WRONG uniform value outside (0, 1]");
            return Ok(false);
        }
        let count = sample.len() as f64;
        let mean = sample.iter().map(|v| f64::from(*v)).sum::<f64>() / count;
        let variance =
            sample.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / count - mean * mean;
        let ok = if normal {
            mean.abs() < 0.01 && (variance - 1.0).abs() < 0.02
        } else {
            (mean - 0.5).abs() < 0.01 && (variance - 1.0 / 12.0).abs() < 0.002
        };
        let kind = if normal { "normal" } else { "uniform" };
        if !ok {
            eprintln!("WRONG curand {kind}: mean {mean} variance {variance}");
            return Ok(false);
        }
        println!("check curand {kind} ok (mean {mean:.4}, variance {variance:.4})");
        let gbs = n as f64 * 4.0 / (median(&mut times) * 1e-3) / 1e9;
        fig(&format!("curand_{kind}_gbs"), gbs, "GB/s");
    }
    Ok(true)
}
