//! Completion futures on a real GPU: short waits on `pollster` and tokio's current-thread
//! runtime, many tasks on a multi-threaded tokio runtime, 10,000 futures over 64 streams of a
//! primary and a green context (in a child process, which also checks that the reactor thread
//! ends with its last handle and that the process exits while a dropped future's work still
//! runs), futures dropped while their memory is in use, one of them after its waker's drop
//! panicked (run this binary under `compute-sanitizer --tool memcheck` with the filter
//! `dropped`), a kernel fault as the
//! futures' error (in a child process: it breaks the context), graph launches, events on a
//! green context, a capturing stream refused, and (feature `nccl`) a collective.

use std::future::Future;
use std::pin::Pin;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    CaptureMode, CodeKind, Context, Device, Error, Graph, GreenContextOptions, Kernel,
    LaunchConfig, Program, ProgramOptions, Result, SplitRequest, Stream, launch,
};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Reactor};

/// The variable that makes this binary run one child scenario instead of the tests.
const CHILD_ENV: &str = "CUDA_SAFE_COMPLETION_CHILD";

const SOURCE: &str = r#"
__device__ void wait_ns(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
extern "C" __global__ void empty() {}
extern "C" __global__ void spin(unsigned long long ns) { wait_ns(ns); }
extern "C" __global__ void affine(const unsigned* x, unsigned* y, unsigned a, unsigned b, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
extern "C" __global__ void late_fill(unsigned* y, unsigned value, size_t n, unsigned long long ns) {
    wait_ns(ns);
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = value;
}
extern "C" __global__ void fault(unsigned* p) { p[threadIdx.x] = 1; }
"#;

struct Kernels {
    empty: Kernel,
    spin: Kernel,
    affine: Kernel,
    late_fill: Kernel,
    fault: Kernel,
}

fn kernels() -> &'static Kernels {
    static KERNELS: OnceLock<Kernels> = OnceLock::new();
    KERNELS.get_or_init(|| {
        let code = Program::new(SOURCE, ProgramOptions::default())
            .and_then(|program| program.compile(CodeKind::Cubin))
            .and_then(|compiled| compiled.load())
            .expect("the test kernels compile and load");
        let get = |name| code.get_kernel(name).expect("a test kernel");
        Kernels {
            empty: get("empty"),
            spin: get("spin"),
            affine: get("affine"),
            late_fill: get("late_fill"),
            fault: get("fault"),
        }
    })
}

fn one() -> LaunchConfig {
    LaunchConfig::new(1u32, 1u32)
}

fn spin_on(stream: &Stream, ns: u64) {
    // SAFETY: `spin` takes one 64-bit value and touches no memory.
    unsafe { launch(stream, &one(), &kernels().spin, (ns,)) }.unwrap();
}

/// `y = a * x + b` on `x`'s stream, for `n` words.
fn affine_on(stream: &Stream, x: &cuda_safe::Buffer, y: &mut cuda_safe::Buffer, a: u32, b: u32) {
    let n = x.len() / 4;
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: both buffers hold `n` words; the kernel reads x[0..n) and writes y[0..n).
    unsafe { launch(stream, &config, &kernels().affine, (x, y, a, b, n)) }.unwrap();
}

/// Fills `y` with `value` after spinning `ns` nanoseconds on the GPU.
fn late_fill_on(stream: &Stream, y: &mut cuda_safe::Buffer, value: u32, ns: u64) {
    let n = y.len() / 4;
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: `y` holds `n` words, which the kernel writes.
    unsafe { launch(stream, &config, &kernels().late_fill, (y, value, n, ns)) }.unwrap();
}

fn device() -> Device {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    device
}

/// A green context of half the SMs (rounded to the partition rules), and the primary context.
fn two_contexts(device: &Device) -> [Context; 2] {
    let all = device.resources().sm().unwrap();
    let rules = all.rules().unwrap();
    let half =
        (all.sm_count() / 2 / rules.alignment * rules.alignment).max(rules.min_partition_size);
    let split = all.split(&SplitRequest::equal(1, half)).unwrap();
    let green = device
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .unwrap();
    [device.context().unwrap(), green]
}

fn short_waits_resolve_on_pollster_and_tokio() {
    let device = device();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let _reactor = Reactor::shared();
    for _ in 0..100 {
        // SAFETY: `empty` takes nothing.
        unsafe { launch(&stream, &one(), &kernels().empty, ()) }.unwrap();
        pollster::block_on(stream.completion()).unwrap();
    }
    let mut x = pool.allocate_array::<u32>(4096, &stream).unwrap();
    let input: Vec<u32> = (0..4096).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let back = runtime.block_on(async {
        x.upload_async(&input).await.unwrap();
        let x = stream.completion_with(x).await.unwrap();
        x.to_vec_async::<u32>().await.unwrap()
    });
    assert_eq!(back, input);
}

fn many_tasks_on_tokio_get_their_results() {
    let device = device();
    let streams: Vec<Stream> = (0..16)
        .map(|_| device.create_stream(Default::default()).unwrap())
        .collect();
    let pool = device.default_memory_resource().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    let checked = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..512u32 {
            let (pool, stream) = (pool.clone(), streams[task as usize % 16].clone());
            tasks.spawn(async move {
                let input: Vec<u32> = (0..1024).map(|i| i ^ task).collect();
                let mut x = pool.allocate_array::<u32>(input.len(), &stream)?;
                let mut y = pool.allocate_array::<u32>(input.len(), &stream)?;
                x.upload_async(&input).await?;
                affine_on(&stream, &x, &mut y, 3, task);
                let out = y.to_vec_async::<u32>().await?;
                let expected = input.iter().map(|v| v.wrapping_mul(3).wrapping_add(task));
                Ok::<bool, Error>(out.into_iter().eq(expected))
            });
        }
        let mut checked = 0;
        while let Some(joined) = tasks.join_next().await {
            assert!(joined.unwrap().unwrap(), "a task got another result");
            checked += 1;
        }
        checked
    });
    assert_eq!(checked, 512);
}

/// Runs this binary as a child with `scenario`, expecting `CHILD OK` within `limit`.
fn run_child(scenario: &str, limit: Duration) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, scenario)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("the {scenario} child hung (more than {limit:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    println!("{out}");
    assert!(
        status.success() && out.contains("CHILD OK"),
        "the {scenario} child: {status}"
    );
    out
}

fn ten_thousand_futures_over_64_streams_and_two_contexts() {
    run_child("scale", Duration::from_secs(240));
}

/// The process's resident memory, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| {
            kb.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Whether a reactor thread shows in the process's threads.
fn reactor_thread_listed() -> bool {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .any(|name| name.trim() == "cuda-safe-compl")
}

type Check = Pin<Box<dyn Future<Output = Result<bool>> + Send>>;

fn child_scale() {
    const FUTURES: usize = 10_000;
    let device = device();
    let contexts = two_contexts(&device);
    let streams: Vec<Stream> = (0..64)
        .map(|i| contexts[i % 2].create_stream(Default::default()).unwrap())
        .collect();
    let pool = device.default_memory_resource().unwrap();
    let reactor = Reactor::shared();
    let before = rss();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let mut checks: Vec<Check> = Vec::with_capacity(FUTURES);
    for index in 0..FUTURES {
        let stream = &streams[index % 64];
        if index % (64 * 16) < 64 {
            spin_on(stream, 200_000);
        }
        let value = index as u32;
        checks.push(match index % 3 {
            0 => {
                let done = stream.completion();
                Box::pin(async move { done.await.map(|()| true) })
            }
            1 => {
                let mut buffer = pool.allocate_array::<u32>(64, stream).unwrap();
                buffer.fill(value).unwrap();
                let download = buffer.to_vec_async::<u32>();
                Box::pin(async move { Ok(download.await?.iter().all(|&v| v == value)) })
            }
            _ => {
                let kept = pool.allocate(256, stream).unwrap();
                let done = stream.completion_with(kept);
                Box::pin(async move { done.await.map(|kept| kept.len() == 256) })
            }
        });
    }
    let at_peak = reactor.stats();
    let checked = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for check in checks {
            tasks.spawn(check);
        }
        let mut checked = 0;
        let all = async {
            while let Some(joined) = tasks.join_next().await {
                assert!(
                    joined.unwrap().unwrap(),
                    "a future resolved to the wrong data"
                );
                checked += 1;
            }
        };
        tokio::time::timeout(Duration::from_secs(120), all)
            .await
            .expect("every future resolves");
        checked
    });
    assert_eq!(checked, FUTURES);
    let after = reactor.stats();
    println!(
        "FIG scale_10000_futures_rss_growth {:.1} MiB",
        (rss().saturating_sub(before)) as f64 / (1 << 20) as f64
    );
    println!("made: {at_peak:?}\nafter: {after:?}");
    assert!(after.slots <= FUTURES + 64 && after.staging_idle <= 64 << 20);
    drop(runtime);
    drop(reactor);
    drop((streams, pool, contexts));
    let start = Instant::now();
    while Reactor::is_running() || reactor_thread_listed() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the reactor thread did not end"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "the reactor thread ended {:?} after its last handle",
        start.elapsed()
    );
    // Exit while a dropped future's work still runs: nothing may hang the exit.
    let stream = device.create_stream(Default::default()).unwrap();
    spin_on(&stream, 500_000_000);
    let kept = device
        .default_memory_resource()
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    drop(stream.completion_with(kept));
    println!("CHILD OK");
}

fn dropped_in_flight_futures_keep_their_memory() {
    const LATE: u64 = 200_000_000;
    let device = device();
    let (s1, s2) = (
        device.create_stream(Default::default()).unwrap(),
        device.create_stream(Default::default()).unwrap(),
    );
    let pool = device.default_memory_resource().unwrap();
    let reactor = Reactor::shared();
    completion::set_spin_budget(Duration::ZERO);
    // A buffer a running kernel writes, moved into a completion dropped at once.
    let mut written = pool.allocate_array::<u32>(1 << 16, &s1).unwrap();
    late_fill_on(&s1, &mut written, 7, LATE);
    drop(s1.completion_with(written));
    // A download whose copy waits behind that kernel, dropped: its staging stays in use, and
    // the next download gets other memory and its own data.
    let mut late = pool.allocate_array::<u32>(1024, &s1).unwrap();
    late_fill_on(&s1, &mut late, 1, LATE);
    drop(late.to_vec_async::<u32>());
    let mut other = pool.allocate_array::<u32>(1024, &s2).unwrap();
    other.fill(2u32).unwrap();
    let got = pollster::block_on(other.to_vec_async::<u32>()).unwrap();
    assert!(
        got.iter().all(|&v| v == 2),
        "the second download saw the first's data"
    );
    assert!(
        reactor.stats().staging_in_use >= 4096,
        "the dropped download's staging went early"
    );
    // An upload dropped before its copy could run: the data still arrives.
    let mut uploaded = pool.allocate_array::<u32>(1024, &s1).unwrap();
    drop(uploaded.upload_async(&[9u32; 1024]));
    let mut polled = uploaded.to_vec_async::<u32>();
    let noop = &mut std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        Pin::new(&mut polled).poll(noop).is_pending(),
        "the copy waits for the kernels"
    );
    let back = pollster::block_on(polled).unwrap();
    assert!(
        back.iter().all(|&v| v == 9),
        "the dropped upload's data did not arrive"
    );
    drop((late, other, uploaded));
    s1.sync().unwrap();
    s2.sync().unwrap();
    completion::set_spin_budget(Duration::from_micros(20));
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

/// The aliasing issue 43 reported: a download polled again with another waker, whose
/// predecessor's drop panics, then dropped while a late kernel holds its copy back. Its staging
/// block must stay its own: a download of another buffer on another stream, read once the first
/// copy has landed, returns its own values, not the first buffer's.
fn dropped_download_after_a_panicking_waker_keeps_its_staging() {
    const LATE: u64 = 200_000_000;
    const N: usize = 1 << 22;
    let device = device();
    let (s1, s2) = (
        device.create_stream(Default::default()).unwrap(),
        device.create_stream(Default::default()).unwrap(),
    );
    let pool = device.default_memory_resource().unwrap();
    let _reactor = Reactor::shared();
    completion::set_spin_budget(Duration::ZERO);
    let mut first = pool.allocate_array::<u32>(N, &s1).unwrap();
    late_fill_on(&s1, &mut first, 1, LATE);
    let mut download = first.to_vec_async::<u32>();
    let armed = Arc::new(AtomicBool::new(false));
    let old = Waker::from(Arc::new(PanicsWhenDropped(armed.clone())));
    let poll = |download: &mut cuda_safe_async::Download<u32>, waker: &Waker| {
        Pin::new(download).poll(&mut std::task::Context::from_waker(waker))
    };
    assert!(poll(&mut download, &old).is_pending(), "the copy waits");
    drop(old);
    armed.store(true, Ordering::SeqCst);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(poll(&mut download, Waker::noop()));
    }));
    assert!(panicked.is_err(), "the replaced waker's drop panicked");
    drop(download);
    let mut second = pool.allocate_array::<u32>(N, &s2).unwrap();
    second.fill(2u32).unwrap();
    let other = second.to_vec_async::<u32>();
    s1.sync().unwrap();
    let got = pollster::block_on(other).unwrap();
    let foreign = got.iter().filter(|&&v| v != 2).count();
    assert_eq!(
        foreign, 0,
        "{foreign} of {N} values came from the first buffer"
    );
    drop((first, second));
    s2.sync().unwrap();
    completion::set_spin_budget(Duration::from_micros(20));
}

fn a_kernel_fault_is_the_futures_error() {
    let out = run_child("fault", Duration::from_secs(120));
    assert!(out.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{out}");
}

fn child_fault() {
    let device = device();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let x = pool.allocate_zeroed::<u32>(1024, &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: deliberately not: `fault` writes through an address no allocation holds.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new(1u32, 32u32),
            &kernels().fault,
            (16u64,),
        )
    }
    .unwrap();
    let error = pollster::block_on(stream.completion()).unwrap_err();
    println!("first poll: {error}");
    assert_eq!(
        error.cuda_code(),
        Some(cuda_safe::sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)
    );
    completion::set_spin_budget(Duration::ZERO);
    let error = pollster::block_on(x.to_vec_async::<u32>()).unwrap_err();
    println!("a download after it: {error}");
    assert_eq!(
        error.cuda_code(),
        Some(cuda_safe::sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)
    );
    println!("CHILD OK");
}

fn graph_launches_and_green_events_are_awaited() {
    let device = device();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let x = pool.allocate_from_host(&[5u32; 2048], &stream).unwrap();
    let mut y = pool.allocate_zeroed::<u32>(2048, &stream).unwrap();
    // SAFETY: both buffers outlive the executable; the kernel touches 2048 words of each.
    let graph = unsafe {
        Graph::capture(&stream, CaptureMode::ThreadLocal, |capture| {
            affine_on(capture.stream(), &x, &mut y, 2, 1);
            let refused = pollster::block_on(capture.stream().completion());
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{refused:?}"
            );
            Ok(())
        })
    }
    .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        pollster::block_on(exec.launch_async(&stream)).unwrap();
    }
    let out = pollster::block_on(y.to_vec_async::<u32>()).unwrap();
    assert!(out.iter().all(|&v| v == 11));
    let [_, green] = two_contexts(&device);
    let green_stream = green.create_stream(Default::default()).unwrap();
    let event = green.create_event(Default::default()).unwrap();
    spin_on(&green_stream, 2_000_000);
    green_stream.record(&event).unwrap();
    let event = pollster::block_on(event.into_completion()).unwrap();
    assert!(event.is_done().unwrap());
}

fn a_collective_is_awaited() {
    #[cfg(feature = "nccl")]
    {
        use cuda_safe_nccl::{Communicator, ReduceOp};
        let devices = Device::all().unwrap();
        let comms = Communicator::init_all(&devices).unwrap();
        let mut work = Vec::new();
        for device in &devices {
            let stream = device.create_stream(Default::default()).unwrap();
            let buffer = device
                .default_memory_resource()
                .unwrap()
                .allocate_from_host(&[1.0f32; 4096], &stream)
                .unwrap();
            work.push((stream, buffer));
        }
        cuda_safe_nccl::group(|group| {
            for (comm, (stream, buffer)) in comms.iter().zip(&mut work) {
                group.all_reduce_in_place::<f32>(comm, buffer, ReduceOp::Sum, stream)?;
            }
            Ok(())
        })
        .unwrap();
        for (comm, (stream, buffer)) in comms.iter().zip(&work) {
            pollster::block_on(comm.completion(stream)).unwrap();
            let sums = pollster::block_on(buffer.to_vec_async::<f32>()).unwrap();
            assert!(sums.iter().all(|&v| v == devices.len() as f32));
        }
    }
    #[cfg(not(feature = "nccl"))]
    println!("built without the nccl feature: nothing to await");
}

/// The child scenario this process was started for, when `CUDA_SAFE_COMPLETION_CHILD` names
/// one: run here, before the harness.
pub(crate) fn child_part() -> Option<ExitCode> {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("scale") => child_scale(),
        Ok("fault") => child_fault(),
        _ => return None,
    }
    Some(ExitCode::SUCCESS)
}

pub(crate) const FILE: GpuFile = gpu_file![
    short_waits_resolve_on_pollster_and_tokio,
    many_tasks_on_tokio_get_their_results,
    ten_thousand_futures_over_64_streams_and_two_contexts,
    dropped_in_flight_futures_keep_their_memory,
    dropped_download_after_a_panicking_waker_keeps_its_staging,
    a_kernel_fault_is_the_futures_error,
    graph_launches_and_green_events_are_awaited,
    a_collective_is_awaited,
];
