//! CUDA graphs on a real GPU: every node type, stream capture in each mode and across forked
//! streams, conditional nodes, executable updates (accepted and refused), host callbacks
//! (order, panics, a graph dropped with a replay in flight) and what graphs keep alive.
//!
//! Tests run on threads of one process, and a global-mode capture forbids some calls on every
//! thread: each test holds [`CAPTURE_MODES`] for reading, the global-mode tests for writing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, Weak};
use std::time::{Duration, Instant};

use cuda_gpu_tests::gpu_tests;
use cuda_safe::{
    Buffer, Capture, CaptureMode, CaptureStatus, CodeKind, ConditionalHandle, Context, Device,
    DeviceMemoryResource, DotFlags, Error, EventOptions, Graph, InstantiateOptions, Kernel,
    LaunchConfig, ObjectCode, PinnedMemoryResource, Program, ProgramOptions, Stream, StreamOptions,
    launch,
};
use cuda_sys::{CUresult, CudaVersion};

const SOURCE: &str = r#"
extern "C" __global__ void add(int* p, int v) { atomicAdd(p, v); }
extern "C" __global__ void set_at(int* p, int i, int v) { p[i] = v; }
extern "C" __global__ void copy_one(int* dst, const int* src) { dst[0] = src[0]; }
extern "C" __global__ void sum2(int* p) { p[2] = p[0] + p[1]; }
extern "C" __global__ void fill(int* p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"#;

/// Kernels that set a conditional handle (NVRTC 12.3 on knows the handle type).
const CONDITIONAL_SOURCE: &str = r#"
extern "C" __global__ void set_handle(cudaGraphConditionalHandle handle, unsigned int value) {
    cudaGraphSetConditional(handle, value);
}
extern "C" __global__ void add(int* p, int v) { atomicAdd(p, v); }
extern "C" __global__ void count_to(int* counter, int limit, cudaGraphConditionalHandle handle) {
    int count = atomicAdd(counter, 1) + 1;
    cudaGraphSetConditional(handle, count < limit ? 1 : 0);
}
"#;

/// Held for reading by every test, for writing by those that capture in global mode.
static CAPTURE_MODES: RwLock<()> = RwLock::new(());

struct Setup {
    device: Device,
    context: Context,
    stream: Stream,
    pool: DeviceMemoryResource,
    pinned: PinnedMemoryResource,
    code: ObjectCode,
    one: LaunchConfig,
    _modes: Option<RwLockReadGuard<'static, ()>>,
}

impl Setup {
    fn kernel(&self, name: &str) -> Kernel {
        self.code.get_kernel(name).unwrap()
    }

    /// `n` zeroed ints on the setup's stream, shared (graphs keep `Arc<Buffer>`s alive).
    fn ints(&self, n: usize) -> Arc<Buffer> {
        Arc::new(self.pool.allocate_zeroed::<i32>(n, &self.stream).unwrap())
    }

    fn read(&self, buffer: &Buffer) -> Vec<i32> {
        self.stream.sync().unwrap();
        buffer.to_vec().unwrap()
    }
}

fn compile(source: &str) -> ObjectCode {
    Program::new(source, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
}

/// The setup of a test that captures in thread-local or relaxed mode, or not at all.
fn setup() -> Setup {
    let guard = CAPTURE_MODES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    setup_with(Some(guard))
}

/// The setup of a test that captures in global mode: it holds [`CAPTURE_MODES`] for writing.
fn setup_alone() -> (Setup, std::sync::RwLockWriteGuard<'static, ()>) {
    let guard = CAPTURE_MODES
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (setup_with(None), guard)
}

fn setup_with(modes: Option<RwLockReadGuard<'static, ()>>) -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let context = device.context().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let pinned = PinnedMemoryResource::new(&device).unwrap();
    Setup {
        code: compile(SOURCE),
        device,
        context,
        stream,
        pool,
        pinned,
        one: LaunchConfig::new(1, 1),
        _modes: modes,
    }
}

/// Waits up to 10 s for `done`; what graphs keep alive is dropped asynchronously (the driver
/// releases user objects on a thread of its own after the last replay).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 10 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Sets a flag when dropped.
struct Sentinel(Arc<AtomicUsize>);

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn driver_version() -> CudaVersion {
    cuda_safe::cuda_driver_version().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Explicit building: every node type.

fn kernel_nodes_run_with_checked_typed_arguments() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add(int*, int) updates one int, which `x` holds (kept by the graph).
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 3i32)) }.unwrap();
    assert_eq!(node.kernel().name(), "add");
    assert_eq!(graph.nodes().unwrap(), [node.node()]);

    // SAFETY: refused before the driver: one argument short.
    let short = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x,)) }.unwrap_err();
    assert!(
        short
            .to_string()
            .contains("takes 2 parameters, 1 arguments"),
        "{short}"
    );
    // SAFETY: refused before the driver: a 64-bit value for the int.
    let wide = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 3i64)) }.unwrap_err();
    assert!(matches!(wide, Error::InvalidArgument(_)), "{wide}");
    let mut other = Graph::new(&setup.context).unwrap();
    // SAFETY: refused before the driver: the dependency is a node of `graph`.
    let foreign = unsafe { other.add_kernel(&[node.node()], &setup.one, &add, (&x, 1i32)) };
    assert!(foreign.unwrap_err().to_string().contains("another graph"));
    // SAFETY: refused before the driver: a block over the device's limit.
    let huge = unsafe { other.add_kernel(&[], &LaunchConfig::new(1, 4096), &add, (&x, 1i32)) };
    assert!(matches!(huge, Err(Error::InvalidArgument(_))));

    let exec = graph.instantiate().unwrap();
    for _ in 0..4 {
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [12]);
}

fn memset_and_memcpy_nodes_fill_and_copy_buffers() {
    let setup = setup();
    let n = 1000;
    let words = setup.ints(n);
    let floats = setup.ints(n);
    let copy = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(n, &setup.stream)
            .unwrap(),
    );
    let mut graph = Graph::new(&setup.context).unwrap();
    let set_words = graph.add_memset(&[], &words, 0x0BAD_F00Du32).unwrap();
    graph.add_memset(&[], &floats, 2.5f32).unwrap();
    graph.add_memcpy(&[set_words], &copy, &words).unwrap();

    let odd = graph.add_memset(&[], &floats, 1.5f64).unwrap_err();
    assert!(odd.to_string().contains("need a kernel"), "{odd}");
    let small = setup.ints(3);
    let sizes = graph.add_memcpy(&[], &small, &words).unwrap_err();
    assert!(matches!(sizes, Error::InvalidArgument(_)), "{sizes}");
    let uneven = Arc::new(setup.pool.allocate(6, &setup.stream).unwrap());
    assert!(
        graph.add_memset(&[], &uneven, 7u32).is_err(),
        "6 bytes are not u32s"
    );

    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert!(
        copy.as_host_slice::<u32>()
            .unwrap()
            .iter()
            .all(|&v| v == 0x0BAD_F00D)
    );
    assert!(floats.to_vec::<f32>().unwrap().iter().all(|&v| v == 2.5));
    assert!(
        words
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .all(|&v| v == 0x0BAD_F00D)
    );
}

fn host_nodes_run_once_per_replay_after_their_dependencies() {
    let setup = setup();
    let set_at = setup.kernel("set_at");
    let flag = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(1, &setup.stream)
            .unwrap(),
    );
    setup.stream.sync().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: set_at writes p[0] of one pinned int (kept by the graph).
    let write =
        unsafe { graph.add_kernel(&[], &setup.one, &set_at, (&flag, 0i32, 42i32)) }.unwrap();
    let (address, log) = (flag.as_raw() as usize, seen.clone());
    graph
        .add_host(&[write.node()], move || {
            // SAFETY: pinned host memory the test keeps alive; the kernel before has finished.
            let value = unsafe { std::ptr::read_volatile(address as *const i32) };
            log.lock().unwrap().push(value);
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..5 {
        exec.launch(&setup.stream).unwrap();
    }
    setup.stream.sync().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [42; 5],
        "once per replay, after the kernel"
    );
}

fn event_record_and_wait_nodes_order_two_graphs_on_two_streams() {
    let setup = setup();
    let (spin, set_at, copy_one) = (
        setup.kernel("spin"),
        setup.kernel("set_at"),
        setup.kernel("copy_one"),
    );
    let other = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let (x, y) = (setup.ints(1), setup.ints(1));
    setup.stream.sync().unwrap();
    let event = Arc::new(setup.device.create_event(EventOptions::default()).unwrap());

    let mut producer = Graph::new(&setup.context).unwrap();
    // SAFETY: spin reads the clock only; set_at writes the one int of `x`.
    let write = unsafe {
        let slow = producer
            .add_kernel(&[], &setup.one, &spin, (100_000_000u64,))
            .unwrap();
        producer
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 7i32))
            .unwrap()
    };
    producer.add_event_record(&[write.node()], &event).unwrap();

    let mut consumer = Graph::new(&setup.context).unwrap();
    let wait = consumer.add_event_wait(&[], &event).unwrap();
    // SAFETY: copy_one copies one int between buffers holding one each.
    unsafe { consumer.add_kernel(&[wait], &setup.one, &copy_one, (&y, &x)) }.unwrap();

    let (producer, consumer) = (
        producer.instantiate().unwrap(),
        consumer.instantiate().unwrap(),
    );
    producer.launch(&setup.stream).unwrap();
    consumer.launch(&other).unwrap();
    other.sync().unwrap();
    assert_eq!(
        y.to_vec::<i32>().unwrap(),
        [7],
        "the copy waited for the 100 ms producer"
    );
    setup.stream.sync().unwrap();
}

fn allocation_nodes_give_memory_between_their_allocation_and_free() {
    let setup = setup();
    let fill = setup.kernel("fill");
    let n = 4096usize;
    let out = setup.ints(n);
    setup.stream.sync().unwrap();
    let mut graph = Graph::new(&setup.context).unwrap();
    let memory = graph.add_mem_alloc(&[], 4 * n).unwrap();
    assert_eq!(memory.len(), 4 * n);
    assert!(graph.add_mem_alloc(&[], 0).is_err());
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: fill writes n ints of the graph allocation, which holds n; it runs after the
    // allocation and before the copy and the free.
    let filled = unsafe {
        graph.add_kernel(
            &[memory.node()],
            &config,
            &fill,
            (memory.as_raw(), n as i32, 5i32),
        )
    }
    .unwrap();
    // SAFETY: both hold 4n bytes; `out` outlives the executable; the copy runs before the free.
    let copied =
        unsafe { graph.add_memcpy_raw(&[filled.node()], out.as_raw(), memory.as_raw(), 4 * n) }
            .unwrap();
    graph.add_mem_free(&[copied], &memory).unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap(); // freed in the graph, so it launches again
    }
    assert!(setup.read(&out).iter().all(|&v| v == 5));

    let mut unfreed = Graph::new(&setup.context).unwrap();
    unfreed.add_mem_alloc(&[], 256).unwrap();
    let options = InstantiateOptions {
        auto_free_on_launch: true,
        ..Default::default()
    };
    let exec = unfreed.instantiate_with(options).unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap(); // the first launch's memory is freed on relaunch
    setup.stream.sync().unwrap();
}

fn child_graphs_and_empty_nodes_split_and_join() {
    let setup = setup();
    let (set_at, sum2, add) = (
        setup.kernel("set_at"),
        setup.kernel("sum2"),
        setup.kernel("add"),
    );
    let (x, counter) = (setup.ints(3), setup.ints(1));
    let mut child = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `counter`.
    unsafe { child.add_kernel(&[], &setup.one, &add, (&counter, 1i32)) }.unwrap();

    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: set_at writes x[0] and x[1]; sum2 reads them and writes x[2]; x holds 3 ints.
    let (left, right) = unsafe {
        (
            graph
                .add_kernel(&[], &setup.one, &set_at, (&x, 0i32, 1i32))
                .unwrap(),
            graph
                .add_kernel(&[], &setup.one, &set_at, (&x, 1i32, 2i32))
                .unwrap(),
        )
    };
    let join = graph.add_empty(&[left.node(), right.node()]).unwrap();
    // SAFETY: as above.
    let sum = unsafe { graph.add_kernel(&[join], &setup.one, &sum2, (&x,)) }.unwrap();
    let first = graph.add_child(&[sum.node()], &child).unwrap();
    graph.add_child(&[first], &child).unwrap();
    drop(child); // the graph holds its copy, and the counter through it
    assert_eq!(graph.nodes().unwrap().len(), 6);

    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1, 2, 3]);
    assert_eq!(setup.read(&counter), [4]);
}

fn dependencies_added_later_order_nodes() {
    let setup = setup();
    let (spin, set_at, copy_one) = (
        setup.kernel("spin"),
        setup.kernel("set_at"),
        setup.kernel("copy_one"),
    );
    let x = setup.ints(2);
    let second = x.as_raw() + 4;
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: spin touches no memory; set_at writes x[0]; copy_one copies x[0] to x[1].
    let (write, copy) = unsafe {
        let slow = graph
            .add_kernel(&[], &setup.one, &spin, (50_000_000u64,))
            .unwrap();
        let write = graph
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 9i32))
            .unwrap();
        let copy = graph
            .add_kernel(&[], &setup.one, &copy_one, (second, x.as_raw()))
            .unwrap();
        (write, copy)
    };
    graph.add_dependency(write.node(), copy.node()).unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [9, 9],
        "the copy waited for the write behind the spin"
    );
}

fn graphs_are_written_as_dot() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    graph.add_empty(&[node.node()]).unwrap();
    let path = std::env::temp_dir().join(format!("cuda-safe-graph-{}.dot", std::process::id()));
    graph.write_dot(&path, DotFlags::VERBOSE).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(text.contains("digraph"), "{text}");
    assert!(
        text.contains("->"),
        "the edge from the kernel to the empty node: {text}"
    );
    assert!(graph.write_dot("no\0such.dot", DotFlags::empty()).is_err());
}

// ---------------------------------------------------------------------------------------------
// Stream capture.

/// Captures `count` launches of add(x, 1) on `stream` in `mode`, checking the status on the
/// way.
fn capture_adds(
    setup: &Setup,
    stream: &Stream,
    mode: CaptureMode,
    x: &Buffer,
    count: usize,
) -> Graph {
    let add = setup.kernel("add");
    assert_eq!(Capture::status_of(stream).unwrap(), CaptureStatus::Idle);
    // SAFETY: `x` outlives every executable of the graph in these tests; add updates one int.
    let capture = unsafe { Capture::begin(stream, mode) }.unwrap();
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    for _ in 0..count {
        // SAFETY: as above.
        unsafe { launch(stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    }
    let graph = capture.end().unwrap();
    assert_eq!(Capture::status_of(stream).unwrap(), CaptureStatus::Idle);
    assert_eq!(graph.nodes().unwrap().len(), count);
    graph
}

fn capture_in_thread_local_and_relaxed_mode_records_launches() {
    let setup = setup();
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    for mode in [CaptureMode::ThreadLocal, CaptureMode::Relaxed] {
        let exec = capture_adds(&setup, &setup.stream, mode, &x, 10)
            .instantiate()
            .unwrap();
        exec.upload(&setup.stream).unwrap();
        exec.launch(&setup.stream).unwrap();
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [40]);
}

fn capture_in_global_mode_records_launches() {
    let (setup, _alone) = setup_alone();
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    let exec = capture_adds(&setup, &setup.stream, CaptureMode::Global, &x, 10)
        .instantiate()
        .unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [10]);
}

/// A synchronous allocation (`cuMemAlloc`), which capture modes forbid, made on a thread with
/// `context` current; frees it when it succeeds.
fn raw_alloc(context: &Context) -> Result<(), CUresult> {
    context.bind().unwrap();
    let driver = cuda_sys::driver().unwrap();
    let mut ptr = 0;
    // SAFETY: a valid out-pointer; the context is current.
    match unsafe { driver.cuMemAlloc_v2(&mut ptr, 256) }.unwrap() {
        CUresult::CUDA_SUCCESS => {
            // SAFETY: the allocation just made.
            unsafe { driver.cuMemFree_v2(ptr) }.unwrap();
            Ok(())
        }
        code => Err(code),
    }
}

/// Runs [`raw_alloc`] on another thread.
fn raw_alloc_elsewhere(context: &Context) -> Result<(), CUresult> {
    let context = context.clone();
    std::thread::spawn(move || raw_alloc(&context))
        .join()
        .unwrap()
}

fn capture_modes_forbid_unsafe_calls_where_documented() {
    let (setup, _alone) = setup_alone();
    let is_capture_code = |code: CUresult| (900..=908).contains(&code.0);
    let expectations = [
        // (mode, allowed here, allowed on another thread)
        (CaptureMode::Global, false, false),
        (CaptureMode::ThreadLocal, false, true),
        (CaptureMode::Relaxed, true, true),
    ];
    for (mode, here, elsewhere) in expectations {
        // One capture per call: a refused call invalidates the capture it would touch.
        for (on_this_thread, allowed) in [(true, here), (false, elsewhere)] {
            // SAFETY: nothing is recorded.
            let capture = unsafe { Capture::begin(&setup.stream, mode) }.unwrap();
            let outcome = if on_this_thread {
                raw_alloc(&setup.context)
            } else {
                raw_alloc_elsewhere(&setup.context)
            };
            println!("{mode:?}, on this thread: {on_this_thread}: {outcome:?}");
            assert_eq!(
                outcome.is_ok(),
                allowed,
                "{mode:?}, on this thread: {on_this_thread}"
            );
            if let Err(code) = outcome {
                assert!(is_capture_code(code), "{mode:?}: {}", code.0);
            }
            match capture.end() {
                Ok(graph) => assert!(graph.nodes().unwrap().is_empty()),
                Err(error) => assert!(error.is_capture_error(), "{error}"),
            }
            assert_eq!(
                Capture::status_of(&setup.stream).unwrap(),
                CaptureStatus::Idle
            );
        }
    }
}

fn illegal_work_during_capture_is_explained_and_the_stream_recovers() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup.stream.sync().unwrap();

    // A synchronization of the capturing stream.
    // SAFETY: `x` outlives the capture, which records one add.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    unsafe { launch(&setup.stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    let sync = setup.stream.sync().unwrap_err();
    println!("sync while capturing: {sync}");
    assert!(sync.is_capture_error(), "{sync}");
    assert_eq!(
        sync.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    );
    assert!(
        sync.to_string().contains("not allowed while the stream"),
        "{sync}"
    );
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Invalidated { .. }
    ));
    let ended = capture.end().unwrap_err();
    println!("end: {ended}");
    assert_eq!(
        ended.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
    );
    assert!(ended.to_string().contains("can be used again"), "{ended}");
    assert_eq!(
        Capture::status_of(&setup.stream).unwrap(),
        CaptureStatus::Idle
    );
    // SAFETY: add updates the one int of `x`.
    unsafe { launch(&setup.stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    assert_eq!(
        setup.read(&x),
        [1],
        "the captured add never ran; the stream runs again"
    );

    // The legacy default stream while a blocking stream captures.
    let blocking = setup
        .device
        .create_stream(StreamOptions {
            non_blocking: false,
            priority: None,
        })
        .unwrap();
    // SAFETY: the context is current on this thread, the only one using the handle.
    let legacy = unsafe { Stream::legacy_default(&setup.context) };
    // SAFETY: nothing the capture might record touches freed memory (`x` outlives it).
    let capture = unsafe { Capture::begin(&blocking, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: add updates the one int of `x`.
    let implicit = unsafe { launch(&legacy, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap_err();
    println!("legacy stream while capturing: {implicit}");
    assert!(implicit.is_capture_error(), "{implicit}");
    match capture.end() {
        Ok(graph) => drop(graph),
        Err(error) => assert!(error.is_capture_error(), "{error}"),
    }
    // SAFETY: as above.
    unsafe { launch(&blocking, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    blocking.sync().unwrap();
    // SAFETY: as above.
    unsafe { launch(&legacy, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    legacy.sync().unwrap();
    assert_eq!(setup.read(&x), [3]);
}

fn capture_across_forked_streams_joins_into_one_graph() {
    let setup = setup();
    let (set_at, add, sum2) = (
        setup.kernel("set_at"),
        setup.kernel("add"),
        setup.kernel("sum2"),
    );
    let branch = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let x = setup.ints(3);
    setup.stream.sync().unwrap();
    let (first, second) = (x.as_raw(), x.as_raw() + 4);
    // SAFETY: `x` (3 ints) outlives the executable; each kernel touches x[0..3].
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            launch(capture.stream(), &setup.one, &set_at, (first, 0i32, 1i32))?;
            capture.fork(&branch)?;
            assert!(matches!(
                Capture::status_of(&branch)?,
                CaptureStatus::Active { .. }
            ));
            launch(capture.stream(), &setup.one, &add, (first, 10i32))?;
            launch(&branch, &setup.one, &add, (second, 20i32))?;
            capture.join(&branch)?;
            launch(capture.stream(), &setup.one, &sum2, (first,))?;
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.nodes().unwrap().len(), 4, "events add no nodes");
    assert_eq!(Capture::status_of(&branch).unwrap(), CaptureStatus::Idle);
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11, 20, 31]);

    // A fork that is never joined.
    let lost = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    // SAFETY: as above.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    capture.fork(&lost).unwrap();
    // SAFETY: as above.
    unsafe { launch(&lost, &setup.one, &add, (first, 1i32)) }.unwrap();
    let unjoined = capture.end().unwrap_err();
    println!("unjoined: {unjoined}");
    assert_eq!(
        unjoined.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
    );
    assert!(unjoined.is_capture_error());
    assert_eq!(
        Capture::status_of(&setup.stream).unwrap(),
        CaptureStatus::Idle
    );
}

fn captured_kernel_nodes_are_updated_without_instantiating_again() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    let mut nodes = Vec::new();
    // SAFETY: add updates the one int of `x`, kept by the graph (an `Arc<Buffer>` argument).
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            for step in 0..3 {
                nodes.push(capture.launch(&setup.one, &add, (&x, step))?);
            }
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.nodes().unwrap().len(), 3);
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap(); // 0 + 1 + 2
    for node in &nodes {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(node, (&x, 100i32)) }.unwrap();
    }
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [303]);
    // The nodes named by position in a captured graph, as a C program would.
    let first = exec.graph().nodes().unwrap()[0];
    let named = exec.graph().kernel_node(first, &add, &setup.one).unwrap();
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&named, (&x, 1000i32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [303 + 1200]);
}

fn host_functions_are_refused_on_a_capturing_stream() {
    let setup = setup();
    // SAFETY: nothing is recorded.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    let refused = setup.stream.launch_host_func(|| {}).unwrap_err();
    assert!(refused.to_string().contains("Graph::add_host"), "{refused}");
    assert!(capture.end().unwrap().nodes().unwrap().is_empty());
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    setup
        .stream
        .launch_host_func(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------------
// Conditional nodes.

/// The conditional kernels, or `None` (after checking the error is the typed one) when the
/// driver is older than `needed`.
fn conditional_code(needed: CudaVersion) -> Option<ObjectCode> {
    let version = driver_version();
    if version < needed {
        println!("driver {version} has no such conditional nodes; checking the refusal only");
        return None;
    }
    let source = format!(
        "{}{CONDITIONAL_SOURCE}",
        ConditionalHandle::DEVICE_DECLARATION
    );
    Some(compile(&source))
}

fn conditional_if_runs_its_body_when_a_kernel_sets_the_handle() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let Some(code) = conditional_code(CudaVersion(12040)) else {
        assert!(
            graph
                .conditional_handle(None)
                .unwrap_err()
                .is_not_supported()
        );
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let x = setup.ints(1);
    let handle = graph.conditional_handle(None).unwrap();
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 0u32)) }.unwrap();
    let mut then = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    unsafe { then.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    let mut other = Graph::new(&setup.context).unwrap();
    let foreign = other.add_if(&[], &handle, &then).unwrap_err();
    assert!(foreign.to_string().contains("another graph"), "{foreign}");
    let branch = graph.add_if(&[setter.node()], &handle, &then).unwrap();
    // SAFETY: as above.
    unsafe { graph.add_kernel(&[branch], &setup.one, &add, (&x, 100i32)) }.unwrap();

    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [100],
        "the handle was 0: the body was skipped"
    );
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&setter, (handle, 1u32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [201], "the handle was 1: the body ran once");
}

fn conditional_if_else_runs_one_of_two_bodies() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let x = setup.ints(1);
    let Some(code) = conditional_code(CudaVersion(12080)) else {
        if driver_version() >= CudaVersion(12040) {
            let handle = graph.conditional_handle(Some(1)).unwrap();
            let empty = Graph::new(&setup.context).unwrap();
            let refused = graph.add_if_else(&[], &handle, &empty, &empty).unwrap_err();
            assert!(matches!(refused, Error::Unsupported { .. }), "{refused}");
        }
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let handle = graph.conditional_handle(None).unwrap();
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 1u32)) }.unwrap();
    let (mut then, mut otherwise) = (
        Graph::new(&setup.context).unwrap(),
        Graph::new(&setup.context).unwrap(),
    );
    // SAFETY: add updates the one int of `x`.
    unsafe {
        then.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        otherwise
            .add_kernel(&[], &setup.one, &add, (&x, 10i32))
            .unwrap();
    }
    graph
        .add_if_else(&[setter.node()], &handle, &then, &otherwise)
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1]);
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&setter, (handle, 0u32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11]);
}

fn conditional_while_loops_until_a_kernel_of_its_captured_body_clears_the_handle() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let Some(code) = conditional_code(CudaVersion(12040)) else {
        assert!(
            graph
                .conditional_handle(Some(1))
                .unwrap_err()
                .is_not_supported()
        );
        return;
    };
    let count_to = code.get_kernel("count_to").unwrap();
    let counter = setup.ints(1);
    setup.stream.sync().unwrap();
    let handle = graph.conditional_handle(Some(1)).unwrap();
    // SAFETY: count_to updates the one int of `counter` (kept by the body graph, then by
    // `graph`) and sets the handle.
    let body = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            capture
                .launch(&setup.one, &count_to, (&counter, 10i32, handle))
                .map(drop)
        })
    }
    .unwrap();
    graph.add_while(&[], &handle, &body).unwrap();
    drop(body);
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&counter), [10], "ran until the count reached 10");
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&counter),
        [11],
        "the default (1) entered the loop once more"
    );
}

fn conditional_switch_runs_the_case_of_the_value() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let x = setup.ints(1);
    let Some(code) = conditional_code(CudaVersion(12080)) else {
        if driver_version() >= CudaVersion(12040) {
            let handle = graph.conditional_handle(Some(0)).unwrap();
            let empty = Graph::new(&setup.context).unwrap();
            let refused = graph.add_switch(&[], &handle, &[&empty]).unwrap_err();
            assert!(refused.is_not_supported(), "{refused}");
        }
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let handle = graph.conditional_handle(None).unwrap();
    assert!(
        graph.add_switch(&[], &handle, &[]).is_err(),
        "a switch needs a case"
    );
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 2u32)) }.unwrap();
    let mut cases = Vec::new();
    for value in [1i32, 0, 100] {
        let mut case = Graph::new(&setup.context).unwrap();
        if value != 0 {
            // SAFETY: add updates the one int of `x`.
            unsafe { case.add_kernel(&[], &setup.one, &add, (&x, value)) }.unwrap();
        }
        cases.push(case); // case 1 stays empty
    }
    let case_refs: Vec<&Graph> = cases.iter().collect();
    graph
        .add_switch(&[setter.node()], &handle, &case_refs)
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    for (value, expected) in [(2u32, 100), (1, 100), (0, 101), (7, 101)] {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(&setter, (handle, value)) }.unwrap();
        exec.launch(&setup.stream).unwrap();
        assert_eq!(setup.read(&x), [expected], "value {value}");
    }
}

// ---------------------------------------------------------------------------------------------
// Executable updates.

fn whole_graph_updates_are_applied_or_refused_with_the_reason() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let single = |value: i32| {
        let mut graph = Graph::new(&setup.context).unwrap();
        // SAFETY: add updates the one int of `x`.
        unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, value)) }.unwrap();
        graph
    };
    let mut exec = single(1).instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.update(&single(5)).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [6]);

    let mut two = Graph::new(&setup.context).unwrap();
    // SAFETY: as above.
    unsafe {
        let first = two.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        two.add_kernel(&[first.node()], &setup.one, &add, (&x, 1i32))
            .unwrap();
    }
    let refused = exec.update(&two).unwrap_err();
    println!("refused: {refused}");
    match refused {
        Error::GraphUpdateRefused { reason, .. } => assert_eq!(
            reason,
            cuda_sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
        ),
        other => panic!("unexpected {other}"),
    }
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [11],
        "a refused update leaves the executable as it was"
    );
}

fn kernel_node_arguments_are_updated_in_the_executable() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 0i32)) }.unwrap();
    let mut other = Graph::new(&setup.context).unwrap();
    // SAFETY: as above.
    let stranger = unsafe { other.add_kernel(&[], &setup.one, &add, (&x, 0i32)) }.unwrap();
    let mut exec = graph.instantiate().unwrap();
    for value in 0..100 {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(&node, (&x, value)) }.unwrap();
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [4950]);
    // SAFETY: refused before the driver.
    let short = unsafe { exec.set_kernel_args(&node, (&x,)) }.unwrap_err();
    assert!(matches!(short, Error::InvalidArgument(_)), "{short}");
    // SAFETY: refused before the driver.
    let foreign = unsafe { exec.set_kernel_args(&stranger, (&x, 1i32)) }.unwrap_err();
    assert!(foreign.to_string().contains("another graph"), "{foreign}");
}

fn nodes_are_disabled_and_enabled() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let (first, second) = unsafe {
        let first = graph.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        let second = graph
            .add_kernel(&[first.node()], &setup.one, &add, (&x, 10i32))
            .unwrap();
        (first, second)
    };
    let mut exec = graph.instantiate().unwrap();
    assert!(exec.is_node_enabled(second.node()).unwrap());
    exec.set_node_enabled(second.node(), false).unwrap();
    assert!(!exec.is_node_enabled(second.node()).unwrap());
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1]);
    exec.set_node_enabled(second.node(), true).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [12]);
    assert!(exec.is_node_enabled(first.node()).unwrap());
}

// ---------------------------------------------------------------------------------------------
// Host callbacks.

fn stream_host_functions_run_once_in_stream_order() {
    let setup = setup();
    let set_at = setup.kernel("set_at");
    let flag = setup
        .pinned
        .allocate_zeroed::<i32>(1, &setup.stream)
        .unwrap();
    let address = flag.as_raw() as usize;
    let seen = Arc::new(Mutex::new(Vec::new()));
    for step in 0..5 {
        // SAFETY: set_at writes the one pinned int of `flag`, which outlives the stream's work.
        unsafe {
            launch(
                &setup.stream,
                &setup.one,
                &set_at,
                (flag.as_raw(), 0i32, step),
            )
        }
        .unwrap();
        let log = seen.clone();
        setup
            .stream
            .launch_host_func(move || {
                // SAFETY: pinned memory the test keeps alive; the kernel before has finished.
                let value = unsafe { std::ptr::read_volatile(address as *const i32) };
                log.lock().unwrap().push((step, value));
            })
            .unwrap();
    }
    setup.stream.sync().unwrap();
    let expected: Vec<(i32, i32)> = (0..5).map(|step| (step, step)).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
}

fn a_panicking_stream_host_function_is_reported_by_the_next_call() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup
        .stream
        .launch_host_func(|| panic!("boom in a host function"))
        .unwrap();
    let reported = setup.stream.sync().unwrap_err();
    match &reported {
        Error::CallbackPanicked { message, count } => {
            assert!(message.contains("boom in a host function"));
            assert_eq!(*count, 1);
        }
        other => panic!("unexpected {other}"),
    }
    setup.stream.sync().unwrap();

    // A query that finds the work done reports it too.
    setup.stream.launch_host_func(|| panic!("again")).unwrap();
    loop {
        match setup.stream.query() {
            Ok(false) => std::thread::yield_now(),
            Ok(true) => panic!("the query did not report the panic"),
            Err(Error::CallbackPanicked { message, .. }) => {
                assert_eq!(&*message, "again");
                break;
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    // So does the next host function, which is then not queued.
    let done = setup.device.create_event(EventOptions::default()).unwrap();
    setup.stream.launch_host_func(|| panic!("third")).unwrap();
    setup.stream.record(&done).unwrap();
    done.sync().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    let refused = setup.stream.launch_host_func(move || {
        count.fetch_add(1, Ordering::SeqCst);
    });
    assert!(matches!(refused, Err(Error::CallbackPanicked { .. })));
    setup.stream.sync().unwrap();
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the refused host function never ran"
    );
    // The stream still runs kernels and callbacks.
    // SAFETY: add updates the one int of `x`.
    unsafe { launch(&setup.stream, &setup.one, &add, (&*x, 1i32)) }.unwrap();
    setup.stream.launch_host_func(|| {}).unwrap();
    assert_eq!(setup.read(&x), [1]);
}

fn a_panicking_host_node_is_reported_by_the_next_launch() {
    let setup = setup();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut graph = Graph::new(&setup.context).unwrap();
    graph
        .add_host(&[], move || {
            if counted.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("second replay");
            }
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    let reported = exec.launch(&setup.stream).unwrap_err();
    assert!(reported.to_string().contains("second replay"), "{reported}");
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the refused launch ran nothing"
    );
}

fn host_callbacks_cannot_call_cuda_in_debug_builds() {
    if !cfg!(debug_assertions) {
        println!("release build: the check is compiled out (and CUDA is never called here)");
        return;
    }
    let setup = setup();
    let stream = setup.stream.clone();
    let answer = Arc::new(Mutex::new(None));
    let kept = answer.clone();
    setup
        .stream
        .launch_host_func(move || {
            *kept.lock().unwrap() = Some(stream.query());
        })
        .unwrap();
    setup.stream.sync().unwrap();
    let refused = answer.lock().unwrap().take().unwrap().unwrap_err();
    assert!(
        refused.to_string().contains("inside a host callback"),
        "{refused}"
    );
}

// ---------------------------------------------------------------------------------------------
// Lifetimes.

fn dropping_the_graph_while_a_replay_is_in_flight_keeps_what_it_uses() {
    let setup = setup();
    let (spin, set_at) = (setup.kernel("spin"), setup.kernel("set_at"));
    let x = setup.ints(1);
    let out = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(1, &setup.stream)
            .unwrap(),
    );
    setup.stream.sync().unwrap();
    let (drops, runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (sentinel, counted) = (Sentinel(drops.clone()), runs.clone());

    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: spin touches no memory; set_at writes the one int of `x` (kept by the graph).
    let write = unsafe {
        let slow = graph
            .add_kernel(&[], &setup.one, &spin, (200_000_000u64,))
            .unwrap();
        graph
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 42i32))
            .unwrap()
    };
    let copy = graph.add_memcpy(&[write.node()], &out, &x).unwrap();
    graph
        .add_host(&[copy], move || {
            let _held = &sentinel;
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    let weak: Weak<Buffer> = Arc::downgrade(&x);
    exec.launch(&setup.stream).unwrap();
    drop(exec); // with the replay still spinning
    drop(x);
    assert!(
        weak.upgrade().is_some(),
        "the buffer outlives the replay in flight"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 0, "so does the closure");
    setup.stream.sync().unwrap();
    assert_eq!(out.as_host_slice::<i32>().unwrap(), [42]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    eventually("dropping the buffer", || weak.upgrade().is_none());
    eventually("dropping the closure", || drops.load(Ordering::SeqCst) == 1);
}

fn graphs_keep_buffers_kernels_and_closures_alive() {
    let setup = setup();
    let x = setup.ints(1);
    let weak = Arc::downgrade(&x);
    let drops = Arc::new(AtomicUsize::new(0));
    let sentinel = Sentinel(drops.clone());
    let mut graph = Graph::new(&setup.context).unwrap();
    {
        // Code loaded for this graph only: the graph keeps it loaded.
        let code = compile(SOURCE);
        let add = code.get_kernel("add").unwrap();
        // SAFETY: add updates the one int of `x`, an `Arc<Buffer>` the graph keeps.
        unsafe { graph.add_kernel(&[], &setup.one, &add, (x.clone(), 1i32)) }.unwrap();
    }
    graph
        .add_host(&[], move || {
            let _held = &sentinel;
        })
        .unwrap();
    let observed = Arc::clone(&x);
    drop(x);
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&observed), [3]);
    drop(observed);
    assert!(weak.upgrade().is_some(), "kept by the executable");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    exec.close().unwrap();
    eventually("dropping the buffer", || weak.upgrade().is_none());
    eventually("dropping the closure", || drops.load(Ordering::SeqCst) == 1);

    // A graph dropped before any executable releases them too.
    let y = setup.ints(1);
    let weak = Arc::downgrade(&y);
    let mut unused = Graph::new(&setup.context).unwrap();
    unused.add_memset(&[], &y, 1u32).unwrap();
    drop(y);
    assert!(weak.upgrade().is_some());
    drop(unused);
    eventually("dropping an unused graph's buffer", || {
        weak.upgrade().is_none()
    });
    assert!(setup.device.sync().is_ok());
}

fn main() -> std::process::ExitCode {
    gpu_tests![
        kernel_nodes_run_with_checked_typed_arguments,
        memset_and_memcpy_nodes_fill_and_copy_buffers,
        host_nodes_run_once_per_replay_after_their_dependencies,
        event_record_and_wait_nodes_order_two_graphs_on_two_streams,
        allocation_nodes_give_memory_between_their_allocation_and_free,
        child_graphs_and_empty_nodes_split_and_join,
        dependencies_added_later_order_nodes,
        graphs_are_written_as_dot,
        capture_in_thread_local_and_relaxed_mode_records_launches,
        capture_in_global_mode_records_launches,
        capture_modes_forbid_unsafe_calls_where_documented,
        illegal_work_during_capture_is_explained_and_the_stream_recovers,
        capture_across_forked_streams_joins_into_one_graph,
        captured_kernel_nodes_are_updated_without_instantiating_again,
        host_functions_are_refused_on_a_capturing_stream,
        conditional_if_runs_its_body_when_a_kernel_sets_the_handle,
        conditional_if_else_runs_one_of_two_bodies,
        conditional_while_loops_until_a_kernel_of_its_captured_body_clears_the_handle,
        conditional_switch_runs_the_case_of_the_value,
        whole_graph_updates_are_applied_or_refused_with_the_reason,
        kernel_node_arguments_are_updated_in_the_executable,
        nodes_are_disabled_and_enabled,
        stream_host_functions_run_once_in_stream_order,
        a_panicking_stream_host_function_is_reported_by_the_next_call,
        a_panicking_host_node_is_reported_by_the_next_launch,
        host_callbacks_cannot_call_cuda_in_debug_builds,
        dropping_the_graph_while_a_replay_is_in_flight_keeps_what_it_uses,
        graphs_keep_buffers_kernels_and_closures_alive
    ]
}
