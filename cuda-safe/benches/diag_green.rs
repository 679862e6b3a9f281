//! A diagnostic for the busy green probe: the green section of `../shared/bench/driver_floor.c`
//! (as `bench/diag/green_variants.c -` has it alone) written in Rust over the `-sys` tables,
//! making the floor's driver calls and no others. Beside the floor, `green_variants -` and the
//! `green_isolation` example in the same rounds (`bench/diag/rounds.sh`), it tells whether a
//! Rust process measures this figure as C does, so that a difference of the example lies in the
//! crate's objects, or whether the process itself makes it.
//!
//! Prints the floor's `FIG` lines (`probe_1M_idle_gpu`, `probe_1M_busy_shared_gpu`,
//! `probe_1M_idle_green_half`, `probe_1M_busy_green_partitioned`) and the busy green samples.
//!
//! usage: `diag_green [BYTES]`: with BYTES, first takes that much heap and keeps it, so that
//! everything the process and the driver allocate afterwards lands elsewhere.
//!
//! As in the floor, the streams, buffers and contexts live until the process exits.

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[path = "common/check.rs"]
mod check;
#[path = "common/raw_library.rs"]
mod raw_library;

use check::check;
use cuda_safe::sys::{
    CUcontext, CUdevResource, CUdevResourceDesc, CUdevResourceType, CUdevice, CUdevice_attribute,
    CUdeviceptr, CUfunction, CUgreenCtx, CUgreenCtxCreate_flags, CUstream, CUstream_flags, driver,
};
use cuda_safe::{Error, Result};

/// The kernels of `green_variants.c`, as the floor has them.
const SOURCE: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\nextern \"C\" __global__ void spin(unsigned long long ns) {\n  unsigned long long t0; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n  unsigned long long t = t0; while (t - t0 < ns) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n}\n";

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

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The kernels and the probe's buffers.
struct Floor {
    saxpy: CUfunction,
    spin: CUfunction,
    x: CUdeviceptr,
    y: CUdeviceptr,
    out: CUdeviceptr,
}

impl Floor {
    /// One probe: SAXPY on 1M floats launched on `stream` and waited for; elapsed microseconds.
    fn probe(&self, stream: CUstream) -> Result<f64> {
        let driver = driver()?;
        let (mut a, mut n) = (2.0f32, PROBE_N);
        let (mut x, mut y, mut out) = (self.x, self.y, self.out);
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
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )?
        })?;
        // SAFETY: a live stream.
        check("cuStreamSynchronize", unsafe {
            driver.cuStreamSynchronize(stream)?
        })?;
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }

    /// 8 probes on `prober`, each 3 ms after `spin` was launched on `filler` with `blocks`
    /// blocks of 1024 threads (about 50 ms of work); the samples in order.
    fn busy(&self, filler: CUstream, prober: CUstream, blocks: u32) -> Result<Vec<f64>> {
        let driver = driver()?;
        let mut samples = Vec::with_capacity(8);
        for _ in 0..8 {
            let mut ns = SPIN_NS;
            let mut params: [*mut c_void; 1] = [(&raw mut ns).cast()];
            // SAFETY: spin takes one 64-bit argument and touches no memory; a live stream.
            check("cuLaunchKernel", unsafe {
                driver.cuLaunchKernel(
                    self.spin,
                    blocks,
                    1,
                    1,
                    1024,
                    1,
                    1,
                    0,
                    filler,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )?
            })?;
            let wait = Instant::now();
            while wait.elapsed() < Duration::from_millis(3) {}
            samples.push(self.probe(prober)?);
            // SAFETY: a live stream.
            check("cuStreamSynchronize", unsafe {
                driver.cuStreamSynchronize(filler)?
            })?;
        }
        Ok(samples)
    }
}

/// A non-blocking stream of the current context (`cuStreamCreate`).
fn stream() -> Result<CUstream> {
    let mut raw: CUstream = std::ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current.
    check("cuStreamCreate", unsafe {
        driver()?.cuStreamCreate(&mut raw, CUstream_flags::CU_STREAM_NON_BLOCKING.0)?
    })?;
    Ok(raw)
}

/// `cuMemAlloc` of the probe's size.
fn buffer() -> Result<CUdeviceptr> {
    let mut raw: CUdeviceptr = 0;
    // SAFETY: valid out-pointer; a context is current.
    check("cuMemAlloc", unsafe {
        driver()?.cuMemAlloc_v2(&mut raw, PROBE_BYTES)?
    })?;
    Ok(raw)
}

/// Half the SMs, rounded down to a multiple of 8, twice, as the floor splits them; each group
/// in a green context (`CU_GREEN_CTX_DEFAULT_STREAM`) with one non-blocking stream.
fn green_streams(device: CUdevice) -> Result<[CUstream; 2]> {
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
    Ok(streams)
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pad_bytes = match args.as_slice() {
        [] => 0,
        [bytes] => bytes
            .parse::<usize>()
            .map_err(|_| Error::invalid_argument(format!("`{bytes}` is not a number of bytes")))?,
        _ => return Err(Error::invalid_argument("usage: diag_green [BYTES]")),
    };
    let pad = vec![1u8; pad_bytes];
    let driver = driver()?;
    let mut device: CUdevice = 0;
    let mut primary: CUcontext = std::ptr::null_mut();
    let mut sms = 0;
    // SAFETY: valid out-pointers; the primary context stays retained for the process.
    unsafe {
        check("cuInit", driver.cuInit(0)?)?;
        check("cuDeviceGet", driver.cuDeviceGet(&mut device, 0)?)?;
        check(
            "cuDevicePrimaryCtxRetain",
            driver.cuDevicePrimaryCtxRetain(&mut primary, device)?,
        )?;
        check("cuCtxSetCurrent", driver.cuCtxSetCurrent(primary)?)?;
        check(
            "cuDeviceGetAttribute",
            driver.cuDeviceGetAttribute(
                &mut sms,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                device,
            )?,
        )?;
    }
    let library = raw_library::load(device, SOURCE)?;
    let (saxpy, spin) = (
        raw_library::kernel(library, c"saxpy")?,
        raw_library::kernel(library, c"spin")?,
    );
    let (filler, prober) = (stream()?, stream()?);
    let floor = Floor {
        saxpy,
        spin,
        x: buffer()?,
        y: buffer()?,
        out: buffer()?,
    };
    let spin_blocks = u32::try_from(sms).unwrap_or(0) * 2 * 25;

    let mut idle = (0..32)
        .map(|_| floor.probe(prober))
        .collect::<Result<Vec<_>>>()?;
    println!("FIG probe_1M_idle_gpu {:.4} us", median(&mut idle));
    let mut shared = floor.busy(filler, prober, spin_blocks)?;
    println!("FIG probe_1M_busy_shared_gpu {:.4} us", median(&mut shared));

    let [green_filler, green_prober] = green_streams(device)?;
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
