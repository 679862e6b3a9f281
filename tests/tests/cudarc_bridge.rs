//! The bridge to cudarc on a real GPU: cudarc streams and slices used here without a copy, this
//! crate's streams and buffers lent to cudarc, and the ordering both ways: cudarc's event
//! tracking across its streams, this crate's streams where cudarc tracks nothing, and a lent
//! buffer's stream after cudarc's work. Each ordering test queues the first writer behind a
//! 20 ms spin, so a missing wait shows as wrong data.

use std::sync::Arc;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::cudarc_bridge::{view, view_mut};
use cuda_safe::{CodeKind, Device, Error, Kernel, LaunchConfig, Program, ProgramOptions, Stream};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};

const SOURCE: &str = r#"
extern "C" __global__ void twice(float* x, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
extern "C" __global__ void spin_fill(float* x, float value, unsigned long long n,
                                     unsigned long long ns) {
    unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}
extern "C" __global__ void copy(const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"#;

/// Elements of every slice.
const N: usize = 1 << 16;
/// How long the first writer spins before writing.
const SPIN_NS: u64 = 20_000_000;

struct Kernels {
    twice: Kernel,
    spin_fill: Kernel,
    spin: Kernel,
    copy: Kernel,
}

fn kernels() -> Kernels {
    let code = Program::new(SOURCE, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap();
    Kernels {
        twice: code.get_kernel("twice").unwrap(),
        spin_fill: code.get_kernel("spin_fill").unwrap(),
        spin: code.get_kernel("spin").unwrap(),
        copy: code.get_kernel("copy").unwrap(),
    }
}

fn config() -> LaunchConfig {
    LaunchConfig::for_num_elements(N, 256).unwrap()
}

/// cudarc's handle to device 0's primary context, and a stream of its own (which turns its
/// event tracking on).
fn cudarc_stream() -> (Arc<CudaContext>, Arc<CudaStream>) {
    let context = CudaContext::new(0).unwrap();
    let stream = context.new_stream().unwrap();
    (context, stream)
}

/// Queues, on `stream`, a 20 ms spin and then `value` into every element of `slice` (through
/// an exclusive view, which records cudarc's write event on `stream`).
fn spin_fill(kernels: &Kernels, slice: &mut CudaSlice<f32>, stream: &Stream, value: f32) {
    let mut target = view_mut(slice, stream).unwrap();
    // SAFETY: spin_fill(float*, float, n, ns) writes the view's N floats.
    unsafe {
        cuda_safe::launch(
            stream,
            &config(),
            &kernels.spin_fill,
            (&mut *target, value, N as u64, SPIN_NS),
        )
    }
    .unwrap();
}

fn a_cudarc_stream_is_ours_and_kept_alive() {
    let (context, theirs) = cudarc_stream();
    let stream = Stream::from_cudarc(&theirs).unwrap();
    assert_eq!(stream.as_raw() as usize, theirs.cu_stream() as usize);
    assert_eq!(
        stream.context().as_raw() as usize,
        context.cu_ctx() as usize
    );
    assert_eq!(
        stream.context(),
        &Device::new(0).unwrap().context().unwrap(),
        "cudarc's CudaContext::new(0) is the primary context this crate retains"
    );
    assert_eq!(
        Arc::strong_count(&theirs),
        2,
        "the wrapper holds cudarc's Arc"
    );
    let clone = stream.clone();
    drop(stream);
    assert_eq!(Arc::strong_count(&theirs), 2, "a clone keeps it");
    assert!(std::ptr::eq(clone.cudarc().unwrap(), &*theirs));
    // SAFETY: the handle is cudarc's own Arc (from_cudarc), so no borrowing is involved.
    let back = unsafe { clone.to_cudarc(&context) }.unwrap();
    assert!(Arc::ptr_eq(&back, &theirs));
    drop(back);
    // cudarc's last handle gone: the wrapper keeps the stream usable.
    drop(theirs);
    let kernels = kernels();
    let mut buffer = Device::new(0)
        .unwrap()
        .default_memory_resource()
        .unwrap()
        .allocate_from_host(&vec![1.0f32; N], &clone)
        .unwrap();
    // SAFETY: twice(float*, n) doubles the buffer's N floats.
    unsafe { cuda_safe::launch(&clone, &config(), &kernels.twice, (&mut buffer, N as u64)) }
        .unwrap();
    assert!(buffer.to_vec::<f32>().unwrap().iter().all(|&x| x == 2.0));
}

fn our_kernel_runs_on_a_cudarc_slice() {
    let kernels = kernels();
    let (_context, theirs) = cudarc_stream();
    let stream = Stream::from_cudarc(&theirs).unwrap();
    let host: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut x = theirs.clone_htod(&host).unwrap();
    {
        let mut y = view_mut(&mut x, &stream).unwrap();
        assert_eq!(y.len(), N);
        // SAFETY: twice(float*, n) doubles the view's N floats.
        unsafe { cuda_safe::launch(&stream, &config(), &kernels.twice, (&mut *y, N as u64)) }
            .unwrap();
        y.close().unwrap();
    }
    let doubled = theirs.clone_dtoh(&x).unwrap();
    assert!(
        doubled
            .iter()
            .enumerate()
            .all(|(i, &v)| v == 2.0 * i as f32)
    );
    // A shared view reads it as a copy source: no copy of the slice itself is made.
    let seen = view(&x, &stream).unwrap();
    assert_eq!(seen.as_raw(), {
        let (ptr, _record) = cudarc::driver::DevicePtr::device_ptr(&x, &theirs);
        ptr
    });
    assert_eq!(seen.to_vec().unwrap(), doubled);
}

fn views_take_part_in_cudarc_event_tracking() {
    let kernels = kernels();
    let (context, first) = cudarc_stream();
    let second = context.new_stream().unwrap();
    assert!(context.is_managing_stream_synchronization());
    let (on_first, on_second) = (
        Stream::from_cudarc(&first).unwrap(),
        Stream::from_cudarc(&second).unwrap(),
    );
    let mut x = first.alloc_zeros::<f32>(N).unwrap();
    let mut y = first.alloc_zeros::<f32>(N).unwrap();
    first.synchronize().unwrap();
    // Our write on the first stream records x's write event there ...
    spin_fill(&kernels, &mut x, &on_first, 7.0);
    // ... which our read on the second stream waits for, through cudarc's events only.
    {
        let source = view(&x, &on_second).unwrap();
        let mut target = view_mut(&mut y, &on_second).unwrap();
        // SAFETY: copy(const float*, float*, n) copies the views' N floats.
        unsafe {
            cuda_safe::launch(
                &on_second,
                &config(),
                &kernels.copy,
                (&*source, &mut *target, N as u64),
            )
        }
        .unwrap();
    }
    // cudarc's own read on the first stream waits for our write on the second.
    let copied = first.clone_dtoh(&y).unwrap();
    assert!(
        copied.iter().all(|&v| v == 7.0),
        "the copy read x before it was written"
    );
    // cudarc's write then our read, across streams the other way.
    let mut z = second.alloc_zeros::<f32>(N).unwrap();
    spin_fill(&kernels, &mut z, &on_second, 3.0);
    let back = view(&z, &on_first).unwrap().to_vec().unwrap();
    assert!(back.iter().all(|&v| v == 3.0));
    context.check_err().unwrap();
}

fn without_cudarc_tracking_the_view_orders_the_streams() {
    let kernels = kernels();
    let context = CudaContext::new(0).unwrap();
    // SAFETY: the slices made below are ordered by the views (the subject of this test) and by
    // synchronizing before they are dropped.
    unsafe { context.disable_event_tracking() };
    let (first, second) = (context.new_stream().unwrap(), context.new_stream().unwrap());
    let (on_first, on_second) = (
        Stream::from_cudarc(&first).unwrap(),
        Stream::from_cudarc(&second).unwrap(),
    );
    let mut x = first.alloc_zeros::<f32>(N).unwrap();
    first.synchronize().unwrap();
    spin_fill(&kernels, &mut x, &on_first, 5.0);
    // No event to wait for: the view makes the second stream wait for x's stream.
    let seen = view(&x, &on_second).unwrap().to_vec().unwrap();
    assert!(
        seen.iter().all(|&v| v == 5.0),
        "the view read x before it was written"
    );
    first.synchronize().unwrap();
    second.synchronize().unwrap();
    context.check_err().unwrap();
}

fn our_stream_gets_a_cudarc_side() {
    let kernels = kernels();
    let device = Device::new(0).unwrap();
    let ours = device.create_stream(Default::default()).unwrap();
    let (context, theirs) = cudarc_stream();
    assert!(ours.cudarc().is_none());
    let error = view(&theirs.alloc_zeros::<f32>(N).unwrap(), &ours).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    let bridged = ours.with_cudarc(&context).unwrap();
    assert_eq!(bridged, ours);
    assert_eq!(
        bridged.cudarc().unwrap().cu_stream() as usize,
        ours.as_raw() as usize
    );
    let mut x = theirs.alloc_zeros::<f32>(N).unwrap();
    spin_fill(
        &kernels,
        &mut x,
        &Stream::from_cudarc(&theirs).unwrap(),
        4.0,
    );
    {
        let mut y = view_mut(&mut x, &bridged).unwrap();
        // SAFETY: twice(float*, n) doubles the view's N floats.
        unsafe { cuda_safe::launch(&bridged, &config(), &kernels.twice, (&mut *y, N as u64)) }
            .unwrap();
    }
    assert!(theirs.clone_dtoh(&x).unwrap().iter().all(|&v| v == 8.0));
    // Handed to cudarc: a borrowed handle, used while `ours` lives.
    // SAFETY: `ours` outlives `handle` and the slice made on it (both dropped first).
    let handle = unsafe { ours.to_cudarc(&context) }.unwrap();
    assert_eq!(handle.cu_stream() as usize, ours.as_raw() as usize);
    let made = handle.clone_htod(&vec![1.5f32; N]).unwrap();
    assert!(handle.clone_dtoh(&made).unwrap().iter().all(|&v| v == 1.5));
    drop(made);
    drop(handle);
    ours.sync().unwrap();
    context.check_err().unwrap();
}

fn a_lent_buffer_is_ordered_and_never_freed_by_cudarc() {
    let kernels = kernels();
    let device = Device::new(0).unwrap();
    let ours = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let (context, theirs) = cudarc_stream();
    let on_theirs = Stream::from_cudarc(&theirs).unwrap();
    let mut buffer = pool.allocate_zeroed::<f32>(N, &ours).unwrap();
    let address = buffer.as_raw();
    // Our slow write, then cudarc's read on its own stream: ordered after it.
    // SAFETY: spin_fill writes the buffer's N floats.
    unsafe {
        cuda_safe::launch(
            &ours,
            &config(),
            &kernels.spin_fill,
            (&mut buffer, 6.0f32, N as u64, SPIN_NS),
        )
    }
    .unwrap();
    {
        let lent = buffer.lend_to_cudarc::<f32>(&theirs).unwrap();
        assert_eq!(lent.len(), N);
        let read = theirs.clone_dtoh(&*lent).unwrap();
        assert!(
            read.iter().all(|&v| v == 6.0),
            "cudarc read before our write"
        );
    }
    // cudarc's slow write on its stream, handed back: our read waits for it.
    {
        let mut lent = buffer.lend_to_cudarc_mut::<f32>(&theirs).unwrap();
        // SAFETY: spin(ns) touches no memory.
        unsafe {
            cuda_safe::launch(
                &on_theirs,
                &LaunchConfig::for_num_elements(1, 1).unwrap(),
                &kernels.spin,
                (SPIN_NS,),
            )
        }
        .unwrap();
        theirs
            .memcpy_htod(&vec![9.0f32; N], &mut lent.view_mut())
            .unwrap();
        lent.close().unwrap();
    }
    assert!(buffer.to_vec::<f32>().unwrap().iter().all(|&v| v == 9.0));
    // Still ours: the memory was not freed by cudarc (same address, usable, freed once by us).
    assert_eq!(buffer.as_raw(), address);
    buffer.fill(1.0f32).unwrap();
    assert!(buffer.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
    buffer.close().unwrap();
    theirs.synchronize().unwrap();
    context.check_err().unwrap();
    // A lent view must hold whole, aligned elements.
    let odd = pool.allocate(6, &ours).unwrap();
    let error = odd.lend_to_cudarc::<f32>(&theirs).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

fn special_cudarc_streams_are_refused() {
    let context = CudaContext::new(0).unwrap();
    for stream in [context.default_stream(), context.per_thread_stream()] {
        let error = Stream::from_cudarc(&stream).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }
}

pub(crate) const FILE: GpuFile = gpu_file![
    a_cudarc_stream_is_ours_and_kept_alive,
    our_kernel_runs_on_a_cudarc_slice,
    views_take_part_in_cudarc_event_tracking,
    without_cudarc_tracking_the_view_orders_the_streams,
    our_stream_gets_a_cudarc_side,
    a_lent_buffer_is_ordered_and_never_freed_by_cudarc,
    special_cudarc_streams_are_refused
];
