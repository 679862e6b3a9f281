//! The `tracing` spans: a subscriber that keeps every span opened (its name, and the `hit` a
//! cache lookup records), installed before anything runs. The slow paths open theirs; the
//! launch, copy, allocation and event paths open none.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use cuda_safe::cache::{InMemoryProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, Device, DeviceMemoryResource, EventOptions, GreenContextOptions, KernelCache,
    LaunchConfig, PoolOptions, Program, ProgramOptions, SplitRequest, launch,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{Interest, Subscriber};
use tracing::{Event, Metadata};

use super::stub::Stub;

/// Elements of the buffers the launch-path operations use.
const N: usize = 1024;

/// Every span opened since the last [`Recorder::take`]: its name and the `hit` recorded on it.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Each span's id, name and recorded `hit`.
    spans: Mutex<Vec<(u64, &'static str, Option<bool>)>>,
    next: AtomicU64,
}

impl Recorder {
    /// The spans opened since the last call, in order: each one's name and recorded `hit`.
    fn take(&self) -> Vec<(&'static str, Option<bool>)> {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        spans.drain(..).map(|(_, name, hit)| (name, hit)).collect()
    }
}

/// Finds the `hit` field among recorded values.
struct Hit(Option<bool>);

impl Visit for Hit {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "hit" {
            self.0 = Some(value);
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl Subscriber for &'static Recorder {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        spans.push((id, span.metadata().name(), None));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut hit = Hit(None);
        values.record(&mut hit);
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(value) = hit.0
            && let Some(entry) = spans.iter_mut().find(|(id, _, _)| *id == span.into_u64())
        {
            entry.2 = Some(value);
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Installs the recorder as the global subscriber (before any span's call site is reached).
pub fn install() -> &'static Recorder {
    let recorder: &'static Recorder = Box::leak(Box::default());
    tracing::subscriber::set_global_default(recorder).expect("no other subscriber");
    recorder
}

/// The names of `spans`.
fn names(spans: &[(&'static str, Option<bool>)]) -> Vec<&'static str> {
    spans.iter().map(|(name, _)| *name).collect()
}

/// Asserts that `spans` holds a span named `name` (with `hit` recorded as `hit`, if given).
fn expect(spans: &[(&'static str, Option<bool>)], name: &str, hit: Option<bool>) {
    assert!(
        spans
            .iter()
            .any(|(seen, recorded)| *seen == name && (hit.is_none() || *recorded == hit)),
        "no span {name} (hit {hit:?}) among {spans:?}"
    );
}

/// The slow paths open their spans; the hot paths open none.
pub fn check(stub: &Stub, recorder: &'static Recorder) {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    expect(&recorder.take(), "primary_context_retain", None);

    let options = ProgramOptions::default().arch("sm_90");
    let program = Program::new(
        "extern \"C\" __global__ void twice(float* x, size_t n) {}",
        options,
    )
    .unwrap();
    let kernel = program
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
        .get_kernel("twice")
        .unwrap();
    let spans = recorder.take();
    expect(&spans, "nvrtc_compile", None);
    expect(&spans, "module_load", None);

    let cache = InMemoryProgramCache::new(1 << 20);
    program.compile_cached(CodeKind::Cubin, &cache).unwrap();
    let spans = recorder.take();
    expect(&spans, "compile_cached", Some(false));
    expect(&spans, "cache_get", Some(false));
    expect(&spans, "cache_put", None);
    program.compile_cached(CodeKind::Cubin, &cache).unwrap();
    let spans = recorder.take();
    expect(&spans, "compile_cached", Some(true));
    expect(&spans, "cache_get", Some(true));
    assert!(cache.stats().unwrap().hits >= 1);

    let kernels = KernelCache::new(InMemoryProgramCache::new(1 << 20));
    kernels.kernel(&program, CodeKind::Cubin, "twice").unwrap();
    expect(&recorder.take(), "kernel_cache_get", None);

    let pool = DeviceMemoryResource::new_pool(&device, PoolOptions::default()).unwrap();
    expect(&recorder.take(), "pool_create", None);
    let split = device
        .resources()
        .sm()
        .unwrap()
        .split(&SplitRequest::equal(2, 64))
        .unwrap();
    let green = device
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .unwrap();
    expect(&recorder.take(), "green_context_create", None);
    drop(green);

    // The hot paths, after their first use (which may make a marker event).
    let other = device.create_stream(Default::default()).unwrap();
    let event = device.create_event(EventOptions::default()).unwrap();
    let config = LaunchConfig::for_num_elements(N, 256).unwrap();
    let host = vec![1.0f32; N];
    let mut x = pool.allocate_from_host(&host, &stream).unwrap();
    let y = pool.allocate_zeroed::<f32>(N, &other).unwrap();
    let mut hot = || {
        // SAFETY: the stub's `twice` doubles the N floats `x` holds.
        unsafe { launch(&stream, &config, &kernel, (&mut x, N)) }.unwrap();
        // SAFETY: as above; `y` lives on another stream, which the launch orders.
        unsafe { launch(&stream, &config, &kernel, (&y, N)) }.unwrap();
        event.record(&stream).unwrap();
        stream.wait(&event).unwrap();
        drop(pool.allocate(4 * N, &stream).unwrap());
        x.copy_from(&y).unwrap();
        x.copy_from_host(&host).unwrap();
        x.to_vec::<f32>().unwrap();
        stream.wait_stream(&other).unwrap();
    };
    hot();
    recorder.take();
    stub.take_log();
    for _ in 0..100 {
        hot();
    }
    let spans = recorder.take();
    assert!(
        spans.is_empty(),
        "spans opened on the launch, copy, allocation and event paths: {:?}",
        names(&spans)
    );
    println!(
        "ok   tracing: spans around compile, load, cache, pool and context creation; none in \
         100 rounds of launches, copies, allocations and events ({} driver calls)",
        stub.take_log().len()
    );
}
