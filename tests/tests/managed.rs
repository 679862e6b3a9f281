//! Managed-memory hints on a real GPU: prefetch to the device and the host, advice read back
//! through the range attributes, and hints refused on memory that is not managed.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::sys::CUdevice_attribute;
use cuda_safe::{
    Advice, Buffer, Device, Error, ManagedMemoryResource, MemoryLocation, PinnedMemoryResource,
    Stream,
};

/// Small enough to stay far below any device's free memory.
const BYTES: usize = 4 << 20;

/// A managed buffer filled with a pattern, or `None` (after saying why) on a device that
/// cannot prefetch (no concurrent managed access).
fn managed_buffer() -> Option<(Device, Stream, Buffer)> {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let concurrent = device
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
        .unwrap();
    if concurrent == 0 {
        eprintln!("skipped: the device has no concurrent managed access");
        return None;
    }
    assert!(device.mem_info().unwrap().free > 4 * BYTES);
    let stream = device.create_stream(Default::default()).unwrap();
    let managed = ManagedMemoryResource::new(&device).unwrap();
    let values: Vec<u32> = (0..(BYTES / 4) as u32).collect();
    let buffer = managed.allocate_from_host(&values, &stream).unwrap();
    Some((device, stream, buffer))
}

fn prefetches_land_where_asked_and_keep_the_data() {
    let Some((device, stream, buffer)) = managed_buffer() else {
        return;
    };
    buffer.prefetch(MemoryLocation::from(&device)).unwrap();
    stream.sync().unwrap();
    assert_eq!(
        buffer.range_attributes().unwrap().last_prefetch_location,
        Some(MemoryLocation::Device(device.ordinal()))
    );
    buffer.prefetch(MemoryLocation::Host).unwrap();
    stream.sync().unwrap();
    assert_eq!(
        buffer.range_attributes().unwrap().last_prefetch_location,
        Some(MemoryLocation::Host)
    );
    let values = buffer.as_host_slice::<u32>().unwrap();
    assert!(
        values
            .iter()
            .enumerate()
            .all(|(i, &value)| value == i as u32)
    );
}

fn advice_is_read_back() {
    let Some((device, _stream, buffer)) = managed_buffer() else {
        return;
    };
    let here = MemoryLocation::from(&device);
    let attributes = buffer.range_attributes().unwrap();
    assert!(!attributes.read_mostly);
    assert_eq!(attributes.preferred_location, None);

    buffer.advise(Advice::SetReadMostly).unwrap();
    assert!(buffer.range_attributes().unwrap().read_mostly);
    buffer.advise(Advice::UnsetReadMostly).unwrap();
    assert!(!buffer.range_attributes().unwrap().read_mostly);

    buffer.advise(Advice::SetPreferredLocation(here)).unwrap();
    assert_eq!(
        buffer.range_attributes().unwrap().preferred_location,
        Some(here)
    );
    buffer
        .advise(Advice::SetPreferredLocation(MemoryLocation::Host))
        .unwrap();
    assert_eq!(
        buffer.range_attributes().unwrap().preferred_location,
        Some(MemoryLocation::Host)
    );
    buffer.advise(Advice::UnsetPreferredLocation).unwrap();
    assert_eq!(buffer.range_attributes().unwrap().preferred_location, None);

    buffer.advise(Advice::SetAccessedBy(here)).unwrap();
    assert!(
        buffer
            .range_attributes()
            .unwrap()
            .accessed_by
            .contains(&here)
    );
    buffer.advise(Advice::UnsetAccessedBy(here)).unwrap();
    assert!(
        !buffer
            .range_attributes()
            .unwrap()
            .accessed_by
            .contains(&here)
    );
}

fn hints_on_memory_that_is_not_managed_are_refused() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let pinned = PinnedMemoryResource::new(&device).unwrap();
    for buffer in [
        pool.allocate(4096, &stream).unwrap(),
        pinned.allocate(4096, &stream).unwrap(),
    ] {
        for error in [
            buffer.prefetch(MemoryLocation::Host).unwrap_err(),
            buffer.advise(Advice::SetReadMostly).unwrap_err(),
            buffer.range_attributes().unwrap_err(),
        ] {
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
            assert!(error.to_string().contains("managed memory"), "{error}");
        }
    }
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    prefetches_land_where_asked_and_keep_the_data,
    advice_is_read_back,
    hints_on_memory_that_is_not_managed_are_refused,
];
