//! Loading and launching on a real GPU: ObjectCode, Kernel, LaunchConfig and launch.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    CodeKind, Device, DeviceMemoryResource, Dim3, Error, Kernel, LaunchConfig, ObjectCode, Program,
    ProgramOptions, Stream, StreamOptions, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void empty() {}
extern "C" __global__ void cluster_rank(unsigned* out) {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) out[blockIdx.x] = rank;
}
struct Pair { int a; double b; };
extern "C" __global__ void sum_pair(Pair p, double* out) { *out = p.a + p.b; }
template <typename T> __global__ void fill(T* out, T value, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"#;

#[repr(C)]
#[derive(Clone, Copy)]
struct Pair {
    a: i32,
    b: f64,
}

// SAFETY: `#[repr(C)]` with the C++ struct's fields in order, so the same layout (16 bytes).
unsafe impl cuda_safe::DeviceRepr for Pair {}

struct Setup {
    device: Device,
    stream: Stream,
    pool: DeviceMemoryResource,
    code: ObjectCode,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let mut program = Program::new(SOURCE, ProgramOptions::default()).unwrap();
    program.add_name_expression("fill<float>").unwrap();
    program.add_name_expression("fill<int>").unwrap();
    let compiled = program.compile(CodeKind::Cubin).unwrap();
    let code = compiled.load().unwrap();
    Setup {
        device,
        stream,
        pool,
        code,
    }
}

fn random_floats(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

/// Runs SAXPY on `n` random elements on `stream` and checks every result against the CPU.
fn saxpy_matches_cpu(setup: &Setup, kernel: &Kernel, stream: &Stream, n: usize, seed: u64) {
    let (x_host, y_host) = (random_floats(n, seed), random_floats(n, seed + 1));
    let mut x = setup.pool.allocate(n * 4, stream).unwrap();
    let mut y = setup.pool.allocate(n * 4, stream).unwrap();
    let mut out = setup.pool.allocate(n * 4, stream).unwrap();
    x.copy_from_host(&x_host).unwrap();
    y.copy_from_host(&y_host).unwrap();
    out.fill::<u32>(0x7fc0_0000).unwrap(); // poison: NaN
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: saxpy reads n floats of x and y and writes n floats of out; all hold n floats.
    unsafe { launch(stream, &config, kernel, (2.5f32, &x, &y, &mut out, n)).unwrap() };
    let result: Vec<f32> = out.to_vec().unwrap();
    for i in 0..n {
        let expected = 2.5 * x_host[i] + y_host[i];
        assert!(
            (result[i] - expected).abs() <= 1e-6,
            "element {i}: {} vs {expected}",
            result[i]
        );
    }
}

fn saxpy_matches_the_cpu_on_random_data() {
    let setup = setup();
    let kernel = setup.code.get_kernel("saxpy").unwrap();
    for (i, n) in [1usize, 255, 256, 257, 1 << 20, 10_000_019]
        .into_iter()
        .enumerate()
    {
        saxpy_matches_cpu(&setup, &kernel, &setup.stream, n, 7 + i as u64);
    }
}

fn kernels_report_parameters_and_attributes() {
    let setup = setup();
    let kernel = setup.code.get_kernel("saxpy").unwrap();
    let sizes: Vec<usize> = kernel.params().unwrap().iter().map(|p| p.size).collect();
    assert_eq!(sizes, [4, 8, 8, 8, 8]);
    assert_eq!(kernel.param_count(), Some(5));
    assert_eq!(kernel.symbol().unwrap(), "saxpy");
    let attributes = kernel.attributes(&setup.device).unwrap();
    println!("saxpy: {attributes:?}");
    assert!(attributes.num_regs > 0);
    assert_eq!(attributes.max_threads_per_block, 1024);
    let (major, minor) = setup.device.compute_capability().unwrap();
    assert_eq!(attributes.binary_version, major * 10 + minor);
    let empty = setup.code.get_kernel("empty").unwrap();
    assert_eq!(empty.param_count(), Some(0));
    empty
        .set_max_dynamic_shared_memory(64 << 10, &setup.device)
        .unwrap();
    assert_eq!(
        empty
            .attributes(&setup.device)
            .unwrap()
            .max_dynamic_shared_size_bytes,
        64 << 10
    );
}

fn occupancy_agrees_with_the_limits() {
    let setup = setup();
    let kernel = setup.code.get_kernel("saxpy").unwrap();
    let properties = setup.device.properties().unwrap();
    for block in [32u32, 128, 256, 1024] {
        let blocks = kernel
            .occupancy(&setup.device)
            .max_active_blocks_per_multiprocessor(block, 0)
            .unwrap();
        println!("block {block}: {blocks} resident blocks per SM");
        assert!(blocks >= 1);
        assert!(blocks * block <= properties.max_threads_per_multiprocessor);
        assert!(blocks <= properties.max_blocks_per_multiprocessor);
    }
    let (min_grid, block) = kernel
        .occupancy(&setup.device)
        .max_potential_block_size(0)
        .unwrap();
    println!("best block {block}, min grid {min_grid}");
    assert!((32..=1024).contains(&block));
    let per_sm = kernel
        .occupancy(&setup.device)
        .max_active_blocks_per_multiprocessor(block, 0)
        .unwrap();
    assert_eq!(min_grid, per_sm * properties.multiprocessor_count);
}

fn bad_launches_are_errors_and_the_gpu_stays_usable() {
    let setup = setup();
    let missing = setup.code.get_kernel("no_such_kernel").unwrap_err();
    println!("wrong name: {missing}");
    assert!(missing.cuda_code().is_some());
    let kernel = setup.code.get_kernel("saxpy").unwrap();
    let stream = &setup.stream;
    let (x, y) = (
        setup.pool.allocate(16, stream).unwrap(),
        setup.pool.allocate(16, stream).unwrap(),
    );
    let mut out = setup.pool.allocate(16, stream).unwrap();
    let config = LaunchConfig::new(1, 4);
    // SAFETY: refused before the driver: one argument short.
    let too_few = unsafe { launch(stream, &config, &kernel, (1f32, &x, &y, &mut out)) };
    let message = too_few.unwrap_err().to_string();
    assert!(
        message.contains("takes 5 parameters, 4 arguments"),
        "{message}"
    );
    // SAFETY: refused before the driver: a double where the kernel takes a float.
    let wrong_size = unsafe { launch(stream, &config, &kernel, (1f64, &x, &y, &mut out, 4usize)) };
    let message = wrong_size.unwrap_err().to_string();
    assert!(
        message.contains("parameter 0 of kernel `saxpy` is 4 bytes"),
        "{message}"
    );
    // SAFETY: refused before the driver: a u32 where the kernel takes a size_t.
    let narrow_n = unsafe { launch(stream, &config, &kernel, (1f32, &x, &y, &mut out, 4u32)) };
    assert!(narrow_n.unwrap_err().to_string().contains("parameter 4"));
    for bad in [
        LaunchConfig::new(1, 2048),
        LaunchConfig::new(0, 32),
        LaunchConfig::new(1, (32, 1, 128)),
        config.shared_mem(1 << 30),
    ] {
        // SAFETY: refused before the driver: the configuration is invalid.
        let error = unsafe { launch(stream, &bad, &kernel, (1f32, &x, &y, &mut out, 4usize)) };
        assert!(
            matches!(error, Err(Error::InvalidArgument(_))),
            "{bad:?}: {error:?}"
        );
    }
    // A launch the driver refuses (more shared memory than the kernel allows without opting
    // in): the error says which limit and how to raise it.
    let too_much = config.shared_mem(200 << 10);
    // SAFETY: the driver refuses the launch; nothing runs.
    let refused = unsafe { launch(stream, &too_much, &kernel, (1f32, &x, &y, &mut out, 4usize)) };
    println!("driver refusal: {refused:?}");
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("set_max_dynamic_shared_memory"),
        "{message}"
    );
    assert!(message.contains("CUDA_ERROR_INVALID_VALUE"), "{message}");
    // The GPU is still usable.
    saxpy_matches_cpu(&setup, &kernel, stream, 1000, 99);
}

fn one_library_runs_on_two_streams_and_two_threads() {
    let setup = setup();
    let kernel = setup.code.get_kernel("saxpy").unwrap();
    let second = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    saxpy_matches_cpu(&setup, &kernel, &setup.stream, 4096, 1);
    saxpy_matches_cpu(&setup, &kernel, &second, 4096, 2);
    let setup = std::sync::Arc::new(setup);
    let threads: Vec<_> = (0..2u64)
        .map(|i| {
            let setup = setup.clone();
            let kernel = kernel.clone();
            std::thread::spawn(move || {
                let stream = setup
                    .device
                    .create_stream(StreamOptions::default())
                    .unwrap();
                saxpy_matches_cpu(&setup, &kernel, &stream, 1 << 16, 10 + i);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

fn templates_structs_clusters_and_cooperative_launches() {
    let setup = setup();
    let stream = &setup.stream;
    let n = 1000usize;
    let config = LaunchConfig::for_num_elements(n, 128).unwrap();
    let mut floats = setup.pool.allocate(n * 4, stream).unwrap();
    let fill_float = setup.code.get_kernel("fill<float>").unwrap();
    // SAFETY: fill<float> writes n floats.
    unsafe { launch(stream, &config, &fill_float, (&mut floats, 0.25f32, n)).unwrap() };
    assert!(floats.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.25));
    let mut ints = setup.pool.allocate(n * 4, stream).unwrap();
    let fill_int = setup.code.get_kernel("fill<int>").unwrap();
    // SAFETY: fill<int> writes n ints.
    unsafe { launch(stream, &config, &fill_int, (&mut ints, -7i32, n)).unwrap() };
    assert!(ints.to_vec::<i32>().unwrap().iter().all(|&v| v == -7));

    let mut sum = setup.pool.allocate(8, stream).unwrap();
    let sum_pair = setup.code.get_kernel("sum_pair").unwrap();
    // SAFETY: sum_pair(Pair, double*) writes one double.
    unsafe {
        launch(
            stream,
            &LaunchConfig::new(1, 1),
            &sum_pair,
            (Pair { a: 2, b: 0.5 }, &mut sum),
        )
        .unwrap()
    };
    assert_eq!(sum.to_vec::<f64>().unwrap(), [2.5]);

    if setup.device.properties().unwrap().cluster_launch {
        let blocks = 8u32;
        let mut ranks = setup.pool.allocate(blocks as usize * 4, stream).unwrap();
        let kernel = setup.code.get_kernel("cluster_rank").unwrap();
        let clustered = LaunchConfig::new(blocks, 32).cluster(Dim3::from(4));
        // SAFETY: cluster_rank writes one unsigned per block.
        unsafe { launch(stream, &clustered, &kernel, (&mut ranks,)).unwrap() };
        assert_eq!(ranks.to_vec::<u32>().unwrap(), [0, 1, 2, 3, 0, 1, 2, 3]);
    }
    let empty = setup.code.get_kernel("empty").unwrap();
    let cooperative = LaunchConfig::new(4, 64).cooperative(true);
    // SAFETY: `empty` touches nothing.
    unsafe { launch(stream, &cooperative, &empty, ()).unwrap() };
    stream.sync().unwrap();
}

fn ptx_and_files_load_too() {
    let setup = setup();
    let program = Program::new(SOURCE, ProgramOptions::default()).unwrap();
    let ptx = program.compile(CodeKind::Ptx).unwrap();
    let from_ptx = ptx.load().unwrap();
    saxpy_matches_cpu(
        &setup,
        &from_ptx.get_kernel("saxpy").unwrap(),
        &setup.stream,
        513,
        3,
    );
    let cubin = program.compile(CodeKind::Cubin).unwrap();
    let path = std::env::temp_dir().join(format!("cuda-safe-test-{}.cubin", std::process::id()));
    std::fs::write(&path, cubin.bytes()).unwrap();
    let from_file = ObjectCode::from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    saxpy_matches_cpu(
        &setup,
        &from_file.get_kernel("saxpy").unwrap(),
        &setup.stream,
        513,
        4,
    );
    let lto = program.compile(CodeKind::LtoIr).unwrap();
    assert!(matches!(lto.load(), Err(Error::Unsupported { .. })));
    assert!(matches!(
        ObjectCode::from_cubin(&[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ObjectCode::from_cubin(b"not a cubin"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ObjectCode::from_fatbin(cubin.bytes()),
        Err(Error::InvalidArgument(_))
    ));
    // An ELF file that is no CUBIN (this test program) is refused before the driver sees it.
    let elf = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    match ObjectCode::from_cubin(&elf) {
        Err(Error::InvalidArgument(reason)) => assert!(reason.contains("not for CUDA"), "{reason}"),
        other => panic!("an x86-64 ELF was not refused: {other:?}"),
    }
    // Every truncation of a real CUBIN is refused too, from the slice's length: the driver
    // would have read past it.
    let bytes = cubin.bytes();
    for len in (0..bytes.len()).step_by(7) {
        assert!(
            matches!(
                ObjectCode::from_cubin(&bytes[..len]),
                Err(Error::InvalidArgument(_))
            ),
            "a CUBIN cut to {len} of {} bytes was accepted",
            bytes.len()
        );
    }
}

fn a_launch_on_another_stream_is_ordered_with_the_buffers_stream() {
    let setup = setup();
    let source = r#"extern "C" __global__ void slow_fill(float* out, float value, size_t n) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < 2000000);
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) out[i] = value;
    }"#;
    let compiled = Program::new(source, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    let code = compiled.load().unwrap();
    let slow_fill = code.get_kernel("slow_fill").unwrap();
    let other = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let n = 4096usize;
    // The buffer lives on `setup.stream`; the kernel (2 ms) runs on `other`.
    let mut out = setup.pool.allocate(n * 4, &setup.stream).unwrap();
    out.fill::<u32>(0).unwrap();
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: slow_fill writes n floats of `out`, which holds n.
    unsafe { launch(&other, &config, &slow_fill, (&mut out, 7.0f32, n)).unwrap() };
    // Read on the buffer's own stream: ordered after the kernel by the launch.
    assert!(out.to_vec::<f32>().unwrap().iter().all(|&v| v == 7.0));
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    saxpy_matches_the_cpu_on_random_data,
    kernels_report_parameters_and_attributes,
    occupancy_agrees_with_the_limits,
    bad_launches_are_errors_and_the_gpu_stays_usable,
    one_library_runs_on_two_streams_and_two_threads,
    templates_structs_clusters_and_cooperative_launches,
    ptx_and_files_load_too,
    a_launch_on_another_stream_is_ordered_with_the_buffers_stream,
];
