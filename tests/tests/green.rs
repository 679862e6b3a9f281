//! Green contexts on a real GPU: SM queries, every split shape, errors for impossible ones,
//! disjoint partitions (checked with the SM ids kernels run on), streams, threads, closing.

use std::collections::BTreeSet;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    CodeKind, Context, Device, Error, GreenContextOptions, Kernel, LaunchConfig, Program,
    ProgramOptions, SplitRequest, StreamOptions, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void sm_ids(unsigned* out) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    if (threadIdx.x == 0) out[blockIdx.x] = id;
    // Stay a while, so the blocks spread over every SM the context may use.
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < 20000);
}
extern "C" __global__ void axpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn kernels() -> (Kernel, Kernel) {
    let compiled = Program::new(SOURCE, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    let code = compiled.load().unwrap();
    (
        code.get_kernel("sm_ids").unwrap(),
        code.get_kernel("axpy").unwrap(),
    )
}

/// The SM ids that 8 blocks per SM of `sm_ids` ran on in `context`.
fn sm_ids_used(device: &Device, context: &Context, kernel: &Kernel, sms: u32) -> BTreeSet<u32> {
    let stream = context.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let blocks = sms * 8;
    let mut ids = pool.allocate(blocks as usize * 4, &stream).unwrap();
    // SAFETY: sm_ids writes one unsigned per block, which the buffer holds.
    unsafe { launch(&stream, &LaunchConfig::new(blocks, 64), kernel, (&mut ids,)).unwrap() };
    ids.to_vec::<u32>().unwrap().into_iter().collect()
}

fn the_sm_resource_and_its_rules() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let sms = device.properties().unwrap().multiprocessor_count;
    let rules = all.rules().unwrap();
    println!("{} SMs, {rules:?}", all.sm_count());
    assert_eq!(all.sm_count(), sms);
    let (major, _) = device.compute_capability().unwrap();
    if major >= 9 {
        assert_eq!((rules.min_partition_size, rules.alignment), (8, 8));
    }
    if device.name().unwrap().contains("H200") {
        assert_eq!(all.sm_count(), 132);
    }
    let primary = device.context().unwrap();
    assert_eq!(primary.resources().sm().unwrap().sm_count(), sms);
}

fn every_equal_split_that_fits_is_exact_and_the_others_say_why() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let total = all.sm_count();
    let rules = all.rules().unwrap();
    let (mut fitted, mut refused) = (0, Vec::new());
    let mut size = rules.min_partition_size;
    while size <= total {
        for groups in 1..=total / size {
            let request = SplitRequest::equal(groups, size);
            // The dry run and the split agree, shape by shape.
            match (all.plan(&request), all.split(&request)) {
                (Ok(plan), Ok(split)) => {
                    assert_eq!(split.groups.len() as u32, groups, "{groups} x {size}");
                    assert!(split.groups.iter().all(|group| group.sm_count() == size));
                    assert_eq!(groups * size + split.remainder.sm_count(), total);
                    assert_eq!(plan.remainder, split.remainder.sm_count());
                    fitted += 1;
                }
                (Err(planned), Err(Error::InvalidArgument(why))) => {
                    assert_eq!(planned.to_string(), format!("invalid argument: {why}"));
                    assert!(why.contains("x ") && why.contains("left"), "{why}");
                    refused.push(format!("{groups} x {size}"));
                }
                (plan, split) => panic!("{groups} x {size}: plan {plan:?}, split {split:?}"),
            }
        }
        size += rules.alignment;
    }
    println!("{fitted} shapes split exactly; refused by the hardware's layout: {refused:?}");
    assert!(fitted > 0);
    if device.name().unwrap().contains("H200") {
        assert!(all.split(&SplitRequest::equal(2, 64)).is_ok());
        assert!(all.split(&SplitRequest::equal(15, 8)).is_ok());
    }
}

fn impossible_splits_say_what_the_hardware_can_give() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let total = all.sm_count();
    let half = total / 2;
    let rules = all.rules().unwrap();
    if rules.allows(half) {
        println!("half of {total} SMs is a valid group here; nothing to refuse");
    } else {
        let error = all.split(&SplitRequest::equal(2, half)).unwrap_err();
        println!("{error}");
        let can = rules.round_down(half).unwrap();
        let expected = format!("can give 2 x {can} with {} left", total - 2 * can);
        assert!(error.to_string().contains(&expected), "{error}");
        let rounded = all
            .split(&SplitRequest::equal(2, half).rounding(true))
            .unwrap();
        assert_eq!(rounded.groups.len(), 2, "never fewer groups than asked");
        assert!(rounded.groups.iter().all(|group| group.sm_count() == can));
    }
    let too_many = all.split(&SplitRequest::equal(total / 8 + 1, 8));
    assert!(matches!(too_many, Err(Error::InvalidArgument(_))));
    let too_small = all.split(&SplitRequest::equal(1, rules.min_partition_size - 1));
    assert!(rules.min_partition_size == 1 || too_small.is_err());
    // Unequal groups need cuDevSmResourceSplit (CUDA 13.1): a typed error before that.
    let unequal = all.split(&SplitRequest::counts([2 * 32, 32]));
    let version = cuda_safe::cuda_driver_version().unwrap();
    println!("unequal split on a CUDA {version} driver: {unequal:?}");
    // The dry run never promises what the split cannot do.
    let planned = all.plan(&SplitRequest::counts([2 * 32, 32]));
    assert_eq!(
        planned.is_ok(),
        unequal.is_ok(),
        "the dry run said {planned:?}, the split {unequal:?}"
    );
    if cuda_safe::sys::ABI_MAJOR < 13 || version.0 < 13010 {
        assert!(
            matches!(unequal, Err(Error::Unsupported { .. })),
            "{unequal:?}"
        );
    } else {
        let split = unequal.unwrap();
        assert_eq!(
            (split.groups[0].sm_count(), split.groups[1].sm_count()),
            (64, 32)
        );
    }
    let workqueues = device.resources().workqueue_config();
    if cuda_safe::sys::ABI_MAJOR < 13 || version.0 < 13010 {
        assert!(
            matches!(workqueues, Err(Error::Unsupported { .. })),
            "{workqueues:?}"
        );
    }
}

fn green_contexts_own_disjoint_sms_and_report_them() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let all = device.resources().sm().unwrap();
    let split = all
        .split(&SplitRequest::equal(2, all.sm_count() / 2).rounding(true))
        .unwrap();
    let size = split.groups[0].sm_count();
    let a = device
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .unwrap();
    let b = device
        .create_green_context(&split.groups[1], GreenContextOptions::default())
        .unwrap();
    assert!(a.is_green() && b.is_green());
    assert_eq!(
        (a.green_sm_count(), b.green_sm_count()),
        (Some(size), Some(size))
    );
    assert_eq!(a.resources().sm().unwrap().sm_count(), size);
    assert!(a.as_raw_green().is_some() && device.context().unwrap().as_raw_green().is_none());
    let (sm_ids, _) = kernels();
    let (ids_a, ids_b) = (
        sm_ids_used(&device, &a, &sm_ids, size),
        sm_ids_used(&device, &b, &sm_ids, size),
    );
    println!("context A ran on {} SMs, B on {}", ids_a.len(), ids_b.len());
    assert!(
        ids_a.is_disjoint(&ids_b),
        "partitions overlap: {ids_a:?} / {ids_b:?}"
    );
    assert!(ids_a.len() as u32 <= size && ids_b.len() as u32 <= size);
    let blocking = a.create_stream(StreamOptions::default().non_blocking(false));
    assert!(matches!(blocking, Err(Error::InvalidArgument(_))));
}

fn one_kernel_runs_in_two_green_contexts_from_two_threads() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let split = all
        .split(&SplitRequest::equal(2, all.sm_count() / 2).rounding(true))
        .unwrap();
    let contexts: Vec<Context> = split
        .groups
        .iter()
        .map(|group| {
            device
                .create_green_context(group, GreenContextOptions::default())
                .unwrap()
        })
        .collect();
    let (_, axpy) = kernels();
    let n = 1 << 22;
    std::thread::scope(|scope| {
        for (i, context) in contexts.iter().enumerate() {
            let axpy = &axpy;
            scope.spawn(move || {
                let stream = context.create_stream(StreamOptions::default()).unwrap();
                let pool = device.default_memory_resource().unwrap();
                let mut x = pool.allocate(n * 4, &stream).unwrap();
                let mut y = pool.allocate(n * 4, &stream).unwrap();
                x.copy_from_host(&vec![2.0f32; n]).unwrap();
                y.copy_from_host(&vec![1.0f32; n]).unwrap();
                let alpha = 3.0 + i as f32;
                let config = LaunchConfig::for_num_elements(n, 256).unwrap();
                // SAFETY: axpy reads n floats of x and updates n floats of y.
                unsafe { launch(&stream, &config, axpy, (alpha, &x, &mut y, n)).unwrap() };
                let expected = alpha * 2.0 + 1.0;
                assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == expected));
            });
        }
    });
}

fn closing_a_green_context_while_it_is_current() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let split = all
        .split(&SplitRequest::equal(1, all.rules().unwrap().alignment * 2))
        .unwrap();
    let green = device
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .unwrap();
    green.bind().unwrap();
    green.close().unwrap();
    let driver = cuda_safe::sys::driver().unwrap();
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { driver.cuCtxGetCurrent(&mut current) }.unwrap();
    assert!(current.is_null(), "the destroyed context is still current");
    device.set_current().unwrap();
    let primary = device.context().unwrap();
    let stream = primary.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let mut buffer = pool.allocate(64, &stream).unwrap();
    buffer.fill::<u8>(1).unwrap();
    assert_eq!(buffer.to_vec::<u8>().unwrap(), [1u8; 64]);
}

fn resources_keep_their_context_and_internal_calls_keep_the_current_context() {
    let device = Device::new(0).unwrap();
    let all = device.resources().sm().unwrap();
    let split = all
        .split(&SplitRequest::equal(1, all.rules().unwrap().alignment * 2))
        .unwrap();
    let green = device
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .unwrap();
    let size = split.groups[0].sm_count();
    let resources = green.resources();
    green.bind().unwrap();
    let raw_green = green.as_raw();
    // Creating a stream and an event on the primary context must not leave it current.
    let primary_stream = device.create_stream(StreamOptions::default()).unwrap();
    let _event = device.create_event(Default::default()).unwrap();
    let driver = cuda_safe::sys::driver().unwrap();
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { driver.cuCtxGetCurrent(&mut current) }.unwrap();
    assert_eq!(
        current, raw_green,
        "an internal call changed the current context"
    );
    drop(primary_stream);
    // The resources keep the green context alive after its last other handle is gone.
    drop(green);
    assert_eq!(resources.sm().unwrap().sm_count(), size);
    drop(resources);
    device.set_current().unwrap();
}

/// A buffer moved from a primary stream held busy (a host function waits for a gate) to
/// another stream of the primary context and to a green context's stream: the work queued
/// before the move is seen after it; moved off a finished stream, it is seen at once.
fn buffers_moved_off_busy_streams_see_the_work_queued_before() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let all = device.resources().sm().unwrap();
    let split = all.split(&SplitRequest::equal(1, all.sm_count() / 2).rounding(true));
    let green = device
        .create_green_context(&split.unwrap().groups[0], GreenContextOptions::default())
        .unwrap();
    let pool = device.default_memory_resource().unwrap();
    let busy = device.create_stream(StreamOptions::default()).unwrap();
    for (place, to) in [
        (
            "primary",
            device.create_stream(StreamOptions::default()).unwrap(),
        ),
        (
            "green",
            green.create_stream(StreamOptions::default()).unwrap(),
        ),
    ] {
        let mut buffer = pool.allocate(16 << 20, &busy).unwrap();
        buffer.fill::<u32>(1).unwrap();
        busy.sync().unwrap();
        let (open, gate) = std::sync::mpsc::channel::<()>();
        busy.launch_host_func(move || {
            let _ = gate.recv();
        })
        .unwrap();
        buffer.fill::<u32>(7).unwrap();
        assert!(!busy.query().unwrap(), "{place}: the gate holds the fill");
        buffer.set_stream(&to).unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            open.send(()).unwrap();
        });
        let seen = buffer.to_vec::<u32>().unwrap();
        opener.join().unwrap();
        assert!(seen.iter().all(|&v| v == 7), "{place}: the fill was missed");
        buffer.fill::<u32>(3).unwrap();
        to.sync().unwrap();
        buffer.set_stream(&busy).unwrap();
        assert!(buffer.stream().same_as(&busy));
        assert!(
            buffer.to_vec::<u32>().unwrap().iter().all(|&v| v == 3),
            "{place}"
        );
    }
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    the_sm_resource_and_its_rules,
    every_equal_split_that_fits_is_exact_and_the_others_say_why,
    impossible_splits_say_what_the_hardware_can_give,
    green_contexts_own_disjoint_sms_and_report_them,
    one_kernel_runs_in_two_green_contexts_from_two_threads,
    closing_a_green_context_while_it_is_current,
    resources_keep_their_context_and_internal_calls_keep_the_current_context,
    buffers_moved_off_busy_streams_see_the_work_queued_before,
];
