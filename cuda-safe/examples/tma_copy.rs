//! A 2-D tile copy through TMA tensor maps (compute capability 9.0 on): an 8192 x 8192 float
//! matrix copied tile by tile (64 x 32 floats through shared memory, one tile per block) by
//! `cp.async.bulk.tensor` loads and stores, checked against the source, and timed beside
//! `cuMemcpy2DAsync` of the same region. The kernel is `examples/tma/copy.cu`.
//!
//! ```text
//! cargo run --release -p cuda-safe --example tma_copy
//! ```
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

#[path = "tma/common.rs"]
mod common;

use std::process::ExitCode;

use common::Matrix;
use cuda_safe::{Device, Event, EventOptions, Result, Stream};

const REPS: usize = 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The median GPU time of `work` on `stream`, in microseconds.
fn median_us(
    device: &Device,
    stream: &Stream,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let timing = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timing)?, device.create_event(timing)?);
    work()?; // warm-up
    let mut times = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream)?;
        work()?;
        end.record(stream)?;
        end.sync()?;
        times.push(Event::elapsed(&start, &end)?.as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[REPS / 2])
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let (major, minor) = device.compute_capability()?;
    if major < 9 {
        return Err(cuda_safe::Error::unsupported(
            "TMA",
            format!("it needs compute capability 9.0, device 0 has {major}.{minor}"),
        ));
    }
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let matrix = Matrix {
        width: 8192,
        height: 8192,
        pitch: 8192 * 4,
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let host: Vec<u32> = (0..matrix.bytes() / 4)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u32
        })
        .collect();
    let src = pool.allocate_from_host(&host, &stream)?;
    let mut dst = pool.allocate_zeroed::<u32>(host.len(), &stream)?;
    let kernel = common::kernel(&device)?;
    let (src_map, dst_map) = (matrix.map(&src)?, matrix.map(&dst)?);

    // SAFETY: the maps describe `src` and `dst`, which outlive every queued copy (the stream
    // is synchronised before they drop).
    let copy = || unsafe { common::copy(&stream, &kernel, &matrix, &src_map, &dst_map) };
    copy()?;
    let copied = dst.to_vec::<u32>()?;
    let wrong = copied.iter().zip(&host).filter(|(a, b)| a != b).count();
    let tma_us = median_us(&device, &stream, copy)?;
    let memcpy_us = median_us(&device, &stream, || {
        common::memcpy_2d(&stream, &matrix, &src, &mut dst)
    })?;
    stream.sync()?;
    // Bytes moved: each byte read once and written once.
    let moved = 2.0 * (matrix.width * matrix.height * 4) as f64;
    let (tma_gbs, memcpy_gbs) = (moved / tma_us / 1e3, moved / memcpy_us / 1e3);
    println!(
        "tma_copy: {}x{} floats in {}x{} tiles: TMA {tma_gbs:.0} GB/s ({tma_us:.0} us), \
         cuMemcpy2DAsync {memcpy_gbs:.0} GB/s ({memcpy_us:.0} us), {:.0}% of it; {wrong} of {} \
         elements wrong",
        matrix.width,
        matrix.height,
        common::BOX_W,
        common::BOX_H,
        100.0 * tma_gbs / memcpy_gbs,
        host.len(),
    );
    if wrong > 0 {
        return Err(cuda_safe::Error::invalid_argument("the TMA copy is wrong"));
    }
    Ok(())
}
