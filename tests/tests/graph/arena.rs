//! Graph arenas: a captured forward pass (kernels and a cuBLAS GEMM whose workspace is arena
//! memory) replayed 1,000 times with new inputs, bit for bit against eager runs of the same
//! pass, its temporaries at the same addresses at every replay; beside it, the memory the
//! same pass takes captured with memory nodes. Refusals while a replay runs, a reset
//! followed by a fresh capture that lands on the same addresses, and the refusals of device
//! launch and of a static buffer copied over itself.

use cuda_safe::sys::{CUgraphMem_attribute, CUresult};
use cuda_safe::{
    Buffer, CaptureMode, Device, Error, GraphArena, InstantiateOptions, LaunchConfig, Result,
    StaticBuffer, Stream, launch,
};
use cuda_safe_libs::blas::{Blas, DEFAULT_WORKSPACE, Gemm, Scalars};

use super::common::{compile, setup};

/// The pass's kernels; `note` writes the address it is given into a log slot.
const PASS: &str = r#"
extern "C" __global__ void affine(const float* x, float* y, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
extern "C" __global__ void relu(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
extern "C" __global__ void note(const void* p, unsigned long long* log, int slot) {
    if (blockIdx.x == 0 && threadIdx.x == 0) log[slot] = (unsigned long long)p;
}
"#;

/// The GEMM's shape: inputs of M x K, weights of K x N.
const M: usize = 64;
const N: usize = 48;
const K: usize = 32;
/// Replays with new inputs.
const REPLAYS: usize = 1000;

/// `n` values in [-1, 1) from `seed` (xorshift).
fn random(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// What the pass uses besides its temporaries.
struct Model<'a> {
    stream: &'a Stream,
    blas: &'a Blas,
    weights: &'a Buffer,
    log: &'a Buffer,
    affine: cuda_safe::Kernel,
    relu: cuda_safe::Kernel,
    note: cuda_safe::Kernel,
}

impl Model<'_> {
    /// `relu(relu(0.5 x + 0.25) W)` into `finish`, through two temporaries from `allocate`,
    /// whose addresses the log's slots 0 and 1 get.
    fn pass(
        &self,
        allocate: impl Fn(usize) -> Result<Buffer>,
        x: &Buffer,
        finish: impl FnOnce(&Buffer) -> Result<()>,
    ) -> Result<()> {
        let s = self.stream;
        let mut hidden = allocate(M * K)?;
        let mut out = allocate(M * N)?;
        let (wide, narrow) = (
            LaunchConfig::for_num_elements(M * K, 128)?,
            LaunchConfig::for_num_elements(M * N, 128)?,
        );
        let log = self.log.as_raw();
        // SAFETY: each kernel reads and writes the n floats of the buffers it is given (M * K
        // or M * N), `note` one slot of the 2 of the log.
        unsafe {
            launch(
                s,
                &wide,
                &self.affine,
                (x, &mut hidden, 0.5f32, 0.25f32, (M * K) as i32),
            )?;
            launch(s, &wide, &self.relu, (&mut hidden, (M * K) as i32))?;
            launch(
                s,
                &LaunchConfig::new(1, 1),
                &self.note,
                (hidden.as_raw(), log, 0i32),
            )?;
        }
        let shape = Gemm::new(M, N, K);
        self.blas.gemm::<f32, f32>(
            &shape,
            Scalars::host(1.0, 0.0),
            &hidden,
            self.weights,
            &mut out,
        )?;
        // SAFETY: as above.
        unsafe {
            launch(s, &narrow, &self.relu, (&mut out, (M * N) as i32))?;
            launch(
                s,
                &LaunchConfig::new(1, 1),
                &self.note,
                (out.as_raw(), log, 1i32),
            )?;
        }
        drop(hidden);
        finish(&out)
    }
}

/// The bits of `values`.
fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Graph memory the device reserved for allocation nodes (`CU_GRAPH_MEM_ATTR_*`).
fn graph_memory(device: &Device, attribute: CUgraphMem_attribute) -> u64 {
    let driver = cuda_safe::sys::driver().unwrap();
    let mut value = 0u64;
    // SAFETY: a valid device and an out-pointer to the 64-bit value the attribute is.
    let result = unsafe {
        driver.cuDeviceGetGraphMemAttribute(device.as_raw(), attribute, (&raw mut value).cast())
    };
    assert_eq!(result.unwrap(), CUresult::CUDA_SUCCESS);
    value
}

pub(crate) fn a_forward_pass_replays_from_the_arena_bit_for_bit_at_stable_addresses() {
    let setup = setup();
    let s = &setup.stream;
    let code = compile(PASS);
    let arena = GraphArena::new(s, 256 << 20).unwrap();
    // The cuBLAS workspace is arena memory too: the captured GEMM uses it at every replay.
    let blas = Blas::with_workspace(s, arena.allocate(DEFAULT_WORKSPACE, s).unwrap()).unwrap();
    let weights = setup.pool.allocate_from_host(&random(K * N, 7), s).unwrap();
    let log = setup.pool.allocate_zeroed::<u64>(2, s).unwrap();
    let model = Model {
        stream: s,
        blas: &blas,
        weights: &weights,
        log: &log,
        affine: code.get_kernel("affine").unwrap(),
        relu: code.get_kernel("relu").unwrap(),
        note: code.get_kernel("note").unwrap(),
    };
    let x: StaticBuffer<f32> = arena.static_buffer(M * K, s).unwrap();
    let y: StaticBuffer<f32> = arena.static_buffer(M * N, s).unwrap();
    s.sync().unwrap();
    // SAFETY: the pass uses the arena's memory, `weights` and `log`, which outlive the
    // executable (dropped first, at the end of this function).
    let graph = unsafe {
        arena.capture(s, CaptureMode::ThreadLocal, |capture| {
            let stream = capture.stream();
            model.pass(
                |n| arena.allocate_array::<f32>(n, stream),
                x.buffer(),
                |out| y.copy_in_from(out),
            )
        })
    }
    .unwrap();
    let exec = graph.instantiate().unwrap();
    let used = arena.usage();

    let mut addresses = None;
    for round in 0..REPLAYS {
        let input = random(M * K, 1000 + round as u64);
        x.copy_in(&input).unwrap();
        exec.launch(s).unwrap();
        let replayed = y.to_vec().unwrap();
        let seen = log.to_vec::<u64>().unwrap();
        match addresses {
            None => addresses = Some(seen),
            Some(ref first) => assert_eq!(&seen, first, "replay {round} moved its temporaries"),
        }
        let eager_x = setup.pool.allocate_from_host(&input, s).unwrap();
        let mut eager_y = setup.pool.allocate_zeroed::<f32>(M * N, s).unwrap();
        model
            .pass(
                |n| setup.pool.allocate_array::<f32>(n, s),
                &eager_x,
                |out| eager_y.copy_from(out),
            )
            .unwrap();
        let eager = eager_y.to_vec::<f32>().unwrap();
        assert_eq!(
            bits(&replayed),
            bits(&eager),
            "replay {round} differs from eager"
        );
    }
    let addresses = addresses.unwrap();
    let inside = |a: u64| a >= arena.base() && a < arena.base() + used.reserved as u64;
    assert!(addresses.iter().all(|&a| inside(a)), "{addresses:x?}");

    // The same pass captured with memory nodes (the pool's allocations under capture).
    let before = graph_memory(
        &setup.device,
        CUgraphMem_attribute::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
    );
    // SAFETY: as above.
    let with_nodes = unsafe {
        cuda_safe::Graph::capture(s, CaptureMode::ThreadLocal, |capture| {
            let stream = capture.stream();
            model.pass(
                |n| setup.pool.allocate_array::<f32>(n, stream),
                x.buffer(),
                |out| y.copy_in_from(out),
            )
        })
    }
    .unwrap()
    .instantiate()
    .unwrap();
    with_nodes.launch(s).unwrap();
    s.sync().unwrap();
    let reserved = graph_memory(
        &setup.device,
        CUgraphMem_attribute::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
    );
    println!(
        "memory: arena in use {} + held {} (mapped {}, high water {}); memory nodes: used high \
         {before} before, reserved now {reserved} bytes",
        used.in_use, used.held, used.mapped, used.high_water
    );
    drop((with_nodes, exec));
}

pub(crate) fn a_busy_arena_refuses_and_a_reset_recaptures_at_the_same_addresses() {
    let setup = setup();
    let s = &setup.stream;
    let spin = setup.kernel("spin");
    let fill = setup.kernel("fill");
    let arena = GraphArena::new(s, 64 << 20).unwrap();
    let out: StaticBuffer<i32> = arena.static_buffer(256, s).unwrap();
    let record = |seen: &mut u64| {
        let mut seen_here = 0;
        // SAFETY: spin touches no memory; fill writes the 256 ints of its buffer.
        let graph = unsafe {
            arena.capture(s, CaptureMode::ThreadLocal, |capture| {
                let stream = capture.stream();
                let mut scratch = arena.allocate_array::<i32>(256, stream)?;
                seen_here = scratch.as_raw();
                launch(stream, &setup.one, &spin, (20_000_000u64,))?;
                let config = LaunchConfig::for_num_elements(256, 256)?;
                launch(stream, &config, &fill, (&mut scratch, 256i32, 7i32))?;
                out.copy_in_from(&scratch)
            })
        }
        .unwrap();
        *seen = seen_here;
        graph
    };
    let (mut first, mut second) = (0, 0);
    let mut exec = record(&mut first).instantiate().unwrap();
    exec.launch(s).unwrap();
    match arena.reset() {
        Err(Error::ArenaBusy { in_flight: 1, .. }) => {}
        other => panic!("a reset while a replay spins gave {other:?}"),
    }
    match arena.clone().close() {
        Err(Error::ArenaBusy { in_flight: 1, .. }) => {}
        other => panic!("a close while a replay spins gave {other:?}"),
    }
    s.sync().unwrap();
    assert_eq!(out.to_vec().unwrap(), [7; 256]);
    arena.reset().unwrap();
    assert!(matches!(exec.launch(s), Err(Error::InvalidArgument(_))));
    exec.update(&record(&mut second)).unwrap();
    assert_eq!(first, second, "the capture after the reset moved");
    exec.launch(s).unwrap();
    s.sync().unwrap();
    assert_eq!(out.to_vec().unwrap(), [7; 256]);

    // Refused before the driver: a launch from the device would pass none of the arena's
    // checks, and a static buffer copied over itself would be an overlapping copy.
    let device = InstantiateOptions::default().device_launch(true);
    let refused = record(&mut second).instantiate_with(device);
    assert!(matches!(refused, Err(Error::InvalidArgument(_))));
    assert!(matches!(
        out.copy_in_from(out.buffer()),
        Err(Error::InvalidArgument(_))
    ));
}
