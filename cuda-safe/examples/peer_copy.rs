//! Peer copies between two GPUs: bandwidth one way, the other way and both ways at once, for
//! sizes from 1 MiB to 1 GiB, with the data checked.
//!
//! The 1 GiB rows are measured as `multi_gpu_floor.c` measures them (3 warm-up copies, then 10
//! copies timed with events on the copying stream; both ways: 10 copies each way on two
//! streams, timed on the host clock) and printed as `FIG` lines beside the table, so the bench
//! runner can set them against the floor.
//!
//! ```text
//! cargo run --release -p cuda-safe --example peer_copy
//! ```

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Buffer, Device, Event, EventOptions, Result, Stream, StreamOptions};

const GIB: usize = 1 << 30;
/// Timed copies per measurement.
const REPS: usize = 10;

fn main() -> ExitCode {
    run().unwrap_or_else(|error| {
        eprintln!("error: {error}");
        ExitCode::FAILURE
    })
}

/// One GPU's side: its stream, a 1 GiB source, and a 1 GiB destination that the other GPU's
/// stream writes (so a copy runs on the sending GPU's stream, pushed by its copy engines, as
/// in the floor).
struct Side {
    stream: Stream,
    src: Buffer,
    dst: Buffer,
}

fn side(device: &Device, fill: u8) -> Result<Side> {
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let mut src = pool.allocate(GIB, &stream)?;
    src.fill(fill)?;
    let dst = pool.allocate(GIB, &stream)?;
    Ok(Side { stream, src, dst })
}

/// Queues `reps` copies of the first `bytes` of `from.src` into `to.dst`, on `from`'s stream.
fn copies(to: &mut Side, from: &Side, bytes: usize, reps: usize) -> Result<()> {
    let src = from.src.as_slice::<u8>()?.slice(..bytes)?;
    let mut dst = to.dst.as_mut_slice::<u8>()?;
    let mut dst = dst.slice_mut(..bytes)?;
    for _ in 0..reps {
        dst.copy_from(&src)?;
    }
    Ok(())
}

/// GB/s of copies of `bytes` from `from` to `to`, timed with events on the sending stream.
fn one_way(to: &mut Side, from: &Side, bytes: usize) -> Result<f64> {
    let timed = EventOptions::default().timing(true);
    let context = from.stream.context();
    let (start, end) = (context.create_event(timed)?, context.create_event(timed)?);
    copies(to, from, bytes, 3)?;
    from.stream.sync()?;
    from.stream.record(&start)?;
    copies(to, from, bytes, REPS)?;
    from.stream.record(&end)?;
    let seconds = Event::elapsed(&start, &end)?.as_secs_f64();
    Ok((bytes * REPS) as f64 / seconds / 1e9)
}

/// GB/s summed over both directions at once, on the host clock.
fn both_ways(a: &mut Side, b: &mut Side, bytes: usize) -> Result<f64> {
    a.stream.sync()?;
    b.stream.sync()?;
    let started = Instant::now();
    copies(b, a, bytes, REPS)?;
    copies(a, b, bytes, REPS)?;
    a.stream.sync()?;
    b.stream.sync()?;
    Ok(2.0 * (bytes * REPS) as f64 / started.elapsed().as_secs_f64() / 1e9)
}

fn run() -> Result<ExitCode> {
    let count = Device::count()?;
    if count < 2 {
        // 77: not for this machine (the GPU bundle's run.sh reports it as skipped).
        eprintln!("skipped: peer_copy needs two GPUs; {count} visible");
        return Ok(ExitCode::from(77));
    }
    let (gpu0, gpu1) = (Device::new(0)?, Device::new(1)?);
    println!(
        "GPU 0: {}, GPU 1: {}; peer access 0->1 {}, 1->0 {}",
        gpu0.name()?,
        gpu1.name()?,
        gpu0.can_access_peer(&gpu1)?,
        gpu1.can_access_peer(&gpu0)?
    );
    let mut a = side(&gpu0, 5)?;
    let mut b = side(&gpu1, 3)?;
    a.dst.set_stream(&b.stream)?;
    b.dst.set_stream(&a.stream)?;
    // Each GPU may reach the other's memory: copies go straight over the link.
    let started = Instant::now();
    gpu0.enable_peer_access(&gpu1)?;
    gpu1.enable_peer_access(&gpu0)?;
    let enable = started.elapsed();
    let started = Instant::now();
    gpu0.default_memory_resource()?.grant_access(&gpu1)?;
    gpu1.default_memory_resource()?.grant_access(&gpu0)?;
    let grant = started.elapsed();
    println!(
        "FIG peer_access_enable_both {:.4} us",
        enable.as_secs_f64() * 1e6
    );
    println!(
        "pool access granted both ways (mapping each pool's 2 GiB into the other GPU): {:.0} us",
        grant.as_secs_f64() * 1e6
    );

    println!(
        "\n{:>10} {:>12} {:>12} {:>16}",
        "size", "0->1 GB/s", "1->0 GB/s", "both ways GB/s"
    );
    let mut size = 1 << 20;
    while size <= GIB {
        let forward = one_way(&mut b, &a, size)?;
        let backward = one_way(&mut a, &b, size)?;
        let both = both_ways(&mut a, &mut b, size)?;
        println!(
            "{:>10} {forward:>12.1} {backward:>12.1} {both:>16.1}",
            human(size)
        );
        if size == GIB {
            println!("FIG peer_copy_1GiB_0to1 {forward:.4} GB/s");
            println!("FIG peer_copy_1GiB_bidirectional_sum {both:.4} GB/s");
        }
        size *= 4;
    }

    // Back on their own GPUs' streams, where they are freed.
    a.dst.set_stream(&a.stream)?;
    b.dst.set_stream(&b.stream)?;
    // Every byte arrived: GPU 1's destination holds GPU 0's fill, and the other way round.
    let (on_b, on_a) = (b.dst.to_vec::<u8>()?, a.dst.to_vec::<u8>()?);
    let wrong = on_b.iter().filter(|&&x| x != 5).count() + on_a.iter().filter(|&&x| x != 3).count();
    if wrong != 0 {
        eprintln!("error: {wrong} bytes arrived wrong");
        return Ok(ExitCode::FAILURE);
    }
    println!("\npeer data check OK (2 GiB compared)");
    Ok(ExitCode::SUCCESS)
}

fn human(bytes: usize) -> String {
    if bytes >= GIB {
        format!("{} GiB", bytes / GIB)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}
