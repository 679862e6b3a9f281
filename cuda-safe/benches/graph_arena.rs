//! Graph arenas, captures into existing graphs and whole-graph updates: the loops of
//! `bench/floors/graph_arena_floor.c` through `cuda-safe`, with the floor's figure names.
//!
//! - `arena_chain100_graph_launch_plus_sync`: a chain of 100 tiny kernels (each adds 1 to one
//!   int, the int in a [`GraphArena`]) captured from the arena and replayed; against the
//!   floor's replay of the same chain in a virtual memory reservation (the crate records one
//!   event after each launch, by which the arena knows what may still run);
//! - the A/B of the arena: a pass (a 4 MiB temporary filled, 98 adds, its first value added)
//!   captured with its temporary from the arena (`arena_pass_*`) and from the device's pool,
//!   which capture turns into memory nodes (`memnodes_pass_*`): replay + sync, and the bytes
//!   each holds (the arena's mapped bytes; the device's graph memory reserved);
//! - `capture_into_chain100` and `capture_into_chain100_instantiate`: the chain captured into
//!   an existing graph after a memset node ([`Graph::capture_into`]), and its instantiation;
//! - `chain100_exec_update` and `chain100_update_from_capture`: a whole-graph update of the
//!   chain's executable from a graph captured afresh ([`GraphExec::update`]), alone and with
//!   the capture ([`GraphExec::update_from_capture`]).
//!
//! The counter is checked against the number of kernels run. Prints `FIG name value unit`
//! lines; run beside the C floor in one job (`bench/run_benchmarks.sh`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[path = "common/figures.rs"]
mod figures;
use figures::{fig, median, us};

use cuda_safe::sys::CUgraphMem_attribute;
use cuda_safe::{
    Buffer, CaptureMode, CodeKind, Device, Graph, GraphArena, GraphExec, Kernel, LaunchConfig,
    Program, ProgramOptions, Result, Stream, launch,
};

/// The floor's kernels, byte for byte.
const SOURCE: &str = "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n\
    extern \"C\" __global__ void seed(int* t, int n, int v) {\n  \
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) t[i] = v; }\n\
    extern \"C\" __global__ void take(int* p, const int* t) { atomicAdd(p, t[0]); }\n";
/// Kernels in the chain (and in the pass).
const CHAIN: usize = 100;
/// Timed replays of each executable.
const REPS: usize = 200;
/// Captures, instantiations and updates timed.
const BUILDS: usize = 50;
/// Ints in the pass's temporary (4 MiB).
const TEMP_INTS: usize = 1 << 20;
/// The arena's reservation.
const RESERVE: usize = 64 << 20;
const MODE: CaptureMode = CaptureMode::ThreadLocal;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The kernels and the stream.
struct Bench {
    stream: Stream,
    add: Kernel,
    seed: Kernel,
    take: Kernel,
    one: LaunchConfig,
}

impl Bench {
    /// The chain: CHAIN adds of 1 on `counter`.
    fn chain(&self, stream: &Stream, counter: u64) -> Result<()> {
        for _ in 0..CHAIN {
            // SAFETY: add(int*, int) updates the one int at `counter`.
            unsafe { launch(stream, &self.one, &self.add, (counter, 1i32))? };
        }
        Ok(())
    }

    /// The pass on `temp`: seed it with 2, CHAIN - 2 adds of 1, then add its first value.
    fn pass(&self, stream: &Stream, counter: u64, temp: &mut Buffer) -> Result<()> {
        let config = LaunchConfig::new((TEMP_INTS / 256) as u32, 256u32);
        // SAFETY: seed writes the TEMP_INTS ints of `temp`; add and take update the one int
        // at `counter`, take reads `temp`'s first.
        unsafe {
            launch(
                stream,
                &config,
                &self.seed,
                (&mut *temp, TEMP_INTS as i32, 2i32),
            )?;
            for _ in 0..CHAIN - 2 {
                launch(stream, &self.one, &self.add, (counter, 1i32))?;
            }
            launch(stream, &self.one, &self.take, (counter, &*temp))?;
        }
        Ok(())
    }

    /// Median replay + sync of `exec` over REPS, after 10 warm-up replays.
    fn replays(&self, exec: &GraphExec) -> Result<f64> {
        for _ in 0..10 {
            exec.launch(&self.stream)?;
        }
        self.stream.sync()?;
        let mut times = vec![0f64; REPS];
        for time in &mut times {
            let start = Instant::now();
            exec.launch(&self.stream)?;
            self.stream.sync()?;
            *time = us(start);
        }
        Ok(median(&mut times))
    }
}

/// Graph memory the device holds for allocation nodes now.
fn graph_memory_reserved(device: &Device) -> Result<u64> {
    let driver = cuda_safe::sys::driver()?;
    let mut value = 0u64;
    // SAFETY: a valid device and an out-pointer to the attribute's 64-bit value.
    unsafe {
        cuda_safe::cu!(
            driver,
            cuDeviceGetGraphMemAttribute(
                device.as_raw(),
                CUgraphMem_attribute::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                (&raw mut value).cast(),
            )
        )
    }?;
    Ok(value)
}

/// Runs every loop; `Ok(false)` when the counter came out wrong.
fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    let code = Program::new(SOURCE, options)?
        .compile(CodeKind::Cubin)?
        .load()?;
    let bench = Bench {
        stream: device.create_stream(Default::default())?,
        add: code.get_kernel("add")?,
        seed: code.get_kernel("seed")?,
        take: code.get_kernel("take")?,
        one: LaunchConfig::new(1, 1),
    };
    let s = &bench.stream;
    let arena = GraphArena::new(s, RESERVE)?;
    let counter = arena.static_buffer::<i32>(1, s)?;
    counter.copy_in(&[0])?;
    let ptr = counter.as_raw();
    let mut expected = 0usize;

    // The chain replayed from the arena.
    // SAFETY: the chain updates the arena's counter, which outlives the executables.
    let mut chain =
        unsafe { arena.capture(s, MODE, |c| bench.chain(c.stream(), ptr)) }?.instantiate()?;
    fig(
        "arena_chain100_graph_launch_plus_sync",
        bench.replays(&chain)?,
        "us",
    );
    expected += (10 + REPS) * CHAIN;

    // The pass, its temporary from the arena or from memory nodes.
    // SAFETY: the pass uses the counter and its temporary, from the arena.
    let from_arena = unsafe {
        arena.capture(s, MODE, |c| {
            let mut temp = arena.allocate_array::<i32>(TEMP_INTS, c.stream())?;
            bench.pass(c.stream(), ptr, &mut temp)
        })
    }?
    .instantiate()?;
    fig(
        "arena_pass_graph_launch_plus_sync",
        bench.replays(&from_arena)?,
        "us",
    );
    expected += (10 + REPS) * CHAIN;
    let pool = device.default_memory_resource()?;
    // SAFETY: the pass uses the counter and its temporary, a graph allocation.
    let with_nodes = unsafe {
        Graph::capture(s, MODE, |c| {
            let mut temp = pool.allocate_array::<i32>(TEMP_INTS, c.stream())?;
            bench.pass(c.stream(), ptr, &mut temp)
        })
    }?
    .instantiate()?;
    fig(
        "memnodes_pass_graph_launch_plus_sync",
        bench.replays(&with_nodes)?,
        "us",
    );
    expected += (10 + REPS) * CHAIN;
    fig("arena_pass_bytes", arena.usage().mapped as f64, "B");
    fig(
        "memnodes_pass_bytes",
        graph_memory_reserved(&device)? as f64,
        "B",
    );

    // The chain captured into an existing graph after a memset node, and instantiated.
    let scratch = Arc::new(arena.allocate_array::<i32>(64, s)?);
    let (mut captures, mut instantiations) = (vec![0f64; BUILDS], vec![0f64; BUILDS]);
    for (capture, instantiation) in captures.iter_mut().zip(&mut instantiations) {
        let mut graph = Graph::new(s.context())?;
        let zero = graph.add_memset(&[], &scratch, 0i32)?;
        let start = Instant::now();
        // SAFETY: the chain updates the arena's counter.
        unsafe { graph.capture_into(s, MODE, &[zero.into()], |c| bench.chain(c.stream(), ptr)) }?;
        *capture = us(start);
        let start = Instant::now();
        let exec = graph.instantiate()?;
        *instantiation = us(start);
        drop(exec);
    }
    fig("capture_into_chain100", median(&mut captures), "us");
    fig(
        "capture_into_chain100_instantiate",
        median(&mut instantiations),
        "us",
    );

    // Whole-graph updates of the chain's executable from a graph captured afresh.
    let (mut updates, mut refreshes) = (vec![0f64; BUILDS], vec![0f64; BUILDS]);
    for (update, refresh) in updates.iter_mut().zip(&mut refreshes) {
        let start = Instant::now();
        // SAFETY: as above.
        let fresh = unsafe { arena.capture(s, MODE, |c| bench.chain(c.stream(), ptr)) }?;
        let captured = Instant::now();
        chain.update(&fresh)?;
        *update = us(captured);
        *refresh = us(start);
    }
    fig("chain100_exec_update", median(&mut updates), "us");
    fig("chain100_update_from_capture", median(&mut refreshes), "us");
    chain.launch(s)?;
    s.sync()?;
    expected += CHAIN;

    let got = counter.to_vec()?[0];
    let right = usize::try_from(got).is_ok_and(|got| got == expected);
    println!(
        "counter {got} expected {expected} {}",
        if right { "OK" } else { "WRONG" }
    );
    drop((chain, from_arena, with_nodes));
    println!("DONE");
    Ok(right)
}
