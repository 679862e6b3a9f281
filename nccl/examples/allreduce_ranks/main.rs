//! All-reduce with one process per GPU, as `torchrun` runs a job: started without `RANK`, it
//! launches itself once per GPU with `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`
//! (127.0.0.1), `MASTER_PORT` (a port the launcher binds and hands to rank 0) and the job's
//! secret set and waits for them; each rank takes its GPU, gets the unique id from rank 0 over
//! TCP (each side proving it knows the secret) and joins (`ncclCommInitRank`), then measures
//! as the `allreduce` example does (the method of `bench/floors/nccl_floor.c`, then one more
//! all-reduce of a pattern whose exact sum is known, checked in every element). Rank 0 prints
//! the table and the `FIG` lines.
//!
//! ```text
//! cargo run --release -p cuda-safe --features nccl --example allreduce_ranks
//! ```
//!
//! Under a launcher of your own, set the five variables and `CUDA_SAFE_NCCL_SECRET` (the same
//! random hex digits for every rank) and start it once per GPU. Every rank
//! inherits this process's environment, NCCL's variables included. Without a driver, a GPU or
//! NCCL it prints one line saying what is missing and exits with status 1.

#[path = "../allreduce/measure.rs"]
mod measure;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cuda_safe::{Device, Result, StreamOptions};
use cuda_safe_nccl::{self as nccl, Communicator, Launcher, RANK, ReduceOp};

/// How long a rank waits for the others to join and for each size's work.
const TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let result = if std::env::var_os(RANK).is_some() {
        rank()
    } else {
        launch()
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: a rank failed or a sum was wrong");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The parent: one rank per GPU (at most 8), then their exit statuses.
fn launch() -> Result<bool> {
    let ranks = Device::count()?.min(8);
    if ranks == 0 {
        return Err(cuda_safe::Error::invalid_argument("no GPU found"));
    }
    println!(
        "nccl {}, {ranks} ranks (one process per GPU)",
        nccl::version()?
    );
    let program = std::env::current_exe()
        .map_err(|e| cuda_safe::Error::invalid_argument(format!("finding this program: {e}")))?;
    let launcher = Launcher::local(ranks)?;
    let mut children = launcher.spawn(program, std::iter::empty::<&str>())?;
    let mut all_right = true;
    for (rank, child) in children.iter_mut().enumerate() {
        let status = child.wait().map_err(|e| {
            cuda_safe::Error::invalid_argument(format!("waiting for rank {rank}: {e}"))
        })?;
        if !status.success() {
            eprintln!("rank {rank} exited with {status}");
            all_right = false;
        }
    }
    Ok(all_right)
}

/// One rank.
fn rank() -> Result<bool> {
    let start = Instant::now();
    let comm = Communicator::from_env(TIMEOUT)?;
    let init_ms = start.elapsed().as_secs_f64() * 1e3;
    let (rank, ranks) = (comm.rank()?, comm.size()?);
    let device = *comm.device();
    if rank == 0 {
        println!("FIG nccl_comm_init_rank {init_ms:.1} ms");
    }
    let stream = device.create_stream(StreamOptions::default())?;
    let largest = measure::SIZES[measure::SIZES.len() - 1];
    let mut buffer = device
        .default_memory_resource()?
        .allocate(largest, &stream)?;
    let mut whole = buffer.as_mut_slice::<f32>()?;
    if rank == 0 {
        measure::print_header(ranks);
    }
    let mut all_right = true;
    for bytes in measure::SIZES {
        let count = bytes / size_of::<f32>();
        let mut part = whole.slice_mut(..count)?;
        part.fill(measure::START)?;
        let micros = measure::time(
            bytes,
            || {
                nccl::group(|group| {
                    group.all_reduce_in_place::<f32>(&comm, &mut part, ReduceOp::Sum, &stream)
                })
            },
            || comm.wait_with_timeout(&stream, TIMEOUT),
        )?;
        // One more all-reduce, untimed, of a pattern whose exact sum is known for any number
        // of ranks, checked in every element.
        measure::fill_pattern(&mut part, rank)?;
        nccl::group(|group| {
            group.all_reduce_in_place::<f32>(&comm, &mut part, ReduceOp::Sum, &stream)
        })?;
        comm.wait_with_timeout(&stream, TIMEOUT)?;
        let row = measure::Row {
            bytes,
            micros,
            check: measure::check_pattern(&part.as_slice(), rank, ranks)?,
        };
        if rank == 0 {
            all_right &= measure::print_row(&row, ranks);
        } else if !row.check.is_right() {
            eprintln!(
                "rank {rank}, {bytes} bytes: the sum was wrong: {:?}",
                row.check
            );
            all_right = false;
        }
    }
    comm.finalize()?;
    if rank == 0 {
        println!("DONE");
    }
    Ok(all_right)
}
