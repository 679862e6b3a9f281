//! A diagnostic for launch throughput from threads: `bench/launch_threads_floor.c` written in
//! Rust over the `-sys` tables alone (the driver and NVRTC, reached as the crate reaches them),
//! with pieces of `cuda-safe` switched in by letters. It tells whether a Rust process, or one of
//! the crate's pieces, launches from threads slower than the C floor. It prints the floor's
//! `FIG launch_throughput_<T>_threads` lines (T = 1, 2, 4, 8 threads, each launching an empty
//! kernel 20,000 times on its own stream; median of 5 repeats).
//!
//! usage: `diag_launch_threads LETTERS`, where LETTERS is `-` (the floor's calls only) or any of:
//! - `d`: the main thread first calls `Device::new(0)` and `Device::set_current`;
//! - `p`: the kernel comes from `Program` (compile, load, `get_kernel`), not raw NVRTC and
//!   `cuLibraryLoadData`;
//! - `s`: the workers make their streams with `Device::create_stream`;
//! - `u`: the workers clear their current context after making their stream;
//! - `l`: the workers launch with [`launch`] and wait with `Stream::sync` (needs `p` and `s`);
//! - `g`: the workers skip the floor's first `cuCtxSetCurrent` (needs `s`).
//!
//! `dpslg` makes the calls `cuda-safe/benches/launch_threads.rs` makes (its workers are left
//! unbound by the stream's scoped context, as `u` leaves them).
//!
//! A second argument, `diag_launch_threads LETTERS BYTES`, first takes BYTES of heap and keeps
//! them, so that everything the process and the driver allocate afterwards lands elsewhere:
//! if the rate moves with BYTES, the layout of memory, not a call, makes the difference.

use std::process::ExitCode;

#[path = "../../cuda-safe/benches/common/check.rs"]
mod check;
#[path = "common/floor_calls.rs"]
mod floor_calls;
#[path = "common/letters.rs"]
mod letters;
#[path = "../../cuda-safe/benches/common/threads.rs"]
mod threads;

use check::check;
use cuda_safe::sys::{CUcontext, CUfunction, CUstream, CUstream_flags, driver};
use cuda_safe::{
    CodeKind, Device, Error, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream, launch,
};
use threads::{LAUNCHES, REPEATS, WARMUP};

const SOURCE: &str = "extern \"C\" __global__ void empty() {}\n";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Which of the crate's pieces replace the floor's calls.
#[derive(Clone, Copy, Debug, Default)]
struct Pieces {
    device: bool,
    program: bool,
    streams: bool,
    unbind: bool,
    launch: bool,
    skip_bind: bool,
}

impl Pieces {
    fn parse(letters: &str) -> Result<Self> {
        let mut pieces = Self::default();
        letters::parse(
            letters,
            &mut [
                ('d', &mut pieces.device),
                ('p', &mut pieces.program),
                ('s', &mut pieces.streams),
                ('u', &mut pieces.unbind),
                ('l', &mut pieces.launch),
                ('g', &mut pieces.skip_bind),
            ],
        )?;
        letters::require(&[
            (
                pieces.launch,
                pieces.program && pieces.streams,
                "`l` needs `p` and `s`",
            ),
            (pieces.skip_bind, pieces.streams, "`g` needs `s`"),
        ])?;
        Ok(pieces)
    }
}

/// What the workers share.
#[derive(Clone, Debug)]
struct Shared {
    pieces: Pieces,
    primary: CUcontext,
    /// The kernel as a launch handle (a `CUkernel` is accepted where a `CUfunction` is).
    function: CUfunction,
    /// The crate's kernel, with `p`.
    kernel: Option<Kernel>,
}

// SAFETY: the context and kernel handles may be used from any thread, and the primary context
// stays retained for the process (it is never released).
unsafe impl Send for Shared {}

fn run() -> Result<()> {
    let letters = std::env::args().nth(1).ok_or_else(|| {
        Error::invalid_argument(
            "usage: diag_launch_threads LETTERS [BYTES] (LETTERS: `-`, or any of d p s u l g)",
        )
    })?;
    let pieces = Pieces::parse(&letters)?;
    let pad_bytes = match std::env::args().nth(2) {
        Some(bytes) => bytes
            .parse::<usize>()
            .map_err(|_| Error::invalid_argument(format!("`{bytes}` is not a number of bytes")))?,
        None => 0,
    };
    let pad = vec![1u8; pad_bytes];
    if pieces.device {
        Device::new(0)?.set_current()?;
    }
    let (device, primary) = floor_calls::primary_context()?;
    let (function, kernel) = if pieces.program {
        let kernel = Program::new(SOURCE, ProgramOptions::default())?
            .compile(CodeKind::Cubin)?
            .load()?
            .get_kernel("empty")?;
        (kernel.as_raw().cast(), Some(kernel))
    } else {
        (
            floor_calls::kernel(floor_calls::load(device, SOURCE)?, c"empty")?,
            None,
        )
    };
    let shared = Shared {
        pieces,
        primary,
        function,
        kernel,
    };
    for threads in [1usize, 2, 4, 8] {
        let mut rates = (0..REPEATS)
            .map(|_| throughput(&shared, threads))
            .collect::<Result<Vec<f64>>>()?;
        rates.sort_by(f64::total_cmp);
        println!(
            "FIG launch_throughput_{threads}_threads {:.1} 1/s",
            rates[REPEATS / 2]
        );
    }
    println!("DONE");
    std::hint::black_box(&pad);
    Ok(())
}

/// `count` launches of the kernel on the worker's stream, raw or (with `l`) through [`launch`];
/// then a wait.
fn launches(shared: &Shared, stream: &WorkerStream, count: u32) -> Result<()> {
    let driver = driver()?;
    if let (Some(kernel), Some(crate_stream), true) =
        (&shared.kernel, &stream.crate_stream, shared.pieces.launch)
    {
        let config = LaunchConfig::new(1, 1);
        for _ in 0..count {
            // SAFETY: `empty` takes no arguments and touches no memory.
            unsafe { launch(crate_stream, &config, kernel, ())? };
        }
        return crate_stream.sync();
    }
    for _ in 0..count {
        // SAFETY: a parameterless kernel and a live stream of the primary context.
        let code = unsafe {
            driver.cuLaunchKernel(
                shared.function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream.raw,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )?
        };
        check("cuLaunchKernel", code)?;
    }
    // SAFETY: a live stream.
    check("cuStreamSynchronize", unsafe {
        driver.cuStreamSynchronize(stream.raw)?
    })
}

/// A worker's stream: the crate's (`s`), or one it made with `cuStreamCreate`, destroyed on drop.
struct WorkerStream {
    crate_stream: Option<Stream>,
    raw: CUstream,
}

impl Drop for WorkerStream {
    fn drop(&mut self) {
        if self.crate_stream.is_some() {
            return;
        }
        let destroyed = || -> Result<()> {
            // SAFETY: the stream this worker made, idle after its wait; destroyed once.
            check("cuStreamDestroy", unsafe {
                driver()?.cuStreamDestroy_v2(self.raw)?
            })
        };
        if let Err(error) = destroyed() {
            eprintln!("warning: {error}");
        }
    }
}

/// A worker's setup: the bind, its stream, the unbind, the warm-up.
fn prepare(shared: &Shared) -> Result<WorkerStream> {
    let driver = driver()?;
    let pieces = shared.pieces;
    if !pieces.skip_bind {
        // SAFETY: the primary context stays retained for the process.
        check("cuCtxSetCurrent", unsafe {
            driver.cuCtxSetCurrent(shared.primary)?
        })?;
    }
    let stream = if pieces.streams {
        let stream = Device::new(0)?.create_stream(Default::default())?;
        WorkerStream {
            raw: stream.as_raw(),
            crate_stream: Some(stream),
        }
    } else {
        let mut raw: CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the primary context is current on this thread.
        check("cuStreamCreate", unsafe {
            driver.cuStreamCreate(&mut raw, CUstream_flags::CU_STREAM_NON_BLOCKING.0)?
        })?;
        WorkerStream {
            crate_stream: None,
            raw,
        }
    };
    if pieces.unbind {
        // SAFETY: making no context current is always valid.
        check("cuCtxSetCurrent", unsafe {
            driver.cuCtxSetCurrent(std::ptr::null_mut())?
        })?;
    }
    launches(shared, &stream, WARMUP)?;
    Ok(stream)
}

/// Launches per second with `threads` workers.
fn throughput(shared: &Shared, threads: usize) -> Result<f64> {
    let (for_prepare, for_run) = (shared.clone(), shared.clone());
    threads::launches_per_second(
        threads,
        LAUNCHES,
        move || prepare(&for_prepare),
        move |stream| launches(&for_run, stream, LAUNCHES),
    )
}
