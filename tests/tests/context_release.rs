//! The primary context is released when its last handle (and everything holding one) is gone.
//! In its own test binary, so no other test holds the context meanwhile.

use cuda_gpu_tests::gpu_or_skip;
use cuda_safe::{Device, StreamOptions};

fn primary_context_active(device: &Device) -> bool {
    let driver = cuda_safe::sys::driver().unwrap();
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: valid out-pointers and device handle.
    unsafe { driver.cuDevicePrimaryCtxGetState(device.as_raw(), &mut flags, &mut active) }.unwrap();
    active != 0
}

#[test]
fn the_last_handle_releases_the_primary_context() {
    if !gpu_or_skip("the_last_handle_releases_the_primary_context") {
        return;
    }
    let device = Device::new(0).unwrap();
    assert!(
        !primary_context_active(&device),
        "something else holds the primary context"
    );
    let context = device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let buffer = pool.allocate(1 << 20, &stream).unwrap();
    drop(context);
    assert!(
        primary_context_active(&device),
        "a stream and a buffer still hold it"
    );
    drop((stream, pool));
    assert!(primary_context_active(&device), "the buffer still holds it");
    drop(buffer);
    assert!(!primary_context_active(&device), "the last holder is gone");
    // Retained again on demand.
    let again = device.context().unwrap();
    assert!(primary_context_active(&device));
    again.close().unwrap();
    assert!(!primary_context_active(&device));
}

#[test]
fn device_sync_creates_no_context() {
    if !gpu_or_skip("device_sync_creates_no_context") {
        return;
    }
    let device = Device::new(0).unwrap();
    device.sync().unwrap();
    assert!(
        !primary_context_active(&device),
        "sync retained the primary context"
    );
}
