//! The cases outside the matrix: first use, error texts, an older driver, and fault-free runs
//! of the stub through the crate (one device; two devices and IPC; virtual memory, managed
//! hints and 2-D/3-D copies).

use std::panic::{AssertUnwindSafe, catch_unwind};

use cuda_safe::checkpoint::Process;
use cuda_safe::sys::CUresult;
use cuda_safe::{
    Advice, ArrayDescriptor, ArrayFormat, CodeKind, Copy3d, CudaArray, Device,
    DeviceMemoryResource, Error, Event, EventOptions, Growth, HostPitched, HostPitchedMut,
    IpcHandleType, LaunchConfig, ManagedMemoryResource, MemoryLocation, PitchedBuffer, PoolOptions,
    Program, Result, SplitRequest, StreamOptions, Uuid, VirtualMemoryResource,
    VirtualMemoryResourceOptions, launch,
};

use crate::stub::{self, KINDS, Stub};
use cuda_safe_stub::faults::fixtures::{
    N, arch_90, device, device_of, pool, pool_of, program, stream, stream_of,
};
use cuda_safe_stub::faults::names_fault;
use cuda_safe_stub::faults::{CUDA_CODES, codes_for, panic_message};

/// The indices of primary-context retains and of exported pools' descriptors in the live
/// counts.
const CONTEXT: usize = 0;
const FD: usize = KINDS.len() - 1;

/// The calls made only until they first succeed, failed before anything else runs: `cuInit`
/// (through the first `Device::count`) and `nvrtcVersion` (through `nvrtc_version`). Each
/// failure is returned and the next call tries again. Returns (faults, failures).
pub(crate) fn first_use(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let cases: [(&str, &dyn Fn() -> Result<()>); 2] = [
        ("cuInit", &|| Device::count().map(drop)),
        ("nvrtcVersion", &|| cuda_safe::nvrtc_version().map(drop)),
    ];
    for (call, first) in cases {
        for &code in codes_for(call) {
            stub.reset();
            stub.fail(call, code.value as i32, 1);
            faults += 1;
            match catch_unwind(AssertUnwindSafe(first)) {
                Ok(Err(error)) => {
                    if let Err(problem) = names_fault(&error, call, code) {
                        failures.push(format!("{call} failing with {}: {problem}", code.text));
                    }
                }
                Ok(Ok(())) => {
                    failures.push(format!("{call} failing with {}: swallowed", code.text))
                }
                Err(_) => failures.push(format!("{call}: panicked: {}", panic_message())),
            }
        }
        stub.reset();
        let retried = first().is_ok() && stub.calls(call) == 1;
        stub.reset();
        let remembered = first().is_ok() && stub.calls(call) == 0;
        if !(retried && remembered) {
            failures.push(format!(
                "{call}: after its failures, one successful call then none expected"
            ));
        }
    }
    (faults, failures)
}

/// The error texts: a failed `cuGetErrorName` / `cuGetErrorString` while an error is built
/// leaves the crate's fallbacks, and the error is still the call's. Returns (faults, failures).
pub(crate) fn error_texts(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let stream = stream();
    for (text_call, fallback) in [
        ("cuGetErrorName", "an unknown CUDA error code"),
        ("cuGetErrorString", "no message from the driver"),
    ] {
        for &code in &CUDA_CODES {
            stub.reset();
            stub.fail("cuStreamSynchronize", 2, 1);
            stub.fail(text_call, code.value as i32, 1);
            faults += 1;
            match stream.sync() {
                Err(Error::Cuda {
                    api: "cuStreamSynchronize",
                    code: raw,
                    name,
                    message,
                }) if raw.0 == 2 => {
                    let text = if text_call == "cuGetErrorName" {
                        name
                    } else {
                        message
                    };
                    if text != fallback {
                        failures.push(format!("{text_call} failing: the error says {text:?}"));
                    }
                }
                other => failures.push(format!("{text_call} failing: {other:?}")),
            }
        }
    }
    (faults, failures)
}

/// Documented mappings of an older driver: checkpoints need 12.8 and unequal splits 13.1,
/// both reported as `Unsupported`.
pub(crate) fn old_driver(stub: &Stub) -> Vec<String> {
    let mut failures = Vec::new();
    stub.set_driver_version(12040);
    match Process::new(4242) {
        Err(error @ Error::Unsupported { .. }) if error.is_not_supported() => {}
        other => failures.push(format!("checkpoints on a 12.4 driver: {other:?}")),
    }
    stub.set_driver_version(13000);
    let sm = device().resources().sm().expect("the SMs");
    match sm.split(&SplitRequest::counts([64, 32])) {
        Err(Error::Unsupported { .. }) => {}
        other => failures.push(format!("unequal groups on a 13.0 driver: {other:?}")),
    }
    stub.set_driver_version(13010);
    failures
}

/// The stub through the crate, fault-free: copies round-trip, the kernel runs, compile errors
/// carry the log, a kernel's parameter list is read, and every object goes back.
pub(crate) fn sanity(stub: &Stub) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let before = stub.live();
    {
        let device = device();
        let properties = device.properties()?;
        if properties.multiprocessor_count != 132 || device.arch()? != "90" {
            failures.push(format!("the device: {properties:?}"));
        }
        let stream = device.create_stream(StreamOptions::default())?;
        let pool = device.default_memory_resource()?;
        let mut x = pool.allocate_from_host(&[1.5f32; N], &stream)?;
        let kernel = program()
            .compile(CodeKind::Cubin)?
            .load()?
            .get_kernel("twice<float>")?;
        let config = LaunchConfig::for_num_elements(N, 256)?;
        // SAFETY: the stub's `twice` doubles the N floats `x` holds.
        unsafe { launch(&stream, &config, &kernel, (&mut x, N)) }?;
        if x.to_vec::<f32>()? != [3.0f32; N] || kernel.param_count() != Some(2) {
            failures
                .push("the kernel did not run on the buffer, or its parameters are unknown".into());
        }
        // SAFETY: as above; one argument is missing, which the parameter list reveals.
        let missing = unsafe { launch(&stream, &config, &kernel, (&mut x,)) };
        if !matches!(missing, Err(Error::InvalidArgument(_))) {
            failures.push(format!("a launch with too few arguments: {missing:?}"));
        }
        let mut y = pool.allocate_zeroed::<f64>(N, &stream)?;
        y.fill(0.25f64)?;
        let z = pool.allocate_zeroed::<u16>(N, &stream)?;
        if y.to_vec::<f64>()? != [0.25f64; N] || z.to_vec::<u16>()? != [0u16; N] {
            failures.push("fills do not write what they were given".into());
        }
        let broken = Program::new("#error broken", arch_90())?.compile(CodeKind::Ptx);
        match broken {
            Err(Error::Nvrtc { log: Some(log), .. }) if log.contains("#error") => {}
            other => failures.push(format!("a compile error: {other:?}")),
        }
        let uuid: Uuid = device.uuid()?;
        if Device::from_nvml(&device.to_nvml()?)? != device || uuid.0[0] != 0x5a {
            failures.push("CUDA and NVML disagree on the device".into());
        }
    }
    if !device().release_primary_context() || stub.live() != before {
        failures.push(format!("objects left: {before:?} -> {:?}", stub.live()));
    }
    device().retain_primary_context();
    // Every operation below starts with both devices' primary contexts and default pools made.
    pool();
    pool_of(1);
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures.push(format!("misuses: {misuses}, last: {last}"));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures.push(format!("logged: {logs:?}"));
    }
    Ok(failures)
}

/// The stub's second device and IPC through the crate, fault-free: a peer copy moves the
/// bytes, peer and pool access are idempotent, a fabric pool is refused where the devices share
/// pools through descriptors only, an imported buffer is the exporter's memory, a
/// buffer is exported only once its pool is, an IPC event opens only in another process, a
/// copy leaves a released primary context released, and every object (exported descriptors
/// included) goes back.
pub(crate) fn two_devices_and_ipc(stub: &Stub) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let before = stub.live();
    {
        let (near, far) = (device(), device_of(1));
        let (stream, far_stream) = (stream(), stream_of(1));
        let source = pool_of(1).allocate_from_host(&[2.5f32; N], &far_stream)?;
        let mut copy = pool().allocate_zeroed::<f32>(N, &stream)?;
        copy.copy_from(&source)?;
        if copy.to_vec::<f32>()? != [2.5f32; N] {
            failures.push("a peer copy did not move the bytes".into());
        }
        for _ in 0..2 {
            near.enable_peer_access(&far)?;
        }
        for _ in 0..2 {
            near.disable_peer_access(&far)?;
        }
        let pool = pool();
        pool.grant_access(&far)?;
        let granted = pool.is_accessible_from(&far)?;
        pool.revoke_access(&far)?;
        if !granted || pool.is_accessible_from(&far)? || !pool.is_accessible_from(&near)? {
            failures.push("pool access is not what was granted".into());
        }

        let fabric = PoolOptions::default().ipc(IpcHandleType::Fabric);
        match DeviceMemoryResource::new_pool(&near, fabric) {
            Err(error @ Error::Unsupported { .. }) if error.is_not_supported() => {}
            other => failures.push(format!(
                "a fabric pool where only descriptors are: {other:?}"
            )),
        }
        let shareable = DeviceMemoryResource::new_pool(
            &near,
            PoolOptions::default().ipc(IpcHandleType::PosixFd),
        )?;
        let buffer = shareable.allocate_from_host(&[7u32; N], &stream)?;
        match buffer.export_ipc() {
            Err(error @ Error::InvalidArgument(_))
                if error.to_string().contains("export the pool first") => {}
            other => failures.push(format!("a buffer exported before its pool: {other:?}")),
        }
        let exported = shareable.export_pool()?;
        let open_fds = stub.live()[FD] - before[FD];
        let descriptor = buffer.export_ipc()?;
        let imported = DeviceMemoryResource::import_pool(exported)?;
        if open_fds != 1 || stub.live()[FD] != before[FD] {
            failures.push(format!(
                "an exported pool's descriptor: {open_fds} open, then {} left",
                stub.live()[FD] - before[FD]
            ));
        }
        let mut import = imported.import_buffer(&descriptor, &stream)?;
        let read = import.to_vec::<u32>()?;
        import.fill(9u32)?;
        if read != [7u32; N] || buffer.to_vec::<u32>()? != [9u32; N] {
            failures.push("an imported buffer is not the exporter's memory".into());
        }
        drop(import);

        let event = near.create_event(EventOptions::default().ipc(true))?;
        match Event::open_ipc(&near.context()?, &event.ipc_handle()?) {
            Err(error) if error.cuda_code() == Some(CUresult::CUDA_ERROR_INVALID_CONTEXT) => {}
            other => failures.push(format!("an event opened by its own process: {other:?}")),
        }
        let foreign = stub.as_other_process(|| event.ipc_handle())?;
        let opened = Event::open_ipc(&near.context()?, &foreign)?;
        stream.wait(&opened)?;
    }
    // A copy from a device whose primary context was let go leaves it let go: released once
    // the buffers and streams using it are dropped.
    let retained = stub.live()[CONTEXT];
    {
        let (stream, far_stream) = (stream(), stream_of(1));
        let far_buffer = pool_of(1).allocate_zeroed::<f32>(N, &far_stream)?;
        let mut near_buffer = pool().allocate_zeroed::<f32>(N, &stream)?;
        device_of(1).release_primary_context();
        near_buffer.copy_from(&far_buffer)?;
    }
    if stub.live()[CONTEXT] != retained - 1 {
        failures.push("a peer copy kept a released primary context retained".into());
    }
    device_of(1).retain_primary_context();
    pool_of(1); // made again, as every operation expects
    if stub.live() != before {
        failures.push(format!("objects left: {before:?} -> {:?}", stub.live()));
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures.push(format!("misuses: {misuses}, last: {last}"));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures.push(format!("logged: {logs:?}"));
    }
    Ok(failures)
}

/// Virtual memory, managed memory's hints and 2-D/3-D copies through the crate, fault-free: a
/// growable buffer keeps its bytes through growing in place and moving, memory is usable only
/// once mapped with access, advice and prefetches read back as range attributes, and a 3-D
/// box round-trips through pitched memory and an array.
pub(crate) fn memory_models(stub: &Stub) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let before = stub.live();
    {
        let stream = stream();
        let vmm = VirtualMemoryResource::new(&device(), VirtualMemoryResourceOptions::default())?;
        let granularity = vmm.granularity();
        let mut growing = vmm.growable(granularity, 2 * granularity, &stream)?;
        growing.as_mut_slice::<u32>()?.fill(7)?;
        growing.grow(2 * granularity)?;
        let start = growing.as_raw();
        let moved = growing.grow(3 * granularity)?;
        let words = growing.as_slice::<u32>()?.to_vec()?;
        let kept = words[..granularity / 4].iter().all(|&word| word == 7);
        if moved != (Growth::Moved { from: start }) || !kept || growing.chunk_count() != 3 {
            failures.push(format!(
                "a growable buffer moved {moved:?}, its bytes kept: {kept}"
            ));
        }

        let managed = ManagedMemoryResource::new(&device())?.allocate_zeroed::<f32>(N, &stream)?;
        managed.advise(Advice::SetReadMostly)?;
        managed.advise(Advice::SetPreferredLocation(MemoryLocation::Device(0)))?;
        managed.advise(Advice::SetAccessedBy(MemoryLocation::Device(1)))?;
        managed.prefetch(MemoryLocation::Host)?;
        let attributes = managed.range_attributes()?;
        let expected = (
            true,
            Some(MemoryLocation::Device(0)),
            Some(MemoryLocation::Host),
            vec![MemoryLocation::Device(1)],
        );
        let got = (
            attributes.read_mostly,
            attributes.preferred_location,
            attributes.last_prefetch_location,
            attributes.accessed_by.clone(),
        );
        if got != expected {
            failures.push(format!("range attributes: {attributes:?}"));
        }

        let (width, rows, slices) = (16 * 4, 8, 3);
        let data: Vec<f32> = (0..16 * rows * slices).map(|i| i as f32).collect();
        let whole = Copy3d::boxed(width, rows, slices);
        let mut pitched = PitchedBuffer::allocate(&stream, width, rows, slices, 4)?;
        pitched
            .view_mut::<f32>()?
            .copy_from_host(&HostPitched::new(&data, width, rows)?, &whole)?;
        let descriptor = ArrayDescriptor::new(16, ArrayFormat::F32, 1)
            .height(rows)
            .depth(slices);
        let mut array = CudaArray::new(&stream, descriptor)?;
        array.copy_from(&pitched.view::<f32>()?, &whole)?;
        let mut back = vec![0f32; data.len()];
        array.copy_to_host(&mut HostPitchedMut::new(&mut back, width, rows)?, &whole)?;
        if back != data {
            failures
                .push("a 3-D box did not round-trip through pitched memory and an array".into());
        }
    }
    if stub.live() != before {
        failures.push(format!("objects left: {before:?} -> {:?}", stub.live()));
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures.push(format!("misuses: {misuses}, last: {last}"));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures.push(format!("logged: {logs:?}"));
    }
    Ok(failures)
}
