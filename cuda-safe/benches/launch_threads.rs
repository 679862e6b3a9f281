//! Launch throughput from several threads: T threads (1, 2, 4, 8), each with its own stream on
//! the primary context, each launching an empty kernel 20,000 times through [`launch`] and then
//! synchronizing its stream; throughput is all launches over the wall time from the common
//! start to the last thread's end (median of 5). The same loop as
//! `bench/launch_threads_floor.c`, with the same `FIG` names.

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use cuda_safe::{CodeKind, Device, Kernel, LaunchConfig, Program, ProgramOptions, Result, launch};

const LAUNCHES: u32 = 20_000;
const WARMUP: u32 = 1_000;
const REPEATS: usize = 5;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let empty = Program::new(
        "extern \"C\" __global__ void empty() {}",
        ProgramOptions::default(),
    )?
    .compile(CodeKind::Cubin)?
    .load()?
    .get_kernel("empty")?;
    for threads in [1usize, 2, 4, 8] {
        let mut rates = (0..REPEATS)
            .map(|_| throughput(&device, &empty, threads))
            .collect::<Result<Vec<f64>>>()?;
        rates.sort_by(f64::total_cmp);
        println!(
            "FIG launch_throughput_{threads}_threads {:.1} 1/s",
            rates[REPEATS / 2]
        );
    }
    println!("DONE");
    Ok(())
}

/// Launches per second with `threads` threads.
fn throughput(device: &Device, kernel: &Kernel, threads: usize) -> Result<f64> {
    let ready = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (device, kernel, ready) = (*device, kernel.clone(), ready.clone());
            thread::spawn(move || -> Result<Instant> {
                let stream = device.create_stream(Default::default());
                let config = LaunchConfig::new(1, 1);
                let run = |count: u32, stream: &cuda_safe::Stream| -> Result<()> {
                    for _ in 0..count {
                        // SAFETY: `empty` takes no arguments and touches no memory.
                        unsafe { launch(stream, &config, &kernel, ())? };
                    }
                    stream.sync()
                };
                let warmed = stream.and_then(|stream| run(WARMUP, &stream).map(|()| stream));
                ready.wait(); // everyone warmed up (or failed)
                ready.wait(); // the clock starts
                let stream = warmed?;
                run(LAUNCHES, &stream)?;
                Ok(Instant::now())
            })
        })
        .collect();
    ready.wait();
    let start = Instant::now();
    ready.wait();
    let mut end = start;
    for worker in workers {
        let finished = worker
            .join()
            .map_err(|_| cuda_safe::Error::invalid_argument("a launching thread panicked"))??;
        end = end.max(finished);
    }
    Ok(threads as f64 * f64::from(LAUNCHES) / (end - start).as_secs_f64())
}
