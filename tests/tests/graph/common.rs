//! What the graph tests share: the kernels, the per-test [`Setup`] and the lock that keeps a
//! global-mode capture alone ([`CAPTURE_MODES`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use cuda_safe::{
    Buffer, CodeKind, Context, Device, DeviceMemoryResource, Kernel, LaunchConfig, ObjectCode,
    PinnedMemoryResource, Program, ProgramOptions, Stream, StreamOptions,
};
use cuda_sys::CudaVersion;

/// The kernels every test's [`Setup`] loads.
pub(crate) const SOURCE: &str = r#"
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

/// Held for reading by every test, for writing by those that capture in global mode.
static CAPTURE_MODES: RwLock<()> = RwLock::new(());

/// What a test runs on: device 0, its primary context, a stream, the memory pools, the
/// kernels of [`SOURCE`], and [`CAPTURE_MODES`] held for reading (unless [`setup_alone`]).
pub(crate) struct Setup {
    pub(crate) device: Device,
    pub(crate) context: Context,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
    pub(crate) pinned: PinnedMemoryResource,
    pub(crate) code: ObjectCode,
    pub(crate) one: LaunchConfig,
    _modes: Option<RwLockReadGuard<'static, ()>>,
}

impl Setup {
    pub(crate) fn kernel(&self, name: &str) -> Kernel {
        self.code.get_kernel(name).unwrap()
    }

    /// `n` zeroed ints on the setup's stream, shared (graphs keep `Arc<Buffer>`s alive).
    pub(crate) fn ints(&self, n: usize) -> Arc<Buffer> {
        Arc::new(self.pool.allocate_zeroed::<i32>(n, &self.stream).unwrap())
    }

    pub(crate) fn read(&self, buffer: &Buffer) -> Vec<i32> {
        self.stream.sync().unwrap();
        buffer.to_vec().unwrap()
    }
}

pub(crate) fn compile(source: &str) -> ObjectCode {
    Program::new(source, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
}

/// The setup of a test that captures in thread-local or relaxed mode, or not at all.
pub(crate) fn setup() -> Setup {
    let guard = CAPTURE_MODES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    setup_with(Some(guard))
}

/// The setup of a test that captures in global mode: it holds [`CAPTURE_MODES`] for writing.
pub(crate) fn setup_alone() -> (Setup, RwLockWriteGuard<'static, ()>) {
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
pub(crate) fn eventually(what: &str, done: impl Fn() -> bool) {
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
pub(crate) struct Sentinel(pub(crate) Arc<AtomicUsize>);

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub(crate) fn driver_version() -> CudaVersion {
    cuda_safe::cuda_driver_version().unwrap()
}
