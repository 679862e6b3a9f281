//! The primary context's lifecycle: retained on first use and kept (so `device.set_current()?;`
//! followed by work re-uses it, as in `cuda.core`), released by `release_primary_context` once
//! the last handle using it is gone, and not kept again until `set_current` (or
//! `retain_primary_context`) asks for it. In a process of its own (as every test file), so no
//! other test holds the context meanwhile; its steps run in order on one thread (see
//! `lifecycle` below).

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Device, StreamOptions};

fn primary_context_active(device: &Device) -> bool {
    let driver = cuda_safe::sys::driver().unwrap();
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: valid out-pointers and device handle.
    unsafe { driver.cuDevicePrimaryCtxGetState(device.as_raw(), &mut flags, &mut active) }.unwrap();
    active != 0
}

fn current_context() -> cuda_safe::sys::CUcontext {
    let driver = cuda_safe::sys::driver().unwrap();
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { driver.cuCtxGetCurrent(&mut current) }.unwrap();
    current
}

fn lifecycle() {
    let device = Device::new(0).unwrap();
    device_sync_creates_no_context(&device);
    set_current_then_work_reuses_the_context(&device);
    release_waits_for_the_last_holder(&device);
}

fn device_sync_creates_no_context(device: &Device) {
    assert!(
        !primary_context_active(device),
        "something else holds the primary context"
    );
    device.sync().unwrap();
    assert!(
        !primary_context_active(device),
        "sync retained the primary context"
    );
}

/// The article's natural code: `set_current` and nothing kept, then streams and memory.
fn set_current_then_work_reuses_the_context(device: &Device) {
    device.set_current().unwrap();
    let bound = current_context();
    assert!(!bound.is_null());
    assert!(
        primary_context_active(device),
        "set_current's context was dropped"
    );
    let started = std::time::Instant::now();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(
        stream.context().as_raw(),
        bound,
        "create_stream made another context"
    );
    let pool = device.default_memory_resource().unwrap();
    let kept = pool.allocate_from_host(&[7u32; 256], &stream).unwrap();
    drop((stream, pool));
    // An allocation made in between survives: its context was never destroyed.
    assert_eq!(kept.to_vec::<u32>().unwrap(), [7u32; 256]);
    drop(kept);
    assert!(
        primary_context_active(device),
        "the context is kept for the process"
    );
    assert_eq!(current_context(), bound);
    eprintln!(
        "create_stream + allocate + copy after set_current: {:?}",
        started.elapsed()
    );
}

fn release_waits_for_the_last_holder(device: &Device) {
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let buffer = pool.allocate(1 << 20, &stream).unwrap();
    assert!(device.release_primary_context(), "it was retained");
    assert!(!device.release_primary_context(), "released once");
    assert!(
        primary_context_active(device),
        "a stream and a buffer still hold it"
    );
    drop((stream, pool));
    assert!(primary_context_active(device), "the buffer still holds it");
    drop(buffer);
    assert!(!primary_context_active(device), "the last holder is gone");
    // Used again after the release: retained by the handle, and let go with it.
    let again = device.context().unwrap();
    assert!(primary_context_active(device));
    again.close().unwrap();
    assert!(
        !primary_context_active(device),
        "not kept: the release holds until set_current or retain_primary_context"
    );
    device.mem_info().unwrap();
    assert!(!primary_context_active(device), "a query lets it go again");
    // Asked for again: kept once used.
    device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    drop(stream);
    assert!(primary_context_active(device), "kept after set_current");
    assert!(device.release_primary_context());
    assert!(!primary_context_active(device));
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![lifecycle,];
