//! A virtual-memory buffer that grows from 2 MiB to 8 GiB in place, doubling, while a kernel
//! keeps incrementing its first 2 MiB: every growth maps one new physical chunk at the end of
//! a reservation made up front, so nothing is copied and the address never changes. Prints a
//! table (size, grow time, address) and checks the start's contents and the address. Before
//! that, it measures one 1 GiB allocation as `bench/floors/multi_gpu_floor.c` does (reserve +
//! create + map + set access, then unmap + release + free; the process's first, as the floor's)
//! and prints the `FIG` lines the bench runner compares with the floor's.
//!
//! ```text
//! cargo run --release -p cuda-safe --example growing_buffer
//! ```
//!
//! The growth stops short of 8 GiB (with a message) where that much memory is not free. With
//! no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::sys::CUresult;
use cuda_safe::{
    CodeKind, Device, Error, Growth, LaunchConfig, Program, ProgramOptions, Result,
    VirtualMemoryResource, VirtualMemoryResourceOptions, launch,
};

/// Adds 1 to each of `n` counters.
const SOURCE: &str = r#"
extern "C" __global__ void bump(unsigned int* counters, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) counters[i] += 1;
}
"#;

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
/// The size the buffer starts at, and the part the kernel keeps using.
const START: usize = 2 * MIB;
/// The size it grows to where memory allows.
const TARGET: usize = 8 * GIB;
/// Memory left free beside the buffer (for the 1 GiB measurement and the driver).
const HEADROOM: usize = GIB + 512 * MIB;
/// Repetitions of the 1 GiB measurement.
const REPS: usize = 5;

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
    let stream = device.create_stream(Default::default())?;
    let vmm = VirtualMemoryResource::new(&device, VirtualMemoryResourceOptions::default())?;
    println!(
        "GPU: {}, VMM granularity {} KiB",
        device.name()?,
        vmm.granularity() / 1024
    );
    // First, while the process has touched little memory, as in the floor: after the 8 GiB
    // growth the driver is still returning those chunks, and a fresh 1 GiB takes longer.
    measure_like_the_floor(&device, &vmm)?;

    let free = device.mem_info()?.free;
    let mut target = TARGET;
    while target > START && target + HEADROOM > free {
        target /= 2;
    }
    if target < TARGET {
        println!(
            "only {} MiB free: growth capped at {} MiB instead of {} MiB",
            free / MIB,
            target / MIB,
            TARGET / MIB
        );
    }

    let kernel = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("bump")?;
    let counters = START / size_of::<u32>();
    let config = LaunchConfig::for_num_elements(counters, 256)?;

    // The whole target reserved up front: every growth maps in place.
    let mut buffer = vmm.growable(START, target, &stream)?;
    buffer.as_mut_slice::<u32>()?.fill(0)?;
    let base = buffer.as_raw();
    println!("{:>10}  {:>12}  {:>18}", "size", "grow (us)", "address");
    println!("{:>10}  {:>12}  {base:>#18x}", mib(buffer.len()), "-");
    let mut launches = 0u32;
    loop {
        {
            let mut start = buffer.as_mut_slice::<u32>()?;
            let mut start = start.slice_mut(..counters)?;
            // SAFETY: `bump` increments `counters` u32s, which the first 2 MiB hold.
            unsafe { launch(&stream, &config, &kernel, (&mut start, counters))? };
        }
        launches += 1;
        if buffer.len() >= target {
            break;
        }
        // The kernel may still run on the start while the buffer grows behind it.
        let started = Instant::now();
        let growth = buffer.grow(buffer.len() * 2)?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        println!(
            "{:>10}  {micros:>12.1}  {:>#18x}",
            mib(buffer.len()),
            buffer.as_raw()
        );
        if growth != Growth::InPlace || buffer.as_raw() != base {
            return Err(Error::invalid_argument(format!(
                "the buffer moved ({growth:?}): from {base:#x} to {:#x}",
                buffer.as_raw()
            )));
        }
    }
    let start: Vec<u32> = buffer.as_slice::<u32>()?.slice(..counters)?.to_vec()?;
    if let Some(wrong) = start.iter().position(|&count| count != launches) {
        return Err(Error::invalid_argument(format!(
            "counter {wrong} holds {} after {launches} increments",
            start[wrong]
        )));
    }
    println!(
        "grew to {} MiB in {} chunks at {base:#x}; the first 2 MiB hold {launches} increments",
        buffer.len() / MIB,
        buffer.chunk_count()
    );
    buffer.close()
}

/// One 1 GiB mapping made and undone as `multi_gpu_floor.c` times it: the four calls, a
/// memset and a synchronization (untimed), then the three calls. The `FIG` lines are the
/// first mapping of the process, as the floor's is; the median of [`REPS`] more, each right
/// after the previous one was released, is printed beside them (slower: the driver is still
/// returning the memory just released).
fn measure_like_the_floor(device: &Device, vmm: &VirtualMemoryResource) -> Result<()> {
    if device.mem_info()?.free < GIB + 256 * MIB {
        println!("less than 1.25 GiB free: the 1 GiB VMM figures are skipped");
        return Ok(());
    }
    let driver = cuda_safe::sys::driver()?;
    let (mut map, mut unmap) = (Vec::new(), Vec::new());
    for _ in 0..=REPS {
        let started = Instant::now();
        let mapping = vmm.map(GIB)?;
        map.push(started.elapsed().as_secs_f64() * 1e6);
        // SAFETY: the mapping holds GIB bytes the device may write.
        let code = unsafe { driver.cuMemsetD8_v2(mapping.as_raw(), 1, GIB) }?;
        if code != CUresult::CUDA_SUCCESS {
            return Err(Error::cuda("cuMemsetD8_v2", code));
        }
        device.sync()?;
        let started = Instant::now();
        mapping.close()?;
        unmap.push(started.elapsed().as_secs_f64() * 1e6);
    }
    println!("FIG vmm_reserve_create_map_access_1GiB {:.4} us", map[0]);
    println!("FIG vmm_unmap_release_free_1GiB {:.4} us", unmap[0]);
    println!(
        "1 GiB again, right after a release (median of {REPS}): map {:.0} us, unmap {:.0} us",
        median(&mut map[1..]),
        median(&mut unmap[1..])
    );
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes / MIB)
}
