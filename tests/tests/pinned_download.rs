//! Downloads into the caller's pinned memory (`BufferExt::download_into`) on a real GPU: the
//! values land in the block, which comes back for the next download; and a download dropped
//! while a late kernel holds its copy back, once plainly and once after its waker's drop
//! panicked, keeps its block until the copy has written it, so that a block allocated
//! meanwhile never receives the first buffer's values (run this binary under
//! `compute-sanitizer --tool memcheck` with the filter `dropped`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Wake, Waker};
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    Buffer, CodeKind, Device, Kernel, LaunchConfig, PinnedBlock, PinnedMemoryResource, Program,
    ProgramOptions, Stream, launch,
};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, PinnedDownload, Reactor};

/// How long the late kernel spins before it writes, in nanoseconds.
const LATE_NS: u64 = 200_000_000;

/// Words per buffer: 16 MiB, a copy long enough to overlap what follows it.
const WORDS: usize = 1 << 22;

const SOURCE: &str = r#"
extern "C" __global__ void late_fill(unsigned* y, unsigned value, size_t n, unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = value;
}
"#;

fn late_fill() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        Program::new(SOURCE, ProgramOptions::default())
            .and_then(|program| program.compile(CodeKind::Cubin))
            .and_then(|compiled| compiled.load())
            .and_then(|module| module.get_kernel("late_fill"))
            .expect("the test kernel compiles and loads")
    })
}

/// Fills `y` with `value` after spinning `ns` nanoseconds on the GPU.
fn late_fill_on(stream: &Stream, y: &mut Buffer, value: u32, ns: u64) {
    let n = y.len() / 4;
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: `y` holds `n` words, which the kernel writes.
    unsafe { launch(stream, &config, late_fill(), (y, value, n, ns)) }.unwrap();
}

fn device() -> Device {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    device
}

fn block_for(device: &Device, buffer: &Buffer) -> PinnedBlock {
    PinnedMemoryResource::new(device)
        .and_then(|pinned| pinned.allocate_block(buffer.len()))
        .unwrap()
}

fn values_land_in_the_block_and_it_comes_back() {
    let device = device();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let _reactor = Reactor::shared();
    let mut source = pool.allocate_array::<u32>(WORDS, &stream).unwrap();
    let mut block = block_for(&device, &source);
    for value in [3u32, 5] {
        late_fill_on(&stream, &mut source, value, 0);
        let values = pollster::block_on(source.download_into::<u32>(block)).unwrap();
        let wrong = values.iter().filter(|&&v| v != value).count();
        assert_eq!(wrong, 0, "{wrong} of {WORDS} values are not {value}");
        block = values.into_block();
    }
    assert_eq!(
        Reactor::shared().stats().staging_in_use,
        0,
        "a pinned download staged"
    );
}

/// A waker that panics when its last handle is dropped, once armed.
struct PanicsWhenDropped(Arc<AtomicBool>);

impl Wake for PanicsWhenDropped {
    fn wake(self: Arc<Self>) {}
}

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        assert!(!self.0.load(Ordering::SeqCst), "the waker's drop panics");
    }
}

fn poll(download: &mut PinnedDownload<u32>, waker: &Waker) -> bool {
    Pin::new(download)
        .poll(&mut TaskContext::from_waker(waker))
        .is_pending()
}

/// Drops a pinned download of a buffer a late kernel fills with 1 (after its waker's drop
/// panicked at a second poll when `panicking`), then downloads a buffer of 2s on another
/// stream into a block allocated after that drop: it must hold 2s only.
fn dropped_pinned_download(panicking: bool) {
    let device = device();
    let (s1, s2) = (
        device.create_stream(Default::default()).unwrap(),
        device.create_stream(Default::default()).unwrap(),
    );
    let pool = device.default_memory_resource().unwrap();
    let _reactor = Reactor::shared();
    completion::set_spin_budget(Duration::ZERO);
    let mut first = pool.allocate_array::<u32>(WORDS, &s1).unwrap();
    late_fill_on(&s1, &mut first, 1, LATE_NS);
    let mut download = first.download_into::<u32>(block_for(&device, &first));
    let armed = Arc::new(AtomicBool::new(false));
    let old = Waker::from(Arc::new(PanicsWhenDropped(armed.clone())));
    assert!(poll(&mut download, &old), "the copy waits for the kernel");
    if panicking {
        drop(old);
        armed.store(true, Ordering::SeqCst);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            poll(&mut download, Waker::noop())
        }));
        assert!(panicked.is_err(), "the replaced waker's drop panicked");
    }
    drop(download);
    let mut second = pool.allocate_array::<u32>(WORDS, &s2).unwrap();
    second.fill(2u32).unwrap();
    let other = second.download_into::<u32>(block_for(&device, &second));
    s1.sync().unwrap();
    let got = pollster::block_on(other).unwrap();
    let foreign = got.iter().filter(|&&v| v != 2).count();
    assert_eq!(
        foreign, 0,
        "{foreign} of {WORDS} values came from the first buffer"
    );
    drop((first, second));
    s2.sync().unwrap();
    completion::set_spin_budget(Duration::from_micros(20));
}

fn dropped_pinned_download_keeps_its_block() {
    dropped_pinned_download(false);
}

fn dropped_pinned_download_after_a_panicking_waker_keeps_its_block() {
    dropped_pinned_download(true);
}

pub(crate) const FILE: GpuFile = gpu_file![
    values_land_in_the_block_and_it_comes_back,
    dropped_pinned_download_keeps_its_block,
    dropped_pinned_download_after_a_panicking_waker_keeps_its_block,
];
