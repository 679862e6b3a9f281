//! The libraries' operands and handles across devices (features `blas`, `dnn`): a cuDNN plan
//! made by `make_plan` and dropped after its `Dnn`; on two GPUs, what `Context::can_access`
//! answers for another GPU's pool memory (before and after `grant_access`), its `cuMemAlloc`
//! memory (before and after peer access) and pinned memory, and GPU 1's pool memory refused by
//! GPU 0's cuBLAS until GPU 0 may access that pool, then multiplied right. The two-GPU test
//! skips (with the reason) on a machine with one GPU, and fails there under
//! `CUDA_SAFE_REQUIRE_GPUS=2`.

use cuda_gpu_tests::{GpuFile, devices, gpu_file};
use cuda_safe::{
    Device, DeviceMemoryResource, Error, PinnedMemoryResource, SyncDeviceMemoryResource,
};
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
use cuda_safe_libs::dnn::{DataType, Dnn, EngineChoice, Graph, Pointwise, TensorDesc, VariantPack};

fn a_plan_outlives_its_dnn() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let mut graph = Graph::new();
    let x = graph
        .tensor(TensorDesc::packed(DataType::F32, &[1, 8, 8]))
        .unwrap();
    let y = graph.pointwise(Pointwise::Relu, x, None).unwrap();
    graph.output(y, DataType::F32).unwrap();
    let dnn = Dnn::new(&stream).unwrap();
    let plan = dnn.make_plan(&graph, EngineChoice::Heuristics).unwrap();
    drop(dnn);
    // The first handle lives on in the plan: the second is another one, which refuses it.
    let mut other = Dnn::new(&stream).unwrap();
    let refused = other.run(&plan, &VariantPack::new());
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("another cuDNN handle")),
        "{refused:?}"
    );
    drop(plan);
    other.close().unwrap();
}

fn another_gpus_memory_is_reached_only_with_access() {
    let Some(gpus) = devices(2) else { return };
    let (gpu0, gpu1) = (gpus[0], gpus[1]);
    let (stream0, stream1) = (
        gpu0.create_stream(Default::default()).unwrap(),
        gpu1.create_stream(Default::default()).unwrap(),
    );
    let context0 = stream0.context();
    let pool1 = DeviceMemoryResource::default_pool(&gpu1).unwrap();
    let a = pool1.allocate_from_host(&[1.0f32; 4], &stream1).unwrap();
    let sync1 = SyncDeviceMemoryResource::new(&gpu1).unwrap();
    let plain = sync1.allocate(256, &stream1).unwrap();
    let pinned = PinnedMemoryResource::new(&gpu1).unwrap();
    let host = pinned.allocate(256, &stream1).unwrap();
    assert!(context0.can_access(host.as_raw()).unwrap(), "pinned memory");
    assert!(!context0.can_access(a.as_raw()).unwrap(), "pool, no access");
    assert!(
        !context0.can_access(plain.as_raw()).unwrap(),
        "cuMemAlloc, no peer"
    );
    let b = DeviceMemoryResource::default_pool(&gpu0)
        .unwrap()
        .allocate_from_host(&[2.0f32; 4], &stream0)
        .unwrap();
    let mut c = DeviceMemoryResource::default_pool(&gpu0)
        .unwrap()
        .allocate_zeroed::<f32>(4, &stream0)
        .unwrap();
    let blas = Blas::new(&stream0).unwrap();
    let gemm = Gemm::row_major(2, 2, 2);
    let scalars = Scalars::host(1.0, 0.0);
    let refused = blas.gemm::<f32, f32>(&gemm, scalars, &a, &b, &mut c);
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("device 1's")),
        "{refused:?}"
    );
    pool1.grant_access(&gpu0).unwrap();
    assert!(context0.can_access(a.as_raw()).unwrap(), "pool, granted");
    blas.gemm::<f32, f32>(&gemm, scalars, &a, &b, &mut c)
        .unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), [4.0; 4]);
    pool1.revoke_access(&gpu0).unwrap();
    gpu0.enable_peer_access(&gpu1).unwrap();
    assert!(
        context0.can_access(plain.as_raw()).unwrap(),
        "cuMemAlloc, peer"
    );
    gpu0.disable_peer_access(&gpu1).unwrap();
}

pub(crate) const FILE: GpuFile = gpu_file![
    a_plan_outlives_its_dnn,
    another_gpus_memory_is_reached_only_with_access,
];
