//! Kernel nodes beyond a plain launch (sm_90): clusters (the kernel reads its rank and its
//! cluster's size), cooperative launches (a grid-wide barrier), launch attributes on explicit
//! and captured nodes (read back from the driver), and programmatic edges between nodes.

use cuda_safe::{
    AccessPolicyWindow, Capture, CaptureMode, Dim3, Error, Graph, KernelEdge, LaunchAttributes,
    LaunchConfig, MemSyncDomain, Node,
};
use cuda_sys::{CUlaunchAttributeID, CUlaunchAttributeValue, CUresult};

use super::common::{Setup, compile, setup};

const SOURCE: &str = r#"
// Block b writes its rank in its cluster and the cluster's size.
extern "C" __global__ void cluster_info(unsigned* ranks, unsigned* sizes) {
    unsigned rank, size;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    if (threadIdx.x == 0) {
        ranks[blockIdx.x] = rank;
        sizes[blockIdx.x] = size;
    }
}

// Every block writes in[b] = b + 1, waits at a grid-wide barrier (which needs every block
// resident: a cooperative launch), then reads its neighbour's: out[b] = in[(b + 1) % n] * 10.
extern "C" __global__ void grid_rotate(unsigned* barrier, unsigned* in, unsigned* out) {
    unsigned b = blockIdx.x;
    if (threadIdx.x == 0) {
        atomicExch(&in[b], b + 1);
        __threadfence();
        atomicAdd(barrier, 1u);
        while (atomicAdd(barrier, 0u) < gridDim.x) {}
        __threadfence();
        out[b] = atomicAdd(&in[(b + 1) % gridDim.x], 0u) * 10;
    }
}

// Writes data[i] = 2 i + 1 after spinning, then lets the dependent kernel go.
extern "C" __global__ void producer(unsigned* data, unsigned n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) {}
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2 * i + 1;
    __threadfence();
    asm volatile("griddepcontrol.launch_dependents;");
}

// Waits for the kernel it depends on programmatically, then adds one.
extern "C" __global__ void consumer(const unsigned* data, unsigned* out, unsigned n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1;
}
"#;

/// The attribute `id` of a kernel node, read back from the driver.
fn attribute(node: Node, id: CUlaunchAttributeID) -> CUlaunchAttributeValue {
    let driver = cuda_sys::driver().unwrap();
    let mut value = CUlaunchAttributeValue::default();
    // SAFETY: a live kernel node of a live graph; a valid out-pointer.
    let result = unsafe { driver.cuGraphKernelNodeGetAttribute(node.as_raw(), id, &mut value) };
    assert!(
        matches!(result, Ok(CUresult::CUDA_SUCCESS)),
        "reading attribute {}: {result:?}",
        id.0
    );
    value
}

/// The cluster shape a node holds.
fn cluster_of(node: Node) -> (u32, u32, u32) {
    // SAFETY: the cluster variant is the one the id names.
    let dim = unsafe {
        attribute(
            node,
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        )
        .clusterDim
    };
    (dim.x, dim.y, dim.z)
}

/// `n` zeroed `u32`s on the setup's stream, shared.
fn words(setup: &Setup, n: usize) -> std::sync::Arc<cuda_safe::Buffer> {
    std::sync::Arc::new(setup.pool.allocate_zeroed::<u32>(n, &setup.stream).unwrap())
}

fn read(setup: &Setup, buffer: &cuda_safe::Buffer) -> Vec<u32> {
    setup.stream.sync().unwrap();
    buffer.to_vec::<u32>().unwrap()
}

pub(crate) fn clustered_kernel_nodes_read_their_cluster_rank_and_size() {
    let setup = setup();
    let code = compile(SOURCE);
    let cluster_info = code.get_kernel("cluster_info").unwrap();
    let blocks = 8usize;
    let (ranks, sizes) = (words(&setup, blocks), words(&setup, blocks));
    let pairs = LaunchConfig::clusters(4, 2, 32).unwrap(); // 4 clusters of 2 blocks
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: cluster_info writes one u32 of each buffer per block (8 blocks, 8 u32s).
    let node = unsafe { graph.add_kernel(&[], &pairs, &cluster_info, (&ranks, &sizes)) }.unwrap();
    assert_eq!(cluster_of(node.node()), (2, 1, 1));
    let uneven = LaunchConfig::new(8, 32).cluster(Dim3::from(3));
    // SAFETY: refused before the driver.
    let refused = unsafe { graph.add_kernel(&[], &uneven, &cluster_info, (&ranks, &sizes)) };
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("not a multiple")),
        "{refused:?}"
    );
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(read(&setup, &ranks), [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(read(&setup, &sizes), [2; 8]);

    // New arguments in the executable: the node keeps its cluster shape.
    let (ranks2, sizes2) = (words(&setup, blocks), words(&setup, blocks));
    // SAFETY: as above, for the new buffers (alive until the end of the test).
    unsafe { exec.set_kernel_args(&node, (&ranks2, &sizes2)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(read(&setup, &ranks2), [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(read(&setup, &sizes2), [2; 8]);

    // Captured: a cluster of 4, kept on the node.
    let quads = LaunchConfig::clusters(2, 4, 32).unwrap();
    let (ranks3, sizes3) = (words(&setup, blocks), words(&setup, blocks));
    // SAFETY: as above; the graph keeps the buffers.
    let mut capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    let captured = unsafe { capture.launch(&quads, &cluster_info, (&ranks3, &sizes3)) }.unwrap();
    let captured_graph = capture.end().unwrap();
    assert_eq!(cluster_of(captured.node()), (4, 1, 1));
    captured_graph
        .instantiate()
        .unwrap()
        .launch(&setup.stream)
        .unwrap();
    assert_eq!(read(&setup, &ranks3), [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(read(&setup, &sizes3), [4; 8]);
}

pub(crate) fn cooperative_kernel_nodes_synchronize_the_grid() {
    let setup = setup();
    let code = compile(SOURCE);
    let grid_rotate = code.get_kernel("grid_rotate").unwrap();
    let sms = setup.device.properties().unwrap().multiprocessor_count;
    let blocks = sms as usize;
    let (barrier, input, output) = (
        words(&setup, 1),
        words(&setup, blocks),
        words(&setup, blocks),
    );
    let cooperative = LaunchConfig::new(sms, 32).cooperative(true);
    let mut graph = Graph::new(&setup.context).unwrap();
    let reset = graph.add_memset(&[], &barrier, 0u32).unwrap();
    // SAFETY: grid_rotate updates the barrier and one u32 of `input` and `output` per block
    // (`blocks` each); one block per SM is resident at once.
    let node = unsafe {
        graph.add_kernel(
            &[reset],
            &cooperative,
            &grid_rotate,
            (&barrier, &input, &output),
        )
    }
    .unwrap();
    // SAFETY: the cooperative variant is the one the id names.
    let flag = unsafe {
        attribute(
            node.node(),
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
        )
        .cooperative
    };
    assert_eq!(flag, 1);
    // More blocks than can be resident are refused before the driver.
    let per_sm = grid_rotate
        .occupancy(&setup.device)
        .max_active_blocks_per_multiprocessor(32, 0)
        .unwrap();
    let too_many = LaunchConfig::new(per_sm * sms + 1, 32).cooperative(true);
    // SAFETY: refused before the driver.
    let refused =
        unsafe { graph.add_kernel(&[], &too_many, &grid_rotate, (&barrier, &input, &output)) };
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("cooperative grid")),
        "{refused:?}"
    );
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap();
        let got = read(&setup, &output);
        let expected: Vec<u32> = (0..sms).map(|b| ((b + 1) % sms + 1) * 10).collect();
        assert_eq!(got, expected, "every block saw its neighbour's write");
    }
}

pub(crate) fn launch_attributes_are_kept_on_explicit_and_captured_nodes() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let (_, greatest) = setup.context.stream_priority_range().unwrap();
    let attributes = LaunchAttributes::default()
        .priority(greatest)
        .mem_sync_domain(MemSyncDomain::Remote)
        .access_policy_window(AccessPolicyWindow::persisting(&x, 0.5));
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let explicit =
        unsafe { graph.add_kernel_with(&[], &setup.one, &attributes, &add, (&x, 1i32)) }.unwrap();
    // SAFETY: the priority variant is the one the id names.
    let priority = unsafe {
        attribute(
            explicit.node(),
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY,
        )
        .priority
    };
    assert_eq!(priority, greatest);
    let programmatic = LaunchAttributes::default().programmatic_stream_serialization(true);
    // SAFETY: refused before the driver.
    let refused =
        unsafe { graph.add_kernel_with(&[], &setup.one, &programmatic, &add, (&x, 1i32)) };
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("add_kernel_edge")),
        "{refused:?}"
    );
    // SAFETY: as above.
    let later =
        unsafe { graph.add_kernel(&[explicit.node()], &setup.one, &add, (&x, 10i32)) }.unwrap();
    let lowest = LaunchAttributes::default().priority(0);
    graph.set_kernel_attributes(&later, &lowest).unwrap();
    // SAFETY: as above.
    let priority = unsafe {
        attribute(
            later.node(),
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY,
        )
        .priority
    };
    assert_eq!(priority, 0);
    graph.instantiate().unwrap().launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11]);

    // Captured, on the capturing stream: the node keeps the attributes a node holds.
    // SAFETY: add updates the one int of `x`, which the graph keeps.
    let mut capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    let captured =
        unsafe { capture.launch_with(&setup.one, &attributes, &add, (&x, 100i32)) }.unwrap();
    let graph = capture.end().unwrap();
    // SAFETY: the variants the ids name.
    let (priority, domain) = unsafe {
        (
            attribute(
                captured.node(),
                CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY,
            )
            .priority,
            attribute(
                captured.node(),
                CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
            )
            .memSyncDomain,
        )
    };
    assert_eq!(priority, greatest);
    assert_eq!(
        domain,
        cuda_sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
    );
    graph.instantiate().unwrap().launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [111]);
}

pub(crate) fn programmatic_edges_let_the_dependent_kernel_wait_in_the_kernel() {
    let setup = setup();
    let code = compile(SOURCE);
    let (producer, consumer) = (
        code.get_kernel("producer").unwrap(),
        code.get_kernel("consumer").unwrap(),
    );
    let n = 1u32 << 16;
    let (data, out) = (words(&setup, n as usize), words(&setup, n as usize));
    let config = LaunchConfig::for_num_elements(n as usize, 256).unwrap();
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: both kernels touch `n` u32s of each buffer, which hold `n`; the consumer waits
    // for the producer in griddepcontrol.wait before reading.
    let (first, second) = unsafe {
        (
            graph
                .add_kernel(&[], &config, &producer, (&data, n, 20_000_000i64))
                .unwrap(),
            graph
                .add_kernel(&[], &config, &consumer, (&data, &out, n))
                .unwrap(),
        )
    };
    graph
        .add_kernel_edge(&first, &second, KernelEdge::Programmatic)
        .unwrap();
    assert!(
        graph
            .add_kernel_edge(&first, &first, KernelEdge::LaunchOrder)
            .is_err()
    );
    let exec = graph.instantiate().unwrap();
    for _ in 0..2 {
        exec.launch(&setup.stream).unwrap();
        let got = read(&setup, &out);
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 2),
            "the consumer read what the producer wrote"
        );
    }
}
