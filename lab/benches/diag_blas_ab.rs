//! In-process A/B of the small bf16 GEMM rows of `bench/floors/blas_floor.c`: `Blas::gemm` and
//! the raw `cublasGemmEx` it wraps alternate in one process, round after round, on the same
//! handle, stream and buffers, so a difference under the cross-process noise shows.
//!
//! `diag_blas_ab [ROUNDS]` (default 15) prints, for each shape (bf16 in, bf16 out, f32
//! compute, m = n = k in {256, 1024}, NN and TN), the median over rounds of the crate's and the
//! raw figure and the median of the per-round ratios (crate / raw: above 1 is slower):
//!
//! - `events_us`: events around each call, the median of 20 after 5 warm-ups, as the floor and
//!   the `blas` benchmark time a GEMM (on an idle GPU this includes the host's time between the
//!   first record and the GEMM's launch);
//! - `enqueue_us`: 200 calls queued back to back, the host's time per call, then a sync.

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::Instant;

use cublas_sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType_t};
use cuda_safe::{Buffer, Device, Event, EventOptions, Result, Stream};
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
use half::bf16;

/// Calls timed by events per round, after the warm-ups.
const TIMED: usize = 20;
/// Warm-up calls before the timed ones.
const WARM: usize = 5;
/// Calls queued back to back for the host cost.
const QUEUED: usize = 200;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One GEMM of the A/B: the crate's call, or the raw one with the same arguments.
struct Case<'a> {
    blas: &'a Blas,
    n: usize,
    transposed: bool,
    a: &'a Buffer,
    b: &'a Buffer,
    c: &'a mut Buffer,
}

impl Case<'_> {
    fn ours(&mut self) -> Result<()> {
        let shape = if self.transposed {
            Gemm::new(self.n, self.n, self.n).transpose_a()
        } else {
            Gemm::new(self.n, self.n, self.n)
        };
        self.blas
            .gemm::<bf16, bf16>(&shape, Scalars::host(1.0f32, 0.0), self.a, self.b, self.c)
    }

    fn raw(&mut self) -> Result<()> {
        let cublas = cublas_sys::cublas()?;
        let n = self.n as i32;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let transa = if self.transposed {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        };
        // SAFETY: the buffers hold n² bf16 each (made so), the handle is the crate's live
        // handle bound to the stream, in host pointer mode (the crate's calls use host scalars).
        let status = unsafe {
            cublas.cublasGemmEx(
                self.blas.as_raw(),
                transa,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                n,
                n,
                (&alpha as *const f32).cast::<c_void>(),
                self.a.as_raw() as *const c_void,
                cudaDataType_t::CUDA_R_16BF,
                n,
                self.b.as_raw() as *const c_void,
                cudaDataType_t::CUDA_R_16BF,
                n,
                (&beta as *const f32).cast::<c_void>(),
                self.c.as_raw() as *mut c_void,
                cudaDataType_t::CUDA_R_16BF,
                n,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }?;
        if status.0 != 0 {
            return Err(cuda_safe::Error::unexpected(
                "cublasGemmEx",
                format!("status {}", status.0),
            ));
        }
        Ok(())
    }

    fn call(&mut self, raw: bool) -> Result<()> {
        if raw { self.raw() } else { self.ours() }
    }
}

/// Events around each call: the median in microseconds.
fn events_us(
    case: &mut Case<'_>,
    raw: bool,
    stream: &Stream,
    events: &(Event, Event),
) -> Result<f64> {
    let mut times = Vec::with_capacity(TIMED);
    for round in 0..WARM + TIMED {
        if round >= WARM {
            events.0.record(stream)?;
        }
        case.call(raw)?;
        if round >= WARM {
            events.1.record(stream)?;
            events.1.sync()?;
            times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e6);
        }
    }
    stream.sync()?;
    Ok(median(&mut times))
}

/// The host's time per call of `QUEUED` calls queued back to back, in microseconds.
fn enqueue_us(case: &mut Case<'_>, raw: bool, stream: &Stream) -> Result<f64> {
    stream.sync()?;
    let start = Instant::now();
    for _ in 0..QUEUED {
        case.call(raw)?;
    }
    let took = start.elapsed().as_secs_f64() * 1e6 / QUEUED as f64;
    stream.sync()?;
    Ok(took)
}

fn run(rounds: usize) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    println!("INFO device {}", device.name()?);
    let stream = device.create_stream(Default::default())?;
    let timing = EventOptions::default().timing(true);
    let events = (device.create_event(timing)?, device.create_event(timing)?);
    let pool = device.default_memory_resource()?;
    let blas = Blas::new(&stream)?;
    println!("INFO cublas_version {}", blas.version()?);
    let max = 1024 * 1024;
    let host: Vec<bf16> = (0..max)
        .map(|i| bf16::from_f32((i % 7) as f32 * 0.125))
        .collect();
    let a = pool.allocate_from_host(&host, &stream)?;
    let b = pool.allocate_from_host(&host, &stream)?;
    let mut c = pool.allocate_zeroed::<bf16>(max, &stream)?;
    for n in [256usize, 1024] {
        for transposed in [false, true] {
            let mut case = Case {
                blas: &blas,
                n,
                transposed,
                a: &a,
                b: &b,
                c: &mut c,
            };
            let name = format!("gemm_bf16_{}{n}", if transposed { "tn_" } else { "" });
            let mut figures: [[Vec<f64>; 2]; 2] = Default::default();
            for round in 0..rounds {
                // Which goes first alternates with the round.
                for raw in [round % 2 == 1, round % 2 == 0] {
                    let side = usize::from(raw);
                    figures[0][side].push(events_us(&mut case, raw, &stream, &events)?);
                    figures[1][side].push(enqueue_us(&mut case, raw, &stream)?);
                }
            }
            for (index, what) in ["events_us", "enqueue_us"].iter().enumerate() {
                let [ours, raw] = &figures[index];
                let mut ratios: Vec<f64> = ours.iter().zip(raw).map(|(o, r)| o / r).collect();
                let (mut ours, mut raw) = (ours.clone(), raw.clone());
                println!(
                    "AB {name}_{what} crate {:.3} raw {:.3} ratio {:.3} rounds {rounds}",
                    median(&mut ours),
                    median(&mut raw),
                    median(&mut ratios)
                );
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let rounds = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(15);
    match run(rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("diag_blas_ab: {error}");
            ExitCode::FAILURE
        }
    }
}
