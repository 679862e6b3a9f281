//! All-reduce across every GPU of this process, the way `bench/floors/nccl_floor.c` measures it:
//! one communicator per GPU (`ncclCommInitAll`), each iteration a group of one in-place float32
//! sum per GPU, sizes from 1 KiB to 1 GiB. Prints a table like nccl-tests' (size, count, time,
//! algorithm and bus bandwidth, bus = algorithm x 2(n-1)/n), and `FIG` lines under the floor's
//! names. After each size's timed iterations one more all-reduce, of a pattern whose exact sum
//! is known for any number of GPUs (`measure::expected`), is checked in every element of every
//! GPU: the table's last column.
//!
//! ```text
//! cargo run --release -p cuda-safe --features nccl --example allreduce
//! ```
//!
//! NCCL's variables are NCCL's (`NCCL_NVLS_ENABLE=0` turns NVLink SHARP off, as
//! `docs/collectives.md` explains). Without a driver, a GPU or NCCL it prints one line saying
//! what is missing and exits with status 1.

mod measure;

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Device, DeviceSliceMut, Result, Stream, StreamOptions};
use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: a sum was wrong");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let mut devices = Device::all()?;
    devices.truncate(8);
    if devices.is_empty() {
        return Err(cuda_safe::Error::invalid_argument("no GPU found"));
    }
    println!("nccl {}, {} GPUs", nccl::version()?, devices.len());
    let start = Instant::now();
    let comms = Communicator::init_all(&devices)?;
    println!(
        "FIG nccl_comm_init_all {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let streams = devices
        .iter()
        .map(|device| device.create_stream(StreamOptions::default()))
        .collect::<Result<Vec<Stream>>>()?;
    let largest = measure::SIZES[measure::SIZES.len() - 1];
    let mut buffers = devices
        .iter()
        .zip(&streams)
        .map(|(device, stream)| device.default_memory_resource()?.allocate(largest, stream))
        .collect::<Result<Vec<_>>>()?;
    let mut whole = buffers
        .iter_mut()
        .map(|buffer| buffer.as_mut_slice::<f32>())
        .collect::<Result<Vec<DeviceSliceMut<'_, f32>>>>()?;

    let ranks = devices.len();
    measure::print_header(ranks);
    let mut all_right = true;
    for bytes in measure::SIZES {
        let count = bytes / size_of::<f32>();
        for slice in &mut whole {
            slice.slice_mut(..count)?.fill(measure::START)?;
        }
        // The parts a group borrows until it ends, made once per size.
        let mut parts = whole
            .iter_mut()
            .map(|slice| slice.slice_mut(..count))
            .collect::<Result<Vec<DeviceSliceMut<'_, f32>>>>()?;
        let micros = measure::time(
            bytes,
            || {
                nccl::group(|group| {
                    for ((comm, part), stream) in comms.iter().zip(&mut parts).zip(&streams) {
                        group.all_reduce_in_place::<f32>(comm, part, ReduceOp::Sum, stream)?;
                    }
                    Ok(())
                })
            },
            || streams.iter().try_for_each(Stream::sync),
        )?;
        // One more all-reduce, untimed, of a pattern whose exact sum is known for any number
        // of GPUs, checked in every element of every GPU.
        for (rank, part) in parts.iter_mut().enumerate() {
            measure::fill_pattern(part, rank)?;
        }
        nccl::group(|group| {
            for ((comm, part), stream) in comms.iter().zip(&mut parts).zip(&streams) {
                group.all_reduce_in_place::<f32>(comm, part, ReduceOp::Sum, stream)?;
            }
            Ok(())
        })?;
        streams.iter().try_for_each(Stream::sync)?;
        let mut check = measure::Check::default();
        for (rank, part) in parts.iter().enumerate() {
            check.merge(measure::check_pattern(&part.as_slice(), rank, ranks)?);
        }
        let row = measure::Row {
            bytes,
            micros,
            check,
        };
        all_right &= measure::print_row(&row, ranks);
    }
    drop(whole);
    for comm in comms {
        comm.close()?;
    }
    println!("DONE");
    Ok(all_right)
}
