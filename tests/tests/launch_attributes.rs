//! Launch attributes on a GPU (sm_90): programmatic dependent launch (on one stream, and its
//! event across streams), cluster launches with a preferred shape and a scheduling policy,
//! priority, memory synchronisation domains and an access-policy window each launch and give
//! correct results; the refusals are typed; cluster occupancy answers.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    AccessPolicyWindow, AttributeSupport, ClusterScheduling, CodeKind, Device, Dim3, Error,
    EventOptions, Kernel, LaunchAttributes, LaunchConfig, MemSyncDomain, MemSyncDomainMap,
    ObjectCode, Program, ProgramOptions, ProgrammaticEvent, Stream, launch, launch_with,
};

const SOURCE: &str = r#"
// Writes data[i] = 2 i + 1 after spinning, then lets the dependent kernel go.
extern "C" __global__ void producer(unsigned* data, unsigned n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) {}
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2 * i + 1;
    __threadfence();
    asm volatile("griddepcontrol.launch_dependents;");
}

// Waits for the kernel before it, then adds one.
extern "C" __global__ void consumer(const unsigned* data, unsigned* out, unsigned n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1;
}

// Each thread writes its global index plus one, and block 0 of each cluster the cluster size.
extern "C" __global__ void index_plus_one(unsigned* out, unsigned* cluster_sizes, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i + 1;
    unsigned size, rank;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) cluster_sizes[blockIdx.x] = size;
}
"#;

const N: u32 = 1 << 16;
const BLOCK: u32 = 256;

struct Setup {
    device: Device,
    stream: Stream,
    code: ObjectCode,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch().unwrap()));
    let code = Program::new(SOURCE, options)
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap();
    Setup {
        device,
        stream,
        code,
    }
}

impl Setup {
    fn kernel(&self, name: &str) -> Kernel {
        self.code.get_kernel(name).unwrap()
    }

    /// Launches `index_plus_one` with `config` and `attributes` and checks every index and
    /// that each cluster's size is one of `sizes`.
    fn index_plus_one(
        &self,
        config: &LaunchConfig,
        attributes: &LaunchAttributes<'_>,
        sizes: &[u32],
    ) {
        self.try_index_plus_one(config, attributes, sizes)
            .unwrap_or_else(|error| panic!("{attributes:?}: {error}"));
    }

    /// [`Setup::index_plus_one`], the launch's error returned.
    fn try_index_plus_one(
        &self,
        config: &LaunchConfig,
        attributes: &LaunchAttributes<'_>,
        sizes: &[u32],
    ) -> Result<(), Error> {
        let pool = self.device.default_memory_resource().unwrap();
        let n = config.grid.x * BLOCK;
        let mut out = pool
            .allocate_zeroed::<u32>(n as usize, &self.stream)
            .unwrap();
        let mut clusters = pool
            .allocate_zeroed::<u32>(config.grid.x as usize, &self.stream)
            .unwrap();
        let kernel = self.kernel("index_plus_one");
        // SAFETY: index_plus_one(unsigned*, unsigned*, unsigned) writes n words of `out` and
        // one word per block of `clusters`, which hold that many.
        unsafe {
            launch_with(
                &self.stream,
                config,
                attributes,
                &kernel,
                (&mut out, &mut clusters, n),
            )
        }?;
        let expected: Vec<u32> = (1..=n).collect();
        assert_eq!(out.to_vec::<u32>().unwrap(), expected, "{attributes:?}");
        for size in clusters.to_vec::<u32>().unwrap() {
            assert!(
                sizes.contains(&size),
                "cluster of {size} blocks, expected {sizes:?}"
            );
        }
        Ok(())
    }
}

fn a_programmatic_dependent_pair_gives_correct_results() {
    let setup = setup();
    let pool = setup.device.default_memory_resource().unwrap();
    let stream = &setup.stream;
    let (producer, consumer) = (setup.kernel("producer"), setup.kernel("consumer"));
    let config = LaunchConfig::for_num_elements(N as usize, BLOCK).unwrap();
    let pdl = LaunchAttributes::default().programmatic_stream_serialization(true);
    for round in 0..20u32 {
        let mut data = pool.allocate_zeroed::<u32>(N as usize, stream).unwrap();
        let mut out = pool.allocate_zeroed::<u32>(N as usize, stream).unwrap();
        // SAFETY: producer writes N words of `data`; consumer reads them and writes N of `out`
        // after griddepcontrol.wait.
        unsafe {
            launch(
                stream,
                &config,
                &producer,
                (&mut data, N, 20_000i64 * i64::from(round % 3)),
            )
            .unwrap();
            launch_with(stream, &config, &pdl, &consumer, (&data, &mut out, N)).unwrap();
        }
        let expected: Vec<u32> = (0..N).map(|i| 2 * i + 2).collect();
        assert_eq!(out.to_vec::<u32>().unwrap(), expected, "round {round}");
    }
}

fn a_programmatic_event_orders_another_stream() {
    let setup = setup();
    let pool = setup.device.default_memory_resource().unwrap();
    let other = setup.device.create_stream(Default::default()).unwrap();
    let event = setup.device.create_event(EventOptions::default()).unwrap();
    let (producer, consumer) = (setup.kernel("producer"), setup.kernel("consumer"));
    let config = LaunchConfig::for_num_elements(N as usize, BLOCK).unwrap();
    let mut data = pool
        .allocate_zeroed::<u32>(N as usize, &setup.stream)
        .unwrap();
    let mut out = pool.allocate_zeroed::<u32>(N as usize, &other).unwrap();
    setup.stream.sync().unwrap();
    other.sync().unwrap();
    let attributes = LaunchAttributes::default().programmatic_event(ProgrammaticEvent {
        event: &event,
        trigger_at_block_start: false,
    });
    let raw_data = data.as_raw();
    // SAFETY: as above; the consumer runs on `other` after the event, which fires when every
    // producer block has triggered, after its writes and fence.
    unsafe {
        launch_with(
            &setup.stream,
            &config,
            &attributes,
            &producer,
            (&mut data, N, 100_000i64),
        )
        .unwrap();
        other.wait(&event).unwrap();
        launch(&other, &config, &consumer, (raw_data, &mut out, N)).unwrap();
    }
    let expected: Vec<u32> = (0..N).map(|i| 2 * i + 2).collect();
    assert_eq!(out.to_vec::<u32>().unwrap(), expected);
    setup.stream.sync().unwrap();

    // A timed event is refused before the launch, by rule.
    let timed = setup
        .device
        .create_event(EventOptions::default().timing(true))
        .unwrap();
    let attributes = LaunchAttributes::default().programmatic_event(ProgrammaticEvent {
        event: &timed,
        trigger_at_block_start: true,
    });
    // SAFETY: refused before anything is queued.
    let error = unsafe {
        launch_with(
            &setup.stream,
            &config,
            &attributes,
            &producer,
            (&mut data, N, 0i64),
        )
    }
    .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("without timing"), "{error}");
}

fn cluster_attributes_launch_and_give_correct_results() {
    let setup = setup();
    let clustered = LaunchConfig::new(264, BLOCK).cluster(Dim3::from(2));
    for scheduling in [
        ClusterScheduling::Default,
        ClusterScheduling::Spread,
        ClusterScheduling::LoadBalancing,
    ] {
        let attributes = LaunchAttributes::default().cluster_scheduling(scheduling);
        setup.index_plus_one(&clustered, &attributes, &[2]);
    }
    let preferred = LaunchAttributes::default().preferred_cluster(Dim3::from(4));
    match setup.try_index_plus_one(&clustered, &preferred, &[2, 4]) {
        Ok(()) => eprintln!("preferred clusters of 4 launched"),
        Err(error) if error.is_not_supported() => {
            eprintln!("preferred clusters are unsupported here, as a typed error: {error}")
        }
        Err(error) => panic!("preferred cluster: {error}"),
    }
    // The plain cluster launch, through launch_with without attributes.
    setup.index_plus_one(&clustered, &LaunchAttributes::default(), &[2]);
}

fn priority_domains_and_windows_launch_and_give_correct_results() {
    let setup = setup();
    let plain = LaunchConfig::new(64, BLOCK);
    let (least, greatest) = setup.stream.context().stream_priority_range().unwrap();
    for priority in [least, greatest] {
        let attributes = LaunchAttributes::default().priority(priority);
        setup.index_plus_one(&plain, &attributes, &[1]);
    }
    let domains = LaunchAttributes::default()
        .mem_sync_domain(MemSyncDomain::Remote)
        .mem_sync_domain_map(MemSyncDomainMap {
            default: 0,
            remote: 1,
        });
    setup.index_plus_one(&plain, &domains, &[1]);
    let pool = setup.device.default_memory_resource().unwrap();
    let hot = pool.allocate(1 << 20, &setup.stream).unwrap();
    let window =
        LaunchAttributes::default().access_policy_window(AccessPolicyWindow::persisting(&hot, 0.5));
    setup.index_plus_one(&plain, &window, &[1]);
    setup.stream.sync().unwrap();
}

fn unsupported_and_invalid_attributes_are_typed_errors() {
    let setup = setup();
    let support = AttributeSupport::of(&setup.stream).unwrap();
    assert!(support.compute_capability.0 >= 9, "{support:?}");
    let kernel = setup.kernel("index_plus_one");
    let pool = setup.device.default_memory_resource().unwrap();
    let mut out = pool
        .allocate_zeroed::<u32>(64 * BLOCK as usize, &setup.stream)
        .unwrap();
    let mut clusters = pool.allocate_zeroed::<u32>(64, &setup.stream).unwrap();
    let plain = LaunchConfig::new(64, BLOCK);
    let refused = |attributes: LaunchAttributes<'_>,
                   out: &mut cuda_safe::Buffer,
                   clusters: &mut cuda_safe::Buffer| {
        // SAFETY: refused before anything is queued.
        unsafe {
            launch_with(
                &setup.stream,
                &plain,
                &attributes,
                &kernel,
                (out, clusters, 64 * BLOCK),
            )
        }
        .unwrap_err()
    };
    let invalid = [
        LaunchAttributes::default().preferred_cluster(Dim3::from(4)),
        LaunchAttributes::default().cluster_scheduling(ClusterScheduling::Spread),
        LaunchAttributes::default().priority(support.priority_range.0 + 1),
        LaunchAttributes::default().mem_sync_domain_map(MemSyncDomainMap {
            default: 0,
            remote: 200,
        }),
    ];
    for attributes in invalid {
        let error = refused(attributes, &mut out, &mut clusters);
        assert!(
            matches!(error, Error::InvalidArgument(_)),
            "{attributes:?}: {error}"
        );
    }
    // What an older GPU or driver lacks is Unsupported, by the same checks.
    let mut older = support;
    older.compute_capability = (8, 6);
    older.driver_version = 12_040;
    let clustered = plain.cluster(Dim3::from(2));
    for attributes in [
        LaunchAttributes::default().programmatic_stream_serialization(true),
        LaunchAttributes::default().preferred_cluster(Dim3::from(4)),
        LaunchAttributes::default().mem_sync_domain(MemSyncDomain::Default),
    ] {
        let error = attributes.validate(&clustered, &older).unwrap_err();
        assert!(error.is_not_supported(), "{attributes:?}: {error}");
    }
}

fn cluster_occupancy_answers() {
    let setup = setup();
    let kernel = setup.kernel("index_plus_one");
    let occupancy = kernel.occupancy(&setup.device);
    let config = LaunchConfig::new(264, BLOCK).cluster(Dim3::from(2));
    let clusters = occupancy.max_active_clusters(&config).unwrap();
    let sms = setup
        .device
        .attribute(cuda_safe::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    assert!(clusters >= sms / 2, "{clusters} clusters of 2 on {sms} SMs");
    let size = occupancy.max_potential_cluster_size(&config).unwrap();
    assert!(size >= 8, "the portable cluster size is 8, got {size}");
    let error = occupancy
        .max_active_clusters(&LaunchConfig::new(264, BLOCK))
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    eprintln!("{clusters} clusters of 2 x {BLOCK} threads resident; largest cluster {size}");
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    a_programmatic_dependent_pair_gives_correct_results,
    a_programmatic_event_orders_another_stream,
    cluster_attributes_launch_and_give_correct_results,
    priority_domains_and_windows_launch_and_give_correct_results,
    unsupported_and_invalid_attributes_are_typed_errors,
    cluster_occupancy_answers,
];
