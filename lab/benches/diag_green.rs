//! A diagnostic for the busy green probe: the green section of `bench/floors/driver_floor.c`
//! (as `lab/diag/green_variants.c -` has it alone) written in Rust over the `-sys` tables,
//! with pieces of `cuda-safe` switched in by letters. Beside the floor and the
//! `green_isolation` example in the same rounds (`lab/diag/rounds.sh`), it tells whether a
//! Rust process measures this figure as C does, and which of the crate's pieces makes the
//! example differ.
//!
//! Prints the floor's `FIG` lines (`probe_1M_idle_gpu`, `probe_1M_busy_shared_gpu`,
//! `probe_1M_idle_green_half`, `probe_1M_busy_green_partitioned`) and the busy green samples.
//!
//! usage: `diag_green LETTERS [BYTES]`, where LETTERS is `-` (the floor's calls only) or any of:
//! - `d`: the process starts with `Device::new(0)`, `Device::set_current` and
//!   `Device::properties` (for the SM count), as the example does, instead of the floor's
//!   `cuInit`, `cuDevicePrimaryCtxRetain` and `cuCtxSetCurrent`;
//! - `p`: the kernels come from `Program` (compile, load, `get_kernel`);
//! - `s`: the primary context's two streams come from `Device::create_stream`;
//! - `m`: the probe's buffers come from the device's default pool
//!   (`default_memory_resource`), allocated on the prober stream (needs `s`);
//! - `g`: the split, the green contexts and their streams come from the crate
//!   (`resources().sm()?.split`, `create_green_context`, `Context::create_stream`);
//! - `o`: the buffers are moved onto the green prober stream with `Buffer::set_stream`
//!   (needs `m` and `g`), which queues nothing when the primary prober has finished its work;
//! - `w`: the green prober stream waits once on the primary prober stream
//!   (`Stream::wait_stream`: an event of the primary context), as `Buffer::set_stream` always
//!   did before 2026-12-01 (needs `s` and `g`);
//! - `l`: every probe and filler is launched with [`launch`] and waited for with
//!   `Stream::sync` (needs `p`, `s`, `m`, `g` and `o`).
//!
//! `dpsmgol` makes the calls the example makes up to its last busy probe (the stub driver's call
//! log, `CUDA_SAFE_STUB_CALL_LOG`, shows the same sequence for both). With BYTES, the process
//! first takes that much heap and keeps it, so that everything allocated afterwards lands
//! elsewhere.
//!
//! As in the floor, the streams, buffers and contexts live until the process exits.

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[path = "../../cuda-safe/benches/common/check.rs"]
mod check;
#[path = "common/floor_calls.rs"]
mod floor_calls;
#[path = "../../cuda-safe/benches/common/green_kernels.rs"]
mod green_kernels;
#[path = "common/letters.rs"]
mod letters;

use check::check;
use cuda_safe::sys::{
    CUdevResource, CUdevResourceDesc, CUdevResourceType, CUdevice, CUdevice_attribute, CUdeviceptr,
    CUfunction, CUgreenCtx, CUgreenCtxCreate_flags, CUstream, CUstream_flags, driver,
};
use cuda_safe::{
    Buffer, CodeKind, Context, Device, Error, GreenContextOptions, Kernel, LaunchConfig, Program,
    ProgramOptions, Result, SplitRequest, Stream, launch,
};
use green_kernels::SOURCE;

const PROBE_N: usize = 1 << 20;
const PROBE_BYTES: usize = 4 << 20;
const SPIN_NS: u64 = 2_000_000;

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
    memory: bool,
    green: bool,
    ordered: bool,
    waited: bool,
    launch: bool,
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
                ('m', &mut pieces.memory),
                ('g', &mut pieces.green),
                ('o', &mut pieces.ordered),
                ('w', &mut pieces.waited),
                ('l', &mut pieces.launch),
            ],
        )?;
        letters::require(&[
            (pieces.memory, pieces.streams, "`m` needs `s`"),
            (
                pieces.ordered,
                pieces.memory && pieces.green,
                "`o` needs `m` and `g`",
            ),
            (
                pieces.waited,
                pieces.streams && pieces.green,
                "`w` needs `s` and `g`",
            ),
            (
                pieces.launch,
                pieces.program && pieces.streams && pieces.memory && pieces.green && pieces.ordered,
                "`l` needs `p`, `s`, `m`, `g` and `o`",
            ),
        ])?;
        Ok(pieces)
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A stream of the loops: its handle, and the crate's stream when the crate made it.
struct ProbeStream {
    raw: CUstream,
    owned: Option<Stream>,
}

impl From<Stream> for ProbeStream {
    fn from(stream: Stream) -> Self {
        Self {
            raw: stream.as_raw(),
            owned: Some(stream),
        }
    }
}

impl From<CUstream> for ProbeStream {
    fn from(raw: CUstream) -> Self {
        Self { raw, owned: None }
    }
}

/// The kernels and the probe's buffers: the handles the raw calls take, and the crate's
/// objects when the crate made them.
struct Floor {
    saxpy: CUfunction,
    spin: CUfunction,
    /// `saxpy` and `spin`, with `p`.
    kernels: Option<[Kernel; 2]>,
    buffers: [CUdeviceptr; 3],
    /// x, y and out, with `m`.
    owned_buffers: Option<[Buffer; 3]>,
    /// Whether probes and fillers go through [`launch`] and `Stream::sync` (`l`).
    crate_launch: bool,
}

fn needs(what: &str) -> Error {
    Error::invalid_argument(format!("`l` needs {what} from the crate"))
}

impl Floor {
    /// One probe: SAXPY on 1M floats launched on `stream` and waited for; elapsed microseconds.
    fn probe(&mut self, stream: &ProbeStream) -> Result<f64> {
        if self.crate_launch {
            let (Some(owned), Some([saxpy, _]), Some([x, y, out])) =
                (&stream.owned, &self.kernels, &mut self.owned_buffers)
            else {
                return Err(needs("the kernels, streams and buffers"));
            };
            let config = LaunchConfig::for_num_elements(PROBE_N, 256)?;
            let start = Instant::now();
            // SAFETY: saxpy touches PROBE_N floats of each buffer, which hold 4 MiB.
            unsafe { launch(owned, &config, saxpy, (2.0f32, &*x, &*y, out, PROBE_N))? };
            owned.sync()?;
            return Ok(start.elapsed().as_secs_f64() * 1e6);
        }
        let driver = driver()?;
        let (mut a, mut n) = (2.0f32, PROBE_N);
        let [mut x, mut y, mut out] = self.buffers;
        let mut params: [*mut c_void; 5] = [
            (&raw mut a).cast(),
            (&raw mut x).cast(),
            (&raw mut y).cast(),
            (&raw mut out).cast(),
            (&raw mut n).cast(),
        ];
        let blocks = PROBE_N.div_ceil(256) as u32;
        let start = Instant::now();
        // SAFETY: `params` holds saxpy's five arguments in order; each buffer holds PROBE_N
        // floats; a live stream.
        check("cuLaunchKernel", unsafe {
            driver.cuLaunchKernel(
                self.saxpy,
                blocks,
                1,
                1,
                256,
                1,
                1,
                0,
                stream.raw,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )?
        })?;
        // SAFETY: a live stream.
        check("cuStreamSynchronize", unsafe {
            driver.cuStreamSynchronize(stream.raw)?
        })?;
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }

    /// `spin` on `filler` with `blocks` blocks of 1024 threads (about 50 ms of work), through
    /// the crate (`l`) or the raw call.
    fn fill(&self, filler: &ProbeStream, blocks: u32) -> Result<()> {
        if self.crate_launch {
            let (Some([_, spin]), Some(owned)) = (&self.kernels, &filler.owned) else {
                return Err(needs("the kernels and streams"));
            };
            let config = LaunchConfig::new(blocks, 1024);
            // SAFETY: spin reads the clock and touches no memory.
            return unsafe { launch(owned, &config, spin, (SPIN_NS,)) };
        }
        let mut ns = SPIN_NS;
        let mut params: [*mut c_void; 1] = [(&raw mut ns).cast()];
        // SAFETY: spin takes one 64-bit argument and touches no memory; a live stream.
        check("cuLaunchKernel", unsafe {
            driver()?.cuLaunchKernel(
                self.spin,
                blocks,
                1,
                1,
                1024,
                1,
                1,
                0,
                filler.raw,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )?
        })
    }

    /// 8 probes on `prober`, each 3 ms after the filler was launched on `filler`; the samples
    /// in order.
    fn busy(
        &mut self,
        filler: &ProbeStream,
        prober: &ProbeStream,
        blocks: u32,
    ) -> Result<Vec<f64>> {
        let mut samples = Vec::with_capacity(8);
        for _ in 0..8 {
            self.fill(filler, blocks)?;
            let wait = Instant::now();
            while wait.elapsed() < Duration::from_millis(3) {}
            samples.push(self.probe(prober)?);
            match (&filler.owned, self.crate_launch) {
                (Some(owned), true) => owned.sync()?,
                // SAFETY: a live stream.
                _ => check("cuStreamSynchronize", unsafe {
                    driver()?.cuStreamSynchronize(filler.raw)?
                })?,
            }
        }
        Ok(samples)
    }
}

/// A non-blocking stream of the current context (`cuStreamCreate`).
fn raw_stream() -> Result<ProbeStream> {
    let mut raw: CUstream = std::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current.
    check("cuStreamCreate", unsafe {
        driver()?.cuStreamCreate(&mut raw, CUstream_flags::CU_STREAM_NON_BLOCKING.0)?
    })?;
    Ok(raw.into())
}

/// `cuMemAlloc` of the probe's size.
fn raw_buffer() -> Result<CUdeviceptr> {
    let mut raw: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; a context is current.
    check("cuMemAlloc", unsafe {
        driver()?.cuMemAlloc_v2(&mut raw, PROBE_BYTES)?
    })?;
    Ok(raw)
}

/// Half the SMs, rounded down to a multiple of 8, twice, as the floor splits them; each group
/// in a green context (`CU_GREEN_CTX_DEFAULT_STREAM`) with one non-blocking stream.
fn raw_green_streams(device: CUdevice) -> Result<[ProbeStream; 2]> {
    let driver = driver()?;
    let mut all = CUdevResource::default();
    let mut groups = [CUdevResource::default(); 2];
    let mut rest = CUdevResource::default();
    let mut made = 2u32;
    // SAFETY: valid out-pointers; `groups` holds `made` resources.
    unsafe {
        check(
            "cuDeviceGetDevResource",
            driver.cuDeviceGetDevResource(
                device,
                &mut all,
                CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
            )?,
        )?;
        let half = (all.__bindgen_anon_1.sm.smCount / 2) & !7;
        check(
            "cuDevSmResourceSplitByCount",
            driver.cuDevSmResourceSplitByCount(
                groups.as_mut_ptr(),
                &mut made,
                &all,
                &mut rest,
                0,
                half,
            )?,
        )?;
    }
    if made < 2 {
        return Err(Error::invalid_argument(format!(
            "the split made {made} group, not 2"
        )));
    }
    let mut streams: [CUstream; 2] = [std::ptr::null_mut(); 2];
    for (group, stream) in groups.iter_mut().zip(&mut streams) {
        let mut desc: CUdevResourceDesc = std::ptr::null_mut();
        let mut green: CUgreenCtx = std::ptr::null_mut();
        // SAFETY: valid out-pointers; one initialised resource; the green context lives until
        // the process exits.
        unsafe {
            check(
                "cuDevResourceGenerateDesc",
                driver.cuDevResourceGenerateDesc(&mut desc, group, 1)?,
            )?;
            check(
                "cuGreenCtxCreate",
                driver.cuGreenCtxCreate(
                    &mut green,
                    desc,
                    device,
                    CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0,
                )?,
            )?;
            check(
                "cuGreenCtxStreamCreate",
                driver.cuGreenCtxStreamCreate(
                    stream,
                    green,
                    CUstream_flags::CU_STREAM_NON_BLOCKING.0,
                    0,
                )?,
            )?;
        }
    }
    Ok(streams.map(ProbeStream::from))
}

/// The example's split and green contexts (half the SMs each, rounded to what the device
/// allows), each with one stream; the contexts are returned to be kept.
fn crate_green_streams(device: &Device) -> Result<([ProbeStream; 2], [Context; 2])> {
    let all = device.resources().sm()?;
    let split = all.split(&SplitRequest::equal(2, all.sm_count() / 2).rounding(true))?;
    let filler = device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
    let prober = device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
    let streams = [
        filler.create_stream(Default::default())?.into(),
        prober.create_stream(Default::default())?.into(),
    ];
    Ok((streams, [filler, prober]))
}

/// The arguments: the letters and the heap to take first.
fn arguments() -> Result<(Pieces, usize)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (letters, bytes) = match args.as_slice() {
        [letters] => (letters, None),
        [letters, bytes] => (letters, Some(bytes)),
        _ => {
            return Err(Error::invalid_argument(
                "usage: diag_green LETTERS [BYTES] (LETTERS: `-`, or any of d p s m g o l)",
            ));
        }
    };
    let pad = match bytes {
        Some(bytes) => bytes
            .parse::<usize>()
            .map_err(|_| Error::invalid_argument(format!("`{bytes}` is not a number of bytes")))?,
        None => 0,
    };
    Ok((Pieces::parse(letters)?, pad))
}

fn run() -> Result<()> {
    let (pieces, pad_bytes) = arguments()?;
    let pad = vec![1u8; pad_bytes];
    let crate_device = if pieces.device {
        let device = Device::new(0)?;
        device.set_current()?;
        Some(device)
    } else {
        None
    };
    let driver = driver()?;
    let device = match &crate_device {
        Some(crate_device) => crate_device.as_raw(),
        None => floor_calls::primary_context()?.0,
    };
    let sms = match &crate_device {
        Some(crate_device) => crate_device.properties()?.multiprocessor_count,
        None => {
            let mut sms = 0;
            // SAFETY: valid out-pointer and device.
            check("cuDeviceGetAttribute", unsafe {
                driver.cuDeviceGetAttribute(
                    &mut sms,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    device,
                )?
            })?;
            u32::try_from(sms).unwrap_or(0)
        }
    };
    let crate_device = match crate_device {
        None if pieces.streams || pieces.green => Some(Device::new(0)?),
        made => made,
    };
    let (saxpy, spin, kernels) = if pieces.program {
        let code = Program::new(SOURCE, ProgramOptions::default())?
            .compile(CodeKind::Cubin)?
            .load()?;
        let (saxpy, spin) = (code.get_kernel("saxpy")?, code.get_kernel("spin")?);
        (
            saxpy.as_raw().cast(),
            spin.as_raw().cast(),
            Some([saxpy, spin]),
        )
    } else {
        let library = floor_calls::load(device, SOURCE)?;
        (
            floor_calls::kernel(library, c"saxpy")?,
            floor_calls::kernel(library, c"spin")?,
            None,
        )
    };
    let pool = match (&crate_device, pieces.memory) {
        (Some(device), true) => Some(device.default_memory_resource()?),
        _ => None,
    };
    let (filler, prober): (ProbeStream, ProbeStream) = match (&crate_device, pieces.streams) {
        (Some(device), true) => (
            device.create_stream(Default::default())?.into(),
            device.create_stream(Default::default())?.into(),
        ),
        _ => (raw_stream()?, raw_stream()?),
    };
    let (buffers, owned_buffers) = match (&pool, &prober.owned) {
        (Some(pool), Some(stream)) => {
            let owned = [
                pool.allocate(PROBE_BYTES, stream)?,
                pool.allocate(PROBE_BYTES, stream)?,
                pool.allocate(PROBE_BYTES, stream)?,
            ];
            (owned.each_ref().map(Buffer::as_raw), Some(owned))
        }
        _ => ([raw_buffer()?, raw_buffer()?, raw_buffer()?], None),
    };
    let mut floor = Floor {
        saxpy,
        spin,
        kernels,
        buffers,
        owned_buffers,
        crate_launch: pieces.launch,
    };
    let spin_blocks = sms * 2 * 25;

    let mut idle = (0..32)
        .map(|_| floor.probe(&prober))
        .collect::<Result<Vec<_>>>()?;
    println!("FIG probe_1M_idle_gpu {:.4} us", median(&mut idle));
    let mut shared = floor.busy(&filler, &prober, spin_blocks)?;
    println!("FIG probe_1M_busy_shared_gpu {:.4} us", median(&mut shared));

    let (green, _contexts) = match (&crate_device, pieces.green) {
        (Some(device), true) => {
            let (streams, contexts) = crate_green_streams(device)?;
            (streams, Some(contexts))
        }
        _ => (raw_green_streams(device)?, None),
    };
    let [green_filler, green_prober] = &green;
    if pieces.ordered
        && let (Some(owned), Some(stream)) = (&mut floor.owned_buffers, &green_prober.owned)
    {
        for buffer in owned {
            buffer.set_stream(stream)?;
        }
    }
    if pieces.waited
        && let (Some(green), Some(primary)) = (&green_prober.owned, &prober.owned)
    {
        green.wait_stream(primary)?;
    }
    let mut idle = (0..32)
        .map(|_| floor.probe(green_prober))
        .collect::<Result<Vec<_>>>()?;
    println!("FIG probe_1M_idle_green_half {:.4} us", median(&mut idle));
    let mut busy = floor.busy(green_filler, green_prober, spin_blocks / 2)?;
    let samples: Vec<String> = busy.iter().map(|us| format!("{us:.1}")).collect();
    println!("SAMPLES busy_green {}", samples.join(" "));
    println!(
        "FIG probe_1M_busy_green_partitioned {:.4} us",
        median(&mut busy)
    );
    std::hint::black_box(&pad);
    Ok(())
}
