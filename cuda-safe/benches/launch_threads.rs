//! Launch throughput from several threads: T threads (1, 2, 4, 8), each with its own stream on
//! the primary context, each launching an empty kernel 20,000 times through [`launch`] and then
//! synchronizing its stream; throughput is all launches over the wall time from the common
//! start to the last thread's end (median of 5). The same loop as
//! `bench/floors/launch_threads_floor.c`, with the same `FIG` names.
//!
//! `launch_threads crate raw` measures instead, in one process, the crate's loop against the
//! floor's raw driver calls (`cuLaunchKernel` + `cuStreamSynchronize` on the same kernel) for
//! each thread count, alternating A B B A repeat by repeat, and prints the medians of each way
//! and `FIG launch_throughput_<T>_threads_crate_over_raw`, the median per-pair ratio of their
//! rates. `raw raw` is the control (two identical ways: the method's own spread).

use std::process::ExitCode;

#[path = "common/check.rs"]
mod check;
#[path = "common/threads.rs"]
mod threads;

use check::check;
use cuda_safe::sys::CUfunction;
use cuda_safe::{
    CodeKind, Device, Error, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream, launch,
};
use threads::{LAUNCHES, REPEATS, WARMUP};

/// Pairs of repeats per thread count when two ways are compared.
const PAIRS: usize = 8;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// How a thread launches and waits.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Way {
    /// [`launch`] + [`Stream::sync`].
    Crate,
    /// `cuLaunchKernel` + `cuStreamSynchronize`, as the floor.
    Raw,
}

impl Way {
    fn parse(name: &str) -> Result<Self> {
        match name {
            "crate" => Ok(Self::Crate),
            "raw" => Ok(Self::Raw),
            other => Err(Error::invalid_argument(format!(
                "unknown way `{other}`: crate or raw"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Crate => "crate",
            Self::Raw => "raw",
        }
    }

    /// `count` launches of `kernel` (no parameters) on `stream`, then a wait for them.
    fn run(self, kernel: &Kernel, stream: &Stream, count: u32) -> Result<()> {
        let config = LaunchConfig::new(1, 1);
        match self {
            Self::Crate => {
                for _ in 0..count {
                    // SAFETY: `empty` takes no arguments and touches no memory.
                    unsafe { launch(stream, &config, kernel, ())? };
                }
                stream.sync()
            }
            Self::Raw => {
                let driver = cuda_safe::sys::driver()?;
                let (function, raw): (CUfunction, _) = (kernel.as_raw().cast(), stream.as_raw());
                for _ in 0..count {
                    // SAFETY: a CUkernel is accepted where a CUfunction is; `empty` takes no
                    // parameters; `raw` is a live stream of the context the kernel runs in.
                    let launched = unsafe {
                        driver.cuLaunchKernel(
                            function,
                            1,
                            1,
                            1,
                            1,
                            1,
                            1,
                            0,
                            raw,
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                        )
                    }?;
                    check("cuLaunchKernel", launched)?;
                }
                // SAFETY: a live stream.
                check("cuStreamSynchronize", unsafe {
                    driver.cuStreamSynchronize(raw)
                }?)
            }
        }
    }
}

fn run() -> Result<()> {
    let ways = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .map(|name| Way::parse(&name))
        .collect::<Result<Vec<_>>>()?;
    let device = Device::new(0)?;
    device.set_current()?;
    let empty = Program::new(
        "extern \"C\" __global__ void empty() {}",
        ProgramOptions::default(),
    )?
    .compile(CodeKind::Cubin)?
    .load()?
    .get_kernel("empty")?;
    match ways[..] {
        [] => floor_figures(&device, &empty)?,
        [first, second] => compare(&device, &empty, first, second)?,
        _ => {
            return Err(Error::invalid_argument(
                "name no way (the floor's figures) or two ways to compare: crate raw",
            ));
        }
    }
    println!("DONE");
    Ok(())
}

/// The floor's figures: the median of 5 repeats of the crate's loop per thread count.
fn floor_figures(device: &Device, kernel: &Kernel) -> Result<()> {
    for threads in [1usize, 2, 4, 8] {
        let mut rates = (0..REPEATS)
            .map(|_| throughput(device, kernel, threads, Way::Crate))
            .collect::<Result<Vec<f64>>>()?;
        println!(
            "FIG launch_throughput_{threads}_threads {:.1} 1/s",
            median(&mut rates)
        );
    }
    Ok(())
}

/// Both ways per thread count, A B B A, and the median per-pair ratio of their rates.
fn compare(device: &Device, kernel: &Kernel, first: Way, second: Way) -> Result<()> {
    let (one, two) = (first.name(), second.name());
    for threads in [1usize, 2, 4, 8] {
        let (mut ones, mut twos, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 0..PAIRS {
            let (a, b) = if pair % 2 == 0 {
                let a = throughput(device, kernel, threads, first)?;
                (a, throughput(device, kernel, threads, second)?)
            } else {
                let b = throughput(device, kernel, threads, second)?;
                (throughput(device, kernel, threads, first)?, b)
            };
            ones.push(a);
            twos.push(b);
            ratios.push(a / b);
        }
        println!(
            "FIG launch_throughput_{threads}_threads_{one} {:.1} 1/s",
            median(&mut ones)
        );
        if first != second {
            println!(
                "FIG launch_throughput_{threads}_threads_{two} {:.1} 1/s",
                median(&mut twos)
            );
        }
        println!(
            "FIG launch_throughput_{threads}_threads_{one}_over_{two} {:.4} ratio",
            median(&mut ratios)
        );
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Launches per second with `threads` threads launching `way`.
fn throughput(device: &Device, kernel: &Kernel, threads: usize, way: Way) -> Result<f64> {
    let (device, kernel) = (*device, kernel.clone());
    let warm = kernel.clone();
    threads::launches_per_second(
        threads,
        LAUNCHES,
        move || {
            let stream = device.create_stream(Default::default())?;
            way.run(&warm, &stream, WARMUP)?;
            Ok(stream)
        },
        move |stream| way.run(&kernel, stream, LAUNCHES),
    )
}
