//! Programmatic dependent launch: a producer kernel and a consumer kernel on one stream. The
//! consumer has a prologue that does not need the producer's output (here: a fixed spin); with
//! the attribute it starts while the producer's blocks are still running (the producer lets it
//! go at its start with `griddepcontrol.launch_dependents`), runs its prologue alongside, and
//! waits for the producer's data in `griddepcontrol.wait`. The pair's GPU time is printed
//! with and without the attribute, and the results are checked.
//!
//! ```text
//! cargo run --release -p cuda-safe --example pdl
//! ```
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;

use cuda_safe::{
    CodeKind, Device, Event, EventOptions, LaunchAttributes, LaunchConfig, Program, ProgramOptions,
    Result, launch, launch_with,
};

const SOURCE: &str = r#"
__device__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}

extern "C" __global__ void producer(float* data, int n, long long cycles) {
    asm volatile("griddepcontrol.launch_dependents;");
    spin(cycles);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 0.5f * i;
}

extern "C" __global__ void consumer(const float* data, float* out, int n, long long cycles) {
    spin(cycles);  // the prologue: independent of the producer
    asm volatile("griddepcontrol.wait;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1.0f;
}
"#;

/// Spin of each kernel, in clock cycles (about 20 us at 2 GHz).
const CYCLES: i64 = 40_000;
const REPS: usize = 50;

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
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    let code = Program::new(SOURCE, options)?
        .compile(CodeKind::Cubin)?
        .load()?;
    let (producer, consumer) = (code.get_kernel("producer")?, code.get_kernel("consumer")?);
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    // One block of 128 threads per SM for each kernel, so both fit on the GPU at once.
    let sms = device
        .attribute(cuda_safe::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        as u32;
    let config = LaunchConfig::new(sms, 128);
    let n = (sms * 128) as i32;
    let mut data = pool.allocate_zeroed::<f32>(n as usize, &stream)?;
    let mut out = pool.allocate_zeroed::<f32>(n as usize, &stream)?;
    let timing = EventOptions::default().timing(true);
    let (start, end) = (device.create_event(timing)?, device.create_event(timing)?);

    let mut pair_us = |attributes: &LaunchAttributes<'_>| -> Result<f64> {
        let mut times = Vec::with_capacity(REPS);
        for _ in 0..REPS {
            start.record(&stream)?;
            // SAFETY: producer writes n floats of `data`; consumer reads them after
            // griddepcontrol.wait and writes n floats of `out`; both hold n floats.
            unsafe {
                launch(&stream, &config, &producer, (&mut data, n, CYCLES))?;
                launch_with(
                    &stream,
                    &config,
                    attributes,
                    &consumer,
                    (&data, &mut out, n, CYCLES),
                )?;
            }
            end.record(&stream)?;
            end.sync()?;
            times.push(Event::elapsed(&start, &end)?.as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    };
    let serial = pair_us(&LaunchAttributes::default())?;
    let pdl = pair_us(&LaunchAttributes::default().programmatic_stream_serialization(true))?;
    let results = out.to_vec::<f32>()?;
    let wrong = results
        .iter()
        .enumerate()
        .filter(|&(i, &y)| y != 0.5 * i as f32 + 1.0)
        .count();
    println!(
        "pdl: producer + consumer ({sms} blocks each, ~{:.0} us of spin each) took {serial:.1} us \
         one after the other, {pdl:.1} us with programmatic dependent launch ({:.1} us \
         overlapped); {wrong} of {n} results wrong",
        CYCLES as f64 / 2000.0,
        serial - pdl,
    );
    if wrong > 0 {
        return Err(cuda_safe::Error::invalid_argument(
            "the consumer read data the producer had not written",
        ));
    }
    Ok(())
}
