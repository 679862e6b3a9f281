//! The runtime core on a real GPU: devices, contexts, streams, events, memory resources and
//! buffers.

use std::time::{Duration, Instant};

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{
    Buffer, Device, DeviceMemoryResource, Error, Event, EventOptions, ManagedMemoryResource,
    PinnedMemoryResource, PoolOptions, Stream, StreamOptions, SyncDeviceMemoryResource,
};

/// A small deterministic generator, so failures are reproducible.
fn random_bytes(len: usize, mut seed: u64) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        bytes.extend_from_slice(&seed.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

fn setup() -> (Device, Stream, DeviceMemoryResource) {
    let device = Device::new(0).expect("device 0");
    device.set_current().expect("set_current");
    let stream = device
        .create_stream(StreamOptions::default())
        .expect("stream");
    let pool = device.default_memory_resource().expect("pool");
    (device, stream, pool)
}

fn is_invalid_argument(result: Result<impl std::fmt::Debug, Error>) -> bool {
    matches!(result, Err(Error::InvalidArgument(_)))
}

fn device_properties_are_sane() {
    let count = Device::count().unwrap();
    assert!(count >= 1);
    assert_eq!(Device::all().unwrap().len(), count);
    assert!(is_invalid_argument(Device::new(count)));
    let device = Device::new(0).unwrap();
    let name = device.name().unwrap();
    let uuid = device.uuid().unwrap();
    let bus = device.pci_bus_id().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let properties = device.properties().unwrap();
    let total = device.total_memory().unwrap();
    let info = device.mem_info().unwrap();
    println!(
        "{name} {uuid} {bus} sm_{major}{minor} {} SMs, {:.1} GB, {:.1} GB free, driver {}",
        properties.multiprocessor_count,
        total as f64 / 1e9,
        info.free as f64 / 1e9,
        cuda_safe::cuda_driver_version().unwrap()
    );
    assert!(!name.is_empty());
    assert!(uuid.to_string().starts_with("GPU-") && uuid.to_string().len() == 40);
    assert_eq!(bus.matches(':').count(), 2, "{bus}");
    assert_eq!(device.arch().unwrap(), format!("{major}{minor}"));
    assert_eq!(properties.compute_capability_major, major);
    assert_eq!(properties.warp_size, 32);
    assert!(properties.max_threads_per_block >= 1024);
    assert!(properties.max_block_dim[0] >= 1024);
    assert!(properties.memory_pools_supported);
    assert_eq!(info.total, total);
    assert!(info.free <= info.total);
    assert!(device.can_access_peer(&device).is_ok());
    if name.contains("H200") {
        assert_eq!(properties.multiprocessor_count, 132);
        assert_eq!(device.arch().unwrap(), "90");
        assert!(
            total > 140_000_000_000 && total < 152_000_000_000,
            "{total}"
        );
        assert!(properties.cluster_launch);
    }
}

fn primary_context_is_shared_and_bound_once() {
    let device = Device::new(0).unwrap();
    let first = device.context().unwrap();
    device.set_current().unwrap();
    let second = device.context().unwrap();
    assert_eq!(first, second);
    assert!(!first.is_green());
    assert_eq!(first.device(), &device);
    let driver = cuda_safe::sys::driver().unwrap();
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { driver.cuCtxGetCurrent(&mut current) }.unwrap();
    assert_eq!(current, first.as_raw());
    // Binding again when already current is a no-op, and from another thread it binds there.
    first.bind().unwrap();
    let raw = first.as_raw() as usize;
    std::thread::spawn(move || {
        device.set_current().unwrap();
        let mut current = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { driver.cuCtxGetCurrent(&mut current) }.unwrap();
        assert_eq!(current as usize, raw);
    })
    .join()
    .unwrap();
    let (least, greatest) = first.stream_priority_range().unwrap();
    assert!(greatest <= least);
    first.sync().unwrap();
    second.close().unwrap();
}

fn streams_have_options_and_reject_bad_priorities() {
    let (device, stream, _) = setup();
    assert!(stream.is_non_blocking().unwrap());
    let blocking = device
        .create_stream(StreamOptions::default().non_blocking(false))
        .unwrap();
    assert!(!blocking.is_non_blocking().unwrap());
    let (least, greatest) = device.context().unwrap().stream_priority_range().unwrap();
    let urgent = device
        .create_stream(StreamOptions::default().priority(greatest))
        .unwrap();
    assert_eq!(urgent.priority().unwrap(), greatest);
    assert!(is_invalid_argument(
        device.create_stream(StreamOptions::default().priority(greatest - 1))
    ));
    assert!(is_invalid_argument(
        device.create_stream(StreamOptions::default().priority(least + 1))
    ));
    stream.sync().unwrap();
    assert!(stream.query().unwrap());
    urgent.wait_stream(&stream).unwrap();
    urgent.close().unwrap();
}

fn a_foreign_stream_is_used_but_not_destroyed() {
    let (device, _, pool) = setup();
    let context = device.context().unwrap();
    let driver = cuda_safe::sys::driver().unwrap();
    let mut raw = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the primary context is current.
    unsafe { driver.cuStreamCreate(&mut raw, 1) }.unwrap();
    {
        // SAFETY: `raw` is a live stream of this context, destroyed below after the wrapper.
        let foreign = unsafe { Stream::from_raw(raw, &context) };
        let mut buffer = pool.allocate(1024, &foreign).unwrap();
        buffer.fill::<u8>(7).unwrap();
        assert_eq!(buffer.to_vec::<u8>().unwrap(), vec![7; 1024]);
    }
    // SAFETY: the stream is still alive: the wrapper did not destroy it.
    let status = unsafe { driver.cuStreamQuery(raw) }.unwrap();
    assert_eq!(status, cuda_safe::sys::CUresult::CUDA_SUCCESS);
    // SAFETY: destroys the stream created above, once.
    unsafe { driver.cuStreamDestroy_v2(raw) }.unwrap();
}

fn an_event_orders_two_streams() {
    let (device, first, pool) = setup();
    let second = device.create_stream(StreamOptions::default()).unwrap();
    let words = 64 << 20; // 256 MiB of u32: long enough that an unordered copy would race
    let mut source = pool.allocate(words * 4, &first).unwrap();
    let mut target = pool.allocate(words * 4, &second).unwrap();
    target.fill::<u32>(0).unwrap();
    second.sync().unwrap();
    for value in 1..=20u32 {
        source.fill::<u32>(value).unwrap();
    }
    let filled = device.create_event(EventOptions::default()).unwrap();
    first.record(&filled).unwrap();
    second.wait(&filled).unwrap();
    // A raw copy on `second`, ordered after the fills by the event alone.
    let driver = cuda_safe::sys::driver().unwrap();
    // SAFETY: both ranges are live allocations of `words * 4` bytes.
    unsafe { driver.cuMemcpyAsync(target.as_raw(), source.as_raw(), words * 4, second.as_raw()) }
        .unwrap();
    let result = target.to_vec::<u32>().unwrap();
    assert!(
        result.iter().all(|&v| v == 20),
        "copy ran before the fills finished"
    );
    assert!(filled.is_done().unwrap());
}

fn events_time_work_and_report_misuse() {
    let (device, stream, pool) = setup();
    let timed = EventOptions::default().timing(true);
    let start = device.create_event(timed).unwrap();
    let end = device.create_event(timed).unwrap();
    assert!(matches!(
        Event::elapsed(&start, &end),
        Err(Error::EventNotRecorded)
    ));
    let mut buffer = pool.allocate(1 << 30, &stream).unwrap();
    stream.record(&start).unwrap();
    buffer.fill::<u32>(0xdead_beef).unwrap();
    stream.record(&end).unwrap();
    let elapsed = Event::elapsed(&start, &end).unwrap();
    println!(
        "filling 1 GiB took {elapsed:?} ({:.0} GB/s)",
        1.073_741_824 / elapsed.as_secs_f64()
    );
    assert!(elapsed > Duration::ZERO && elapsed < Duration::from_secs(10));
    let untimed = device.create_event(EventOptions::default()).unwrap();
    stream.record(&untimed).unwrap();
    assert!(matches!(
        Event::elapsed(&start, &untimed),
        Err(Error::EventNotTimed)
    ));
    untimed.sync().unwrap();
    assert!(untimed.is_done().unwrap());
    let blocking = device
        .create_event(EventOptions::default().blocking_sync(true))
        .unwrap();
    stream.record(&blocking).unwrap();
    blocking.sync().unwrap();
    assert!(is_invalid_argument(
        device.create_event(EventOptions::default().ipc(true).timing(true))
    ));
    let ipc = device
        .create_event(EventOptions::default().ipc(true))
        .unwrap();
    assert_ne!(ipc.ipc_handle().unwrap(), [0; 64]);
    assert!(is_invalid_argument(untimed.ipc_handle()));
    end.close().unwrap();
}

fn the_pool_reuses_freed_memory() {
    let (_, stream, pool) = setup();
    drop(pool.allocate(1 << 20, &stream).unwrap());
    stream.sync().unwrap();
    let reserved_before = pool.reserved_memory().unwrap();
    let start = Instant::now();
    for _ in 0..10_000 {
        let buffer = pool.allocate(1 << 20, &stream).unwrap();
        drop(buffer);
    }
    stream.sync().unwrap();
    let reserved_after = pool.reserved_memory().unwrap();
    println!(
        "10,000 alloc+free of 1 MiB in {:?}; reserved {reserved_before} -> {reserved_after} bytes",
        start.elapsed()
    );
    assert!(
        reserved_after <= reserved_before.max(2 << 20),
        "the pool grew"
    );
    assert_eq!(pool.used_memory().unwrap(), 0);
}

fn an_owned_pool_respects_its_limit() {
    let (device, stream, _) = setup();
    let pool =
        DeviceMemoryResource::new_pool(&device, PoolOptions::default().max_size(64 << 20)).unwrap();
    assert!(pool.owns_pool());
    let held = pool.allocate(48 << 20, &stream).unwrap();
    let refused = pool.allocate(48 << 20, &stream).unwrap_err();
    println!("over the limit: {refused}");
    assert!(refused.cuda_code().is_some());
    drop(held);
    let again = pool.allocate(48 << 20, &stream).unwrap();
    again.close().unwrap();
    assert!(is_invalid_argument(DeviceMemoryResource::new_pool(
        &device,
        PoolOptions::default().max_size(0)
    )));
}

fn round_trips_of_odd_sizes_keep_every_byte() {
    let (device, stream, pool) = setup();
    let other = device.create_stream(StreamOptions::default()).unwrap();
    for (i, size) in [
        1usize,
        3,
        255,
        1023,
        4097,
        (1 << 20) + 7,
        (64 << 20) + 13,
        1 << 30,
    ]
    .into_iter()
    .enumerate()
    {
        let data = random_bytes(size, 0x9e37_79b9_7f4a_7c15 ^ i as u64);
        let mut buffer = pool.allocate(size, &stream).unwrap();
        buffer.copy_from_host(&data).unwrap();
        // Device to device on another stream, then back.
        let mut copy = pool.allocate(size, &other).unwrap();
        copy.copy_from(&buffer).unwrap();
        drop(buffer);
        let mut back = vec![0u8; size];
        copy.copy_to_host(&mut back).unwrap();
        assert!(back == data, "round trip of {size} bytes changed the data");
    }
}

fn pinned_and_pageable_uploads_both_work() {
    let (device, stream, pool) = setup();
    let pinned = PinnedMemoryResource::new(&device).unwrap();
    let size = 400_000_000;
    let mut host = pinned.allocate(size, &stream).unwrap();
    host.as_host_mut_slice::<u8>().unwrap().fill(0x5a);
    let pageable = vec![0x5au8; size];
    let mut on_device = pool.allocate(size, &stream).unwrap();
    let rate = |seconds: f64| size as f64 / seconds / 1e9;
    let mut pageable_gbs = Vec::new();
    let mut pinned_gbs = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        on_device.copy_from_host(&pageable).unwrap();
        pageable_gbs.push(rate(start.elapsed().as_secs_f64()));
        let start = Instant::now();
        on_device.copy_from(&host).unwrap();
        stream.sync().unwrap();
        pinned_gbs.push(rate(start.elapsed().as_secs_f64()));
    }
    println!("400 MB upload: pageable {pageable_gbs:.1?} GB/s, pinned {pinned_gbs:.1?} GB/s");
    let back = on_device.to_vec::<u8>().unwrap();
    assert!(back.iter().all(|&b| b == 0x5a));
    assert!(
        host.as_host_slice::<u8>()
            .unwrap()
            .iter()
            .all(|&b| b == 0x5a)
    );
}

fn managed_memory_is_visible_to_host_and_device() {
    let (device, stream, pool) = setup();
    let managed = ManagedMemoryResource::new(&device).unwrap();
    let mut shared = managed.allocate(1 << 20, &stream).unwrap();
    assert!(shared.is_host_accessible() && shared.is_device_accessible());
    shared.as_host_mut_slice::<u32>().unwrap().fill(41);
    let mut on_device = pool.allocate(1 << 20, &stream).unwrap();
    on_device.copy_from(&shared).unwrap();
    on_device.fill::<u32>(42).unwrap();
    shared.copy_from(&on_device).unwrap();
    assert!(
        shared
            .as_host_slice::<u32>()
            .unwrap()
            .iter()
            .all(|&v| v == 42)
    );
}

fn wrong_sizes_are_rejected_and_empty_buffers_behave() {
    let (_, stream, pool) = setup();
    let mut buffer = pool.allocate(16, &stream).unwrap();
    assert!(is_invalid_argument(buffer.copy_from_host(&[0u8; 17])));
    assert!(is_invalid_argument(buffer.copy_from_host(&[0u8; 15])));
    assert!(is_invalid_argument(buffer.copy_to_host(&mut [0u32; 5])));
    let mut odd = pool.allocate(6, &stream).unwrap();
    assert!(is_invalid_argument(odd.as_slice::<f32>()));
    assert!(is_invalid_argument(odd.fill::<u32>(1)));
    assert!(is_invalid_argument(odd.copy_from(&buffer)));
    assert!(is_invalid_argument(buffer.as_host_slice::<u8>()));
    let view = buffer.as_slice::<u32>().unwrap();
    assert_eq!(view.len(), 4);
    assert!(is_invalid_argument(view.slice(2..5)));
    assert_eq!(view.slice(1..3).unwrap().as_raw(), buffer.as_raw() + 4);
    let mut part = buffer.as_mut_slice::<u32>().unwrap();
    part.slice_mut(1..3)
        .unwrap()
        .copy_from_host(&[5, 6])
        .unwrap();
    assert_eq!(buffer.to_vec::<u32>().unwrap()[1..3], [5, 6]);

    let mut empty: Buffer = pool.allocate(0, &stream).unwrap();
    assert!(empty.is_empty());
    empty.copy_from_host::<u8>(&[]).unwrap();
    empty.fill::<u32>(3).unwrap();
    assert!(empty.to_vec::<f64>().unwrap().is_empty());
    let mut other_empty = pool.allocate(0, &stream).unwrap();
    other_empty.copy_from(&empty).unwrap();
    empty.close().unwrap();
    buffer.close().unwrap();
}

fn buffers_move_between_streams_and_threads() {
    let (device, stream, pool) = setup();
    let mut buffer = pool.allocate(4 << 20, &stream).unwrap();
    buffer.fill::<u32>(9).unwrap();
    let other = device.create_stream(StreamOptions::default()).unwrap();
    buffer.set_stream(&other).unwrap();
    assert!(buffer.stream().same_as(&other));
    let handles: Vec<_> = (0..4u32)
        .map(|i| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let mut mine = pool.allocate(1 << 20, &stream).unwrap();
                mine.fill::<u32>(i).unwrap();
                mine.to_vec::<u32>().unwrap().iter().all(|&v| v == i)
            })
        })
        .collect();
    for handle in handles {
        assert!(handle.join().unwrap());
    }
    let moved = std::thread::spawn(move || buffer.to_vec::<u32>().unwrap())
        .join()
        .unwrap();
    assert!(moved.iter().all(|&v| v == 9));
}

fn elapsed_waits_for_both_events_on_different_streams() {
    let (device, first, pool) = setup();
    let second = device.create_stream(StreamOptions::default()).unwrap();
    let timed = EventOptions::default().timing(true);
    let (start, end) = (
        device.create_event(timed).unwrap(),
        device.create_event(timed).unwrap(),
    );
    let mut big = pool.allocate(1 << 30, &first).unwrap();
    big.fill::<u32>(1).unwrap();
    first.record(&start).unwrap();
    second.record(&end).unwrap();
    // `start` may still be pending on `first`; elapsed waits for it instead of NOT_READY.
    let elapsed = Event::elapsed(&start, &end);
    assert!(elapsed.is_ok(), "{elapsed:?}");
}

/// Typed allocations without byte arithmetic: `n` values of `T`, zero-filled, copied from the
/// host (f16 and bf16 included), and fills of any `Pod` value, each read back exactly.
fn typed_allocations_and_fills_round_trip() {
    use half::{bf16, f16};
    let (device, stream, pool) = setup();
    let halves: Vec<f16> = (0..1000).map(|i| f16::from_f32(i as f32 * 0.25)).collect();
    let buffer = pool.allocate_from_host(&halves, &stream).unwrap();
    assert_eq!(buffer.len(), 2000);
    assert_eq!(buffer.to_vec::<f16>().unwrap(), halves);
    let mut brains = pool.allocate_zeroed::<bf16>(333, &stream).unwrap();
    assert_eq!(brains.to_vec::<bf16>().unwrap(), vec![bf16::ZERO; 333]);
    brains.fill(bf16::from_f32(-2.5)).unwrap();
    assert_eq!(
        brains.to_vec::<bf16>().unwrap(),
        vec![bf16::from_f32(-2.5); 333]
    );

    // Values whose bytes do not repeat take one 2-D memset per column.
    let mut doubles = pool.allocate_array::<f64>(4097, &stream).unwrap();
    doubles.fill(std::f64::consts::PI).unwrap();
    assert_eq!(
        doubles.to_vec::<f64>().unwrap(),
        vec![std::f64::consts::PI; 4097]
    );
    let mut triples = pool.allocate_array::<[u8; 3]>(1001, &stream).unwrap();
    triples.fill([1u8, 2, 3]).unwrap();
    assert_eq!(
        triples.to_vec::<[u8; 3]>().unwrap(),
        vec![[1u8, 2, 3]; 1001]
    );
    let mut pairs = pool.allocate_array::<[u16; 3]>(77, &stream).unwrap();
    pairs.fill([0x1111u16, 0x2222, 0x3333]).unwrap();
    assert_eq!(
        pairs.to_vec::<[u16; 3]>().unwrap(),
        vec![[0x1111u16, 0x2222, 0x3333]; 77]
    );

    // A fill of part of a buffer leaves the rest alone.
    let mut words = pool.allocate_zeroed::<u64>(100, &stream).unwrap();
    words
        .as_mut_slice::<u64>()
        .unwrap()
        .slice_mut(10..20)
        .unwrap()
        .fill(u64::MAX - 1)
        .unwrap();
    let back = words.to_vec::<u64>().unwrap();
    assert!(back[..10].iter().chain(&back[20..]).all(|&word| word == 0));
    assert!(back[10..20].iter().all(|&word| word == u64::MAX - 1));

    // `Device::allocate` goes through the default pool, as cuda.core's does; the typed helpers
    // refuse sizes that overflow.
    let raw = device.allocate(4096, &stream).unwrap();
    assert_eq!(raw.len(), 4096);
    assert!(is_invalid_argument(
        pool.allocate_array::<u64>(usize::MAX / 4, &stream)
    ));
    let pinned = PinnedMemoryResource::new(&device).unwrap();
    let staged = pinned.allocate_from_host(&[9u32; 64], &stream).unwrap();
    assert_eq!(staged.as_host_slice::<u32>().unwrap(), &[9u32; 64]);
}

fn cumemalloc_memory_round_trips_and_is_freed_on_drop() {
    let (device, stream, pool) = setup();
    let memory = SyncDeviceMemoryResource::new(&device).unwrap();
    assert_eq!(memory.device(), &device);
    let size = (256 << 20) + 13;
    let free_before = device.mem_info().unwrap().free;
    let mut buffer = memory.allocate(size, &stream).unwrap();
    let free_held = device.mem_info().unwrap().free;
    println!("free memory {free_before} -> {free_held} bytes with {size} bytes allocated");
    assert!(
        free_held + (200 << 20) <= free_before,
        "cuMemAlloc took no memory"
    );
    let data = random_bytes(size, 0x5eed);
    buffer.copy_from_host(&data).unwrap();
    // Into a pool buffer on another stream and back: the two kinds of memory mix freely.
    let other = device.create_stream(StreamOptions::default()).unwrap();
    let mut copy = pool.allocate(size, &other).unwrap();
    copy.copy_from(&buffer).unwrap();
    let mut back = vec![0u8; size];
    copy.copy_to_host(&mut back).unwrap();
    assert!(back == data, "the round trip changed the data");
    // Work queued on the buffer's stream finishes before the free: the drop waits for it.
    buffer.fill(7u8).unwrap();
    let free_before_drop = device.mem_info().unwrap().free;
    drop(buffer);
    let free_after = device.mem_info().unwrap().free;
    assert!(
        free_after >= free_before_drop + (200 << 20),
        "dropping the buffer freed nothing ({free_before_drop} -> {free_after} bytes free)"
    );
    let zeroed = memory.allocate_zeroed::<u32>(1 << 20, &stream).unwrap();
    assert!(zeroed.to_vec::<u32>().unwrap().iter().all(|&v| v == 0));
    zeroed.close().unwrap();
    assert!(is_invalid_argument(
        memory.allocate_array::<u64>(usize::MAX / 4, &stream)
    ));
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    typed_allocations_and_fills_round_trip,
    device_properties_are_sane,
    primary_context_is_shared_and_bound_once,
    streams_have_options_and_reject_bad_priorities,
    a_foreign_stream_is_used_but_not_destroyed,
    an_event_orders_two_streams,
    events_time_work_and_report_misuse,
    the_pool_reuses_freed_memory,
    an_owned_pool_respects_its_limit,
    round_trips_of_odd_sizes_keep_every_byte,
    pinned_and_pageable_uploads_both_work,
    managed_memory_is_visible_to_host_and_device,
    wrong_sizes_are_rejected_and_empty_buffers_behave,
    buffers_move_between_streams_and_threads,
    elapsed_waits_for_both_events_on_different_streams,
    cumemalloc_memory_round_trips_and_is_freed_on_drop,
];
