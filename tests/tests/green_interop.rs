//! Green contexts beyond the crate's own on a real GPU: a green context and a stream made by raw
//! driver calls, as another library makes them, wrapped without ownership and used by the
//! crate's launches (results checked, blocks on the partition's SMs), then destroyed by the raw
//! calls once every wrapper is gone (a second destroy would fail: each must succeed); context
//! and green-context ids; a stream's SMs; and, on a driver older than CUDA 13.1 (the H200's
//! 13.0), the typed refusals of the 13.1 features.

use std::collections::BTreeSet;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::sys::{self, CUgreenCtx, CUresult, CUstream};
use cuda_safe::{
    CodeKind, Context, Device, Error, GroupLayout, Kernel, LaunchConfig, Program, ProgramOptions,
    SplitRequest, Stream, StreamOptions, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void axpy_on(float a, const float* x, float* y, size_t n, unsigned* sms) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    if (threadIdx.x == 0) sms[blockIdx.x] = id;
}
"#;

/// Elements of the AXPY.
const N: usize = 1 << 20;
/// Threads per block.
const BLOCK: u32 = 256;

fn kernel() -> Kernel {
    Program::new(SOURCE, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
        .get_kernel("axpy_on")
        .unwrap()
}

/// A raw call's result, which must be success.
fn ok(call: std::result::Result<CUresult, sys::LoadError>, what: &str) {
    assert_eq!(call.ok(), Some(CUresult::CUDA_SUCCESS), "{what}");
}

/// Half the device's SMs (rounded to the rules) as a green context made by raw driver calls, as
/// another library makes one, and a stream of it; the SM count.
fn raw_green(device: &Device) -> (CUgreenCtx, CUstream, u32) {
    let driver = sys::driver().unwrap();
    let all = device.resources().sm().unwrap();
    let split = all
        .split(&SplitRequest::equal(1, all.sm_count() / 2).rounding(true))
        .unwrap();
    let mut resource = *split.groups[0].as_raw();
    let (mut desc, mut green, mut stream) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: one initialised resource and a valid out-pointer.
    let made = unsafe { driver.cuDevResourceGenerateDesc(&mut desc, &mut resource, 1) };
    ok(made, "cuDevResourceGenerateDesc");
    let flags = sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0;
    // SAFETY: a descriptor just made, the device's handle and a valid out-pointer.
    let made = unsafe { driver.cuGreenCtxCreate(&mut green, desc, device.as_raw(), flags) };
    ok(made, "cuGreenCtxCreate");
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0;
    // SAFETY: a live green context and a valid out-pointer.
    let made = unsafe { driver.cuGreenCtxStreamCreate(&mut stream, green, flags, 0) };
    ok(made, "cuGreenCtxStreamCreate");
    (green, stream, split.groups[0].sm_count())
}

/// The other library's clean-up, each destroy once: it must succeed (a context or stream the
/// crate had destroyed already would fail here).
fn raw_destroy(green: CUgreenCtx, stream: CUstream) {
    let driver = sys::driver().unwrap();
    // SAFETY: the stream made by `raw_green`, destroyed once, here.
    ok(
        unsafe { driver.cuStreamDestroy_v2(stream) },
        "cuStreamDestroy",
    );
    // SAFETY: the green context made by `raw_green`, destroyed once, here.
    ok(
        unsafe { driver.cuGreenCtxDestroy(green) },
        "cuGreenCtxDestroy",
    );
}

/// Runs the AXPY on `stream` and checks every element; the SMs its blocks ran on.
fn axpy_checked(device: &Device, stream: &Stream, kernel: &Kernel, alpha: f32) -> BTreeSet<u32> {
    let pool = device.default_memory_resource().unwrap();
    let x_host: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
    let x = pool.allocate_from_host(&x_host, stream).unwrap();
    let mut y = pool.allocate_from_host(&vec![1.0f32; N], stream).unwrap();
    let config = LaunchConfig::for_num_elements(N, BLOCK).unwrap();
    let blocks = config.grid.x as usize;
    let mut sms = pool.allocate_array::<u32>(blocks, stream).unwrap();
    // SAFETY: axpy_on reads n floats of x, updates n floats of y and writes one unsigned per
    // block, which the buffers hold.
    unsafe { launch(stream, &config, kernel, (alpha, &x, &mut y, N, &mut sms)).unwrap() };
    let y = y.to_vec::<f32>().unwrap();
    for (i, (&got, &x)) in y.iter().zip(&x_host).enumerate() {
        assert_eq!(got, alpha * x + 1.0, "element {i}");
    }
    sms.to_vec::<u32>().unwrap().into_iter().collect()
}

fn a_green_context_made_outside_is_used_and_never_destroyed() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let kernel = kernel();
    let (green, raw_stream, sms) = raw_green(&device);
    {
        // SAFETY: `green` lives until `raw_destroy`, after every handle made here is gone.
        let context = unsafe { Context::from_raw_green(green, &device) }.unwrap();
        assert!(context.is_green() && !context.is_owned());
        assert_eq!(context.green_sm_count(), Some(sms));
        assert_eq!(context.resources().sm().unwrap().sm_count(), sms);
        let ours = context.create_stream(StreamOptions::default()).unwrap();
        // SAFETY: `raw_stream` is a stream of `green`, alive until `raw_destroy`.
        let theirs = unsafe { Stream::from_raw(raw_stream, &context) };
        // SAFETY: as above: the stream alone, its green context found from it.
        let handed = unsafe { Stream::from_raw_green(raw_stream, &device) }.unwrap();
        assert_eq!(handed.context(), &context);
        assert!(!handed.context().is_owned());
        let streams = [
            ("ours", &ours, 2.0),
            ("theirs", &theirs, 3.0),
            ("handed", &handed, 4.0),
        ];
        for (name, stream, alpha) in streams {
            let used = axpy_checked(&device, stream, &kernel, alpha);
            println!("{name}: blocks ran on {} SMs of {sms}", used.len());
            assert!(used.len() as u32 <= sms, "{name}: outside the partition");
        }
        context.sync().unwrap();
    }
    raw_destroy(green, raw_stream);
}

fn ids_are_stable_and_name_the_same_green_context() {
    let device = Device::new(0).unwrap();
    let primary = device.context().unwrap();
    let (green, raw_stream, _) = raw_green(&device);
    {
        // SAFETY: `green` lives until `raw_destroy`.
        let wrapped = unsafe { Context::from_raw_green(green, &device) }.unwrap();
        let (a, b) = (primary.id().unwrap(), wrapped.id().unwrap());
        println!("context ids: primary {a}, green {b}");
        assert_ne!(a, b);
        assert_eq!(primary.id().unwrap(), a);
        assert!(matches!(primary.green_id(), Ok(None)));
        match wrapped.green_id() {
            Ok(Some(id)) => {
                println!("green id {id}");
                sys::if_abi13! {
                    let mut raw = 0;
                    // SAFETY: a live green context and a valid out-pointer.
                    ok(unsafe { sys::driver().unwrap().cuGreenCtxGetId(green, &mut raw) }, "cuGreenCtxGetId");
                    assert_eq!(raw, id);
                }
            }
            Err(error @ Error::Unsupported { .. }) => {
                println!("green id: {error}");
                let version = cuda_safe::cuda_driver_version().unwrap();
                assert!(
                    cuda_safe::sys::ABI_MAJOR < 13 || version.0 < 12090,
                    "{error}"
                );
            }
            other => panic!("green id: {other:?}"),
        }
    }
    raw_destroy(green, raw_stream);
}

fn a_streams_sms_or_the_typed_refusal() {
    let device = Device::new(0).unwrap();
    let (green, raw_stream, sms) = raw_green(&device);
    {
        // SAFETY: `green` lives until `raw_destroy`.
        let context = unsafe { Context::from_raw_green(green, &device) }.unwrap();
        // SAFETY: as above, for `raw_stream`.
        let theirs = unsafe { Stream::from_raw(raw_stream, &context) };
        let primary = device.create_stream(StreamOptions::default()).unwrap();
        let version = cuda_safe::cuda_driver_version().unwrap();
        match (theirs.sm_resource(), primary.sm_resource()) {
            (Ok(part), Ok(whole)) => {
                assert_eq!(part.sm_count(), sms);
                assert_eq!(
                    whole.sm_count(),
                    device.resources().sm().unwrap().sm_count()
                );
            }
            (Err(error @ Error::Unsupported { .. }), _) => {
                println!("a stream's SMs on a CUDA {version} driver: {error}");
                assert!(
                    cuda_safe::sys::ABI_MAJOR < 13 || version.0 < 13010,
                    "{error}"
                );
            }
            other => panic!("a stream's SMs: {other:?}"),
        }
    }
    raw_destroy(green, raw_stream);
}

fn layouts_and_workqueues_or_the_typed_refusal() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let alignment = all.rules().unwrap().alignment;
    let backfill = GroupLayout::default().backfill(true);
    let odd = [alignment * 4 + 2, alignment * 2 + 2];
    let split = all.split(&SplitRequest::counts(odd).layout(backfill));
    let workqueue = device.resources().workqueue_config();
    let version = cuda_safe::cuda_driver_version().unwrap();
    println!("on a CUDA {version} driver: split {split:?}, workqueue {workqueue:?}");
    if cuda_safe::sys::ABI_MAJOR < 13 || version.0 < 13010 {
        assert!(matches!(split, Err(Error::Unsupported { .. })), "{split:?}");
        assert!(
            matches!(workqueue, Err(Error::Unsupported { .. })),
            "{workqueue:?}"
        );
    } else {
        let counts: Vec<u32> = split.unwrap().groups.iter().map(|g| g.sm_count()).collect();
        assert_eq!(counts, odd);
        assert!(workqueue.unwrap().concurrency_limit() > 0);
    }
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    a_green_context_made_outside_is_used_and_never_destroyed,
    ids_are_stable_and_name_the_same_green_context,
    a_streams_sms_or_the_typed_refusal,
    layouts_and_workqueues_or_the_typed_refusal,
];
