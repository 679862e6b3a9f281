//! Why green contexts: a latency-sensitive small kernel (SAXPY on 1M floats, launch to
//! completion) while a GPU-filling job runs, first sharing the whole GPU, then in its own green
//! context beside the filler's. The loops are those of the C floor
//! (`bench/floors/driver_floor.c`), and the figures are printed as `FIG name value unit`
//! lines with the floor's names, so `bench/run_benchmarks.sh` compares them.
//!
//! The buffers come from the device's default pool. With the argument `cumemalloc` they come
//! from `cuMemAlloc` ([`SyncDeviceMemoryResource`]) instead, as the floor's do, so that a
//! difference with the floor can be told apart from a difference of memory kind.
//!
//! ```text
//! cargo run --release -p cuda-safe --example green_isolation [-- cumemalloc]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cuda_safe::{
    Buffer, CodeKind, Device, DeviceMemoryResource, Error, Event, EventOptions,
    GreenContextOptions, Kernel, LaunchConfig, Program, ProgramOptions, Result, SplitRequest,
    Stream, SyncDeviceMemoryResource, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}
"#;

const PROBE_N: usize = 1 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Where the buffers come from.
enum Memory {
    /// The device's default stream-ordered pool.
    Pool(DeviceMemoryResource),
    /// `cuMemAlloc`, as the C floor allocates.
    CuMemAlloc(SyncDeviceMemoryResource),
}

impl Memory {
    /// Whether the command line asks for `cuMemAlloc` memory (`cumemalloc`) rather than the
    /// pool's (no argument).
    fn cumemalloc_asked() -> Result<bool> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match args.as_slice() {
            [] => Ok(false),
            [only] if only == "cumemalloc" => Ok(true),
            _ => Err(Error::invalid_argument(format!(
                "unexpected arguments {args:?}: none (pool memory) or `cumemalloc`"
            ))),
        }
    }

    fn new(device: &Device, cumemalloc: bool) -> Result<Self> {
        Ok(if cumemalloc {
            Self::CuMemAlloc(SyncDeviceMemoryResource::new(device)?)
        } else {
            Self::Pool(device.default_memory_resource()?)
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Pool(_) => "the default pool",
            Self::CuMemAlloc(_) => "cuMemAlloc",
        }
    }

    fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer> {
        match self {
            Self::Pool(pool) => pool.allocate(size, stream),
            Self::CuMemAlloc(memory) => memory.allocate(size, stream),
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The probe's three buffers.
struct Probe {
    x: Buffer,
    y: Buffer,
    out: Buffer,
}

impl Probe {
    /// One probe: launch SAXPY on 1M floats on `stream` and wait; the elapsed microseconds.
    fn once(&mut self, stream: &Stream, kernel: &Kernel) -> Result<f64> {
        let config = LaunchConfig::for_num_elements(PROBE_N, 256)?;
        let start = Instant::now();
        // SAFETY: saxpy touches PROBE_N floats of each buffer, which hold 4 MiB.
        unsafe {
            launch(
                stream,
                &config,
                kernel,
                (2.0f32, &self.x, &self.y, &mut self.out, PROBE_N),
            )?
        };
        stream.sync()?;
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }
}

/// The probe's latency while `spin` fills `filler` with `blocks` blocks of 1024 threads for
/// about 50 ms; the median of 8 rounds.
fn busy_probe(
    probe: &mut Probe,
    probe_stream: &Stream,
    filler: &Stream,
    kernels: (&Kernel, &Kernel),
    blocks: u32,
) -> Result<f64> {
    let (saxpy, spin) = kernels;
    let mut busy = Vec::new();
    for _ in 0..8 {
        let fill = LaunchConfig::new(blocks, 1024);
        // SAFETY: spin reads the clock and touches no memory.
        unsafe { launch(filler, &fill, spin, (2_000_000u64,))? };
        let wait = Instant::now();
        while wait.elapsed() < Duration::from_millis(3) {}
        busy.push(probe.once(probe_stream, saxpy)?);
        filler.sync()?;
    }
    Ok(median(&mut busy))
}

fn run() -> Result<()> {
    let cumemalloc = Memory::cumemalloc_asked()?;
    let device = Device::new(0)?;
    device.set_current()?;
    let sms = device.properties()?.multiprocessor_count;
    let compiled = Program::new(SOURCE, ProgramOptions::default())?.compile(CodeKind::Cubin)?;
    let code = compiled.load()?;
    let (saxpy, spin) = (code.get_kernel("saxpy")?, code.get_kernel("spin")?);
    let memory = Memory::new(&device, cumemalloc)?;
    let spin_blocks = sms * 2 * 25;

    // The whole GPU, shared.
    let filler = device.create_stream(Default::default())?;
    let prober = device.create_stream(Default::default())?;
    let mut probe = Probe {
        x: memory.allocate(4 << 20, &prober)?,
        y: memory.allocate(4 << 20, &prober)?,
        out: memory.allocate(4 << 20, &prober)?,
    };
    let mut idle: Vec<f64> = (0..32)
        .map(|_| probe.once(&prober, &saxpy))
        .collect::<Result<_>>()?;
    let idle_us = median(&mut idle);
    let shared_us = busy_probe(&mut probe, &prober, &filler, (&saxpy, &spin), spin_blocks)?;

    // Two green contexts of half the SMs each: the filler in one, the probe in the other.
    let all = device.resources().sm()?;
    let split = all.split(&SplitRequest::equal(2, all.sm_count() / 2).rounding(true))?;
    let filler_ctx =
        device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
    let probe_ctx =
        device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
    let green_filler = filler_ctx.create_stream(Default::default())?;
    let green_prober = probe_ctx.create_stream(Default::default())?;
    for buffer in [&mut probe.x, &mut probe.y, &mut probe.out] {
        buffer.set_stream(&green_prober)?;
    }
    let mut idle: Vec<f64> = (0..32)
        .map(|_| probe.once(&green_prober, &saxpy))
        .collect::<Result<_>>()?;
    let green_idle_us = median(&mut idle);
    let green_us = busy_probe(
        &mut probe,
        &green_prober,
        &green_filler,
        (&saxpy, &spin),
        spin_blocks / 2,
    )?;

    // SAXPY over 100M floats in half the GPU.
    let n = 100_000_000usize;
    let mut x = memory.allocate(n * 4, &green_prober)?;
    let mut y = memory.allocate(n * 4, &green_prober)?;
    let mut out = memory.allocate(n * 4, &green_prober)?;
    x.fill::<u32>(1.0f32.to_bits())?;
    y.fill::<u32>(2.0f32.to_bits())?;
    let timed = EventOptions::default().timing(true);
    let (start, end) = (
        probe_ctx.create_event(timed)?,
        probe_ctx.create_event(timed)?,
    );
    let config = LaunchConfig::for_num_elements(n, 256)?;
    let mut rates = Vec::new();
    for _ in 0..10 {
        green_prober.record(&start)?;
        // SAFETY: saxpy touches n floats of each 100M-float buffer.
        unsafe {
            launch(
                &green_prober,
                &config,
                &saxpy,
                (3.0f32, &x, &y, &mut out, n),
            )?
        };
        green_prober.record(&end)?;
        rates.push(3.0 * (n * 4) as f64 / Event::elapsed(&start, &end)?.as_secs_f64() / 1e9);
    }
    let half_bandwidth = median(&mut rates);

    println!(
        "{} SMs; partitions of {} and {} SMs",
        sms,
        split.groups[0].sm_count(),
        split.groups[1].sm_count()
    );
    println!("buffers from {}", memory.name());
    println!("probe (SAXPY 1M, launch to completion):");
    println!("  idle GPU:                               {idle_us:>10.1} us");
    println!("  sharing the GPU with a filling job:     {shared_us:>10.1} us");
    println!("  own green context, idle:                {green_idle_us:>10.1} us");
    println!("  own green context, filler in the other: {green_us:>10.1} us");
    println!("SAXPY 100M in half the SMs: {half_bandwidth:.0} GB/s");
    println!("FIG probe_1M_idle_gpu {idle_us:.4} us");
    println!("FIG probe_1M_busy_shared_gpu {shared_us:.4} us");
    println!("FIG probe_1M_idle_green_half {green_idle_us:.4} us");
    println!("FIG probe_1M_busy_green_partitioned {green_us:.4} us");
    println!("FIG saxpy_100M_bandwidth_green_half {half_bandwidth:.4} GB/s");
    Ok(())
}
