//! Managed-memory hints on a real GPU: prefetch to the device and the host, advice read back
//! through the range attributes, batched prefetches and discards (CUDA 13; refused under the 12
//! ABI), and hints refused on memory that is not managed.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::managed::{discard_batch, discard_prefetch_batch, prefetch_batch};
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

/// A second managed buffer like the first, on another stream.
fn second_buffer(device: &Device) -> (Stream, Buffer) {
    let stream = device.create_stream(Default::default()).unwrap();
    let values: Vec<u32> = (0..(BYTES / 4) as u32).map(|i| i ^ 0x5a5a).collect();
    let buffer = ManagedMemoryResource::new(device)
        .unwrap()
        .allocate_from_host(&values, &stream)
        .unwrap();
    (stream, buffer)
}

fn batched_prefetches_land_where_asked_and_keep_the_data() {
    let Some((device, stream, first)) = managed_buffer() else {
        return;
    };
    let (other, second) = second_buffer(&device);
    let here = MemoryLocation::from(&device);
    prefetch_batch(&stream, &[&first, &second], &[here]).unwrap();
    stream.sync().unwrap();
    assert_eq!(first.last_prefetch_location().unwrap(), Some(here));
    assert_eq!(second.last_prefetch_location().unwrap(), Some(here));
    // One location per buffer, on a third stream.
    let third = device.create_stream(Default::default()).unwrap();
    let to = [MemoryLocation::Host, here];
    prefetch_batch(&third, &[&first, &second], &to).unwrap();
    third.sync().unwrap();
    assert_eq!(
        first.last_prefetch_location().unwrap(),
        Some(MemoryLocation::Host)
    );
    assert_eq!(second.last_prefetch_location().unwrap(), Some(here));
    other.sync().unwrap();
    let first_values = first.as_host_slice::<u32>().unwrap();
    assert!(first_values.iter().enumerate().all(|(i, &v)| v == i as u32));
    let second_values = second.as_host_slice::<u32>().unwrap();
    assert!(
        second_values
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u32 ^ 0x5a5a)
    );
    let error = prefetch_batch(&stream, &[&first, &second], &[here; 3]).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

fn discards_drop_the_contents_and_writes_after_them_hold() {
    let Some((device, stream, mut first)) = managed_buffer() else {
        return;
    };
    let (_other, mut second) = second_buffer(&device);
    let here = MemoryLocation::from(&device);
    if cuda_safe::sys::ABI_MAJOR < 13 {
        for error in [
            discard_batch(&stream, &[&mut first, &mut second]).unwrap_err(),
            discard_prefetch_batch(&stream, &[&mut first], &[here]).unwrap_err(),
            second.discard().unwrap_err(),
        ] {
            assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        }
        return;
    }
    discard_prefetch_batch(&stream, &[&mut first, &mut second], &[here]).unwrap();
    first.fill(7u32).unwrap();
    second.fill(9u32).unwrap();
    stream.sync().unwrap();
    assert_eq!(first.last_prefetch_location().unwrap(), Some(here));
    assert!(first.to_vec::<u32>().unwrap().iter().all(|&v| v == 7));
    assert!(second.to_vec::<u32>().unwrap().iter().all(|&v| v == 9));
    discard_batch(&stream, &[&mut first, &mut second]).unwrap();
    second.discard().unwrap();
    first.fill(3u32).unwrap();
    stream.sync().unwrap();
    assert!(first.to_vec::<u32>().unwrap().iter().all(|&v| v == 3));
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
            buffer.last_prefetch_location().unwrap_err(),
            prefetch_batch(&stream, &[&buffer], &[MemoryLocation::Host]).unwrap_err(),
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
    batched_prefetches_land_where_asked_and_keep_the_data,
    discards_drop_the_contents_and_writes_after_them_hold,
    hints_on_memory_that_is_not_managed_are_refused,
];
