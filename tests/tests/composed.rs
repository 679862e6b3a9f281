//! Composed operations on a stream pool, on a real GPU: 256 tokio tasks each running an
//! upload, a launch and a download on a pool of 4 streams (round robin and least busy), every
//! result checked; one dropped in flight (run under `compute-sanitizer --tool memcheck` with
//! the filter `composed`); and a composed launch chain captured into a graph and replayed.

use std::future::Future;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, CodeKind, Device, Kernel, LaunchConfig, Program, ProgramOptions};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{PoolOptions, PoolPolicy, StreamPool, op};

const SOURCE: &str = r#"
extern "C" __global__ void affine(unsigned* x, unsigned a, unsigned b, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"#;

/// Words per request.
const N: usize = 4096;

fn kernel(name: &str) -> Kernel {
    Program::new(SOURCE, ProgramOptions::default())
        .and_then(|program| program.compile(CodeKind::Cubin))
        .and_then(|code| code.load())
        .and_then(|module| module.get_kernel(name))
        .expect("the test kernels compile and load")
}

/// `x[i] = a * x[i] + b` on the operation's stream.
fn affine(x: Buffer, kernel: Kernel, a: u32, b: u32) -> impl DeviceOp<Output = Buffer> {
    op::on_stream(x, move |x, s| {
        let config = LaunchConfig::for_num_elements(N, 256)?;
        // SAFETY: affine(unsigned*, unsigned, unsigned, size_t) updates `N` words, which the
        // buffer holds.
        unsafe { s.launch(&config, &kernel, (&mut *x, a, b, N)) }
    })
}

fn requests_on_a_pool_get_their_results() {
    let device = Device::new(0).unwrap();
    let context = device.context().unwrap();
    let memory = device.default_memory_resource().unwrap();
    let kernel = kernel("affine");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    for policy in [PoolPolicy::RoundRobin, PoolPolicy::LeastBusy] {
        let options = PoolOptions::default().policy(policy);
        let pool = StreamPool::new(&context, options).unwrap();
        let checked = runtime.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for task in 0..256u32 {
                let (pool, memory, kernel) = (pool.clone(), memory.clone(), kernel.clone());
                tasks.spawn(async move {
                    let input: Vec<u32> = (0..N as u32).map(|i| i ^ task).collect();
                    let x = memory.allocate_array::<u32>(N, &pool.next())?;
                    let (_x, fetched) = op::upload(x, input.clone())
                        .then(move |x| affine(x, kernel, 3, task))
                        .then(op::download::<u32>)
                        .run(&pool)
                        .await?;
                    let expected = input.iter().map(|v| v.wrapping_mul(3).wrapping_add(task));
                    Ok::<bool, cuda_safe::Error>(fetched.to_vec()?.into_iter().eq(expected))
                });
            }
            let mut checked = 0;
            while let Some(joined) = tasks.join_next().await {
                assert!(joined.unwrap().unwrap(), "a request got another result");
                checked += 1;
            }
            checked
        });
        assert_eq!(checked, 256, "{policy:?}");
        assert!(pool.in_flight().iter().all(|&n| n == 0), "{policy:?}");
    }
}

fn a_composed_operation_dropped_in_flight_keeps_its_memory() {
    let device = Device::new(0).unwrap();
    let pool = StreamPool::new(&device.context().unwrap(), PoolOptions::default()).unwrap();
    let memory = device.default_memory_resource().unwrap();
    let (spin, affine_kernel) = (kernel("spin"), kernel("affine"));
    cuda_safe_async::set_spin_budget(std::time::Duration::ZERO);
    let x = memory.allocate_array::<u32>(N, &pool.next()).unwrap();
    let mut future = op::on_stream((), move |_, s| {
        // SAFETY: spin(unsigned long long) touches no memory.
        unsafe { s.launch(&LaunchConfig::new(1, 1), &spin, (50_000_000u64,)) }
    })
    .then(move |()| op::upload(x, vec![7u32; N]))
    .then(move |x| affine(x, affine_kernel, 2, 1))
    .then(op::download::<u32>)
    .run(&pool);
    let waker = std::task::Waker::noop();
    let polled = std::pin::Pin::new(&mut future).poll(&mut std::task::Context::from_waker(waker));
    assert!(polled.is_pending(), "a 50 ms kernel was done at once");
    drop(future); // the buffer, its staging and the kernel stay until the GPU passes them
    for stream in pool.streams() {
        stream.sync().unwrap();
    }
    // The pool's memory is reused by later work and nothing faulted.
    let y = memory.allocate_from_host(&[1u32; N], &pool.next()).unwrap();
    assert_eq!(y.to_vec::<u32>().unwrap(), vec![1u32; N]);
}

fn a_captured_composition_replays() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let memory = device.default_memory_resource().unwrap();
    let kernel = kernel("affine");
    let x = memory.allocate_from_host(&[1u32; N], &stream).unwrap();
    let k2 = kernel.clone();
    let chain = affine(x, kernel, 2, 0).then(move |x| affine(x, k2, 1, 1));
    // SAFETY: `x`, the output, outlives the executable (dropped before it).
    let (graph, x) = unsafe { chain.capture(&stream) }.unwrap();
    assert_eq!(
        x.to_vec::<u32>().unwrap()[0],
        1,
        "the capture ran the kernels"
    );
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        pollster::block_on(exec.launch_async(&stream)).unwrap();
    }
    // 1 -> 3 -> 7 -> 15.
    assert_eq!(x.to_vec::<u32>().unwrap(), vec![15u32; N]);
    drop(exec);
}

pub(crate) const FILE: GpuFile = gpu_file![
    requests_on_a_pool_get_their_results,
    a_composed_operation_dropped_in_flight_keeps_its_memory,
    a_captured_composition_replays,
];
