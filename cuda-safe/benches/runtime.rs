//! Runtime-core benchmark: the loops of `bench/floors/runtime_floor.c`, through `cuda-safe`.
//!
//! Prints `FIG name value unit` lines with the floor's names, so one job can run both and
//! compare: pool alloc+free of 1 MiB, event record, a 4-byte memset plus stream sync, and a
//! 400 MB upload from pinned memory.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Device, Event, EventOptions, PinnedMemoryResource, Result, StreamOptions};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

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
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let mut times = vec![0f64; 20_000];

    for _ in 0..1000 {
        drop(pool.allocate(1 << 20, &stream)?);
    }
    for time in times.iter_mut().take(5000) {
        let start = Instant::now();
        let buffer = pool.allocate(1 << 20, &stream)?;
        drop(buffer);
        *time = start.elapsed().as_secs_f64() * 1e6;
    }
    fig("pool_alloc_free_1MiB", median(&mut times[..5000]), "us");
    stream.sync()?;

    let event = device.create_event(EventOptions::default())?;
    for _ in 0..1000 {
        stream.record(&event)?;
    }
    stream.sync()?;
    let start = Instant::now();
    for _ in 0..20_000 {
        stream.record(&event)?;
    }
    fig(
        "event_record",
        start.elapsed().as_secs_f64() * 1e6 / 20_000.0,
        "us",
    );
    stream.sync()?;

    let mut word = pool.allocate(4, &stream)?;
    for time in times.iter_mut().take(5000) {
        let start = Instant::now();
        word.fill::<u32>(0)?;
        stream.sync()?;
        *time = start.elapsed().as_secs_f64() * 1e6;
    }
    fig("memset_4B_plus_sync", median(&mut times[..5000]), "us");

    let size = 400_000_000;
    let pinned = PinnedMemoryResource::new(&device)?;
    let mut host = pinned.allocate(size, &stream)?;
    host.as_host_mut_slice::<u8>()?.fill(0x5a);
    let mut on_device = pool.allocate(size, &stream)?;
    let timed = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timed)?, device.create_event(timed)?);
    let mut rates = Vec::new();
    for _ in 0..7 {
        stream.record(&start)?;
        on_device.copy_from(&host)?;
        stream.record(&end)?;
        rates.push(size as f64 / Event::elapsed(&start, &end)?.as_secs_f64() / 1e9);
    }
    fig("h2d_pinned_400MB", median(&mut rates), "GB/s");
    println!("DONE");
    Ok(())
}
