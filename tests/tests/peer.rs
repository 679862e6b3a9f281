//! Two GPUs: peer access both ways, peer copies on random data, and a kernel on GPU 1 reading
//! GPU 0's pool memory. Each test skips (with the reason) on a machine with one GPU, and fails
//! there under `CUDA_SAFE_REQUIRE_GPUS=2`.

use cuda_gpu_tests::{GpuFile, devices, gpu_file, random_words};
use cuda_safe::{
    CodeKind, Device, DeviceMemoryResource, Error, LaunchConfig, PoolOptions, Program,
    ProgramOptions, StreamOptions, launch,
};

fn two() -> Option<(Device, Device)> {
    let gpus = devices(2)?;
    Some((gpus[0], gpus[1]))
}

fn peer_access_is_enabled_and_disabled_both_ways_idempotently() {
    let Some((gpu0, gpu1)) = two() else { return };
    assert!(
        gpu0.can_access_peer(&gpu1).unwrap(),
        "0 -> 1 has no peer path"
    );
    assert!(
        gpu1.can_access_peer(&gpu0).unwrap(),
        "1 -> 0 has no peer path"
    );
    for (from, to) in [(gpu0, gpu1), (gpu1, gpu0)] {
        let link = from.peer_attributes(&to).unwrap();
        println!("{} -> {}: {link:?}", from.ordinal(), to.ordinal());
        assert!(link.access_supported);
        from.enable_peer_access(&to).unwrap();
        from.enable_peer_access(&to).unwrap(); // already enabled: still Ok
        from.disable_peer_access(&to).unwrap();
        from.disable_peer_access(&to).unwrap(); // already disabled: still Ok
        from.enable_peer_access(&to).unwrap();
    }
    let to_itself = gpu0.enable_peer_access(&gpu0).unwrap_err();
    assert!(
        matches!(to_itself, Error::InvalidArgument(_)),
        "{to_itself}"
    );
    assert!(matches!(
        gpu0.peer_attributes(&gpu0),
        Err(Error::InvalidArgument(_))
    ));
}

fn peer_copies_move_random_data_both_ways() {
    let Some((gpu0, gpu1)) = two() else { return };
    gpu0.enable_peer_access(&gpu1).unwrap();
    gpu1.enable_peer_access(&gpu0).unwrap();
    let s0 = gpu0.create_stream(StreamOptions::default()).unwrap();
    let s1 = gpu1.create_stream(StreamOptions::default()).unwrap();
    let pool0 = gpu0.default_memory_resource().unwrap();
    let pool1 = gpu1.default_memory_resource().unwrap();
    for (n, seed) in [(1usize, 1u64), (4097, 2), (16 << 20, 3)] {
        let data = random_words(n, seed);
        let a0 = pool0.allocate_from_host(&data, &s0).unwrap();
        let mut b1 = pool1.allocate_array::<u32>(n, &s1).unwrap();
        b1.copy_from(&a0).unwrap(); // queued on s1 after s0's upload
        assert_eq!(b1.to_vec::<u32>().unwrap(), data, "0 -> 1, {n} words");
        let back = random_words(n, seed + 100);
        b1.copy_from_host(&back).unwrap();
        let mut a0 = a0;
        a0.copy_from(&b1).unwrap();
        assert_eq!(a0.to_vec::<u32>().unwrap(), back, "1 -> 0, {n} words");
    }
    // A part of one buffer into a part of another, on the other device.
    let data = random_words(1000, 9);
    let a0 = pool0.allocate_from_host(&data, &s0).unwrap();
    let mut b1 = pool1.allocate_zeroed::<u32>(1000, &s1).unwrap();
    b1.as_mut_slice::<u32>()
        .unwrap()
        .slice_mut(100..400)
        .unwrap()
        .copy_from(&a0.as_slice::<u32>().unwrap().slice(500..800).unwrap())
        .unwrap();
    let got = b1.to_vec::<u32>().unwrap();
    assert_eq!(&got[100..400], &data[500..800]);
    assert!(got[..100].iter().chain(&got[400..]).all(|&word| word == 0));
    // The size check of local copies holds across devices too.
    let short = pool1.allocate_array::<u32>(999, &s1).unwrap();
    let error = b1.copy_from(&short).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

const READ_PEER: &str = r#"
extern "C" __global__ void read_peer(const unsigned* peer, unsigned* out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = peer[i] * 3u + 1u;
}
"#;

fn a_kernel_on_gpu1_reads_gpu0_pool_memory_once_access_is_granted() {
    let Some((gpu0, gpu1)) = two() else { return };
    let pool0 = DeviceMemoryResource::new_pool(&gpu0, PoolOptions::default()).unwrap();
    assert!(pool0.is_accessible_from(&gpu0).unwrap());
    assert!(!pool0.is_accessible_from(&gpu1).unwrap());
    pool0.grant_access(&gpu1).unwrap();
    pool0.grant_access(&gpu1).unwrap(); // idempotent
    pool0.grant_access(&gpu0).unwrap(); // its own device: nothing to do
    assert!(pool0.is_accessible_from(&gpu1).unwrap());

    let s0 = gpu0.create_stream(StreamOptions::default()).unwrap();
    gpu1.set_current().unwrap();
    let s1 = gpu1.create_stream(StreamOptions::default()).unwrap();
    let code = Program::new(READ_PEER, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap();
    let kernel = code.get_kernel("read_peer").unwrap();
    let n = (1usize << 22) + 3;
    let data = random_words(n, 42);
    let peer = pool0.allocate_from_host(&data, &s0).unwrap();
    let mut out = gpu1.allocate(n * 4, &s1).unwrap();
    // The kernel runs on s1 (GPU 1); the launch orders it after `peer`'s stream (GPU 0).
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: the kernel reads n words of `peer` (GPU 0 memory GPU 1 may access) and writes n
    // words of `out`.
    unsafe { launch(&s1, &config, &kernel, (&peer, &mut out, n)).unwrap() };
    let got = out.to_vec::<u32>().unwrap();
    for (i, (&got, &x)) in got.iter().zip(&data).enumerate() {
        assert_eq!(got, x.wrapping_mul(3).wrapping_add(1), "word {i}");
    }
    s1.sync().unwrap();
    pool0.revoke_access(&gpu1).unwrap();
    assert!(!pool0.is_accessible_from(&gpu1).unwrap());
    let own = pool0.revoke_access(&gpu0).unwrap_err();
    assert!(matches!(own, Error::InvalidArgument(_)), "{own}");
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    peer_access_is_enabled_and_disabled_both_ways_idempotently,
    peer_copies_move_random_data_both_ways,
    a_kernel_on_gpu1_reads_gpu0_pool_memory_once_access_is_granted,
];
