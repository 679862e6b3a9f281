//! Virtual memory on a real GPU: growth in place and by moving, `max_size`, buffers from the
//! resource, the floor's 1 GiB path, access for a second device, export and import (in
//! process, and in a child process that gets the file descriptors over a UNIX socket), and
//! teardown after a failed import.
//!
//! The child part runs in `main`, before the harness, when `VMM_TEST_CHILD` is set.

use std::os::fd::{AsFd, BorrowedFd};
use std::process::{Command, ExitCode};
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, check, devices, gpu_file};
use cuda_safe::{
    CodeKind, Device, Error, Growth, IpcHandleType, LaunchConfig, Program, ProgramOptions, Stream,
    VirtualMemoryResource, VirtualMemoryResourceOptions, VmmAccess, VmmShareDescriptor, launch,
};
use cuda_safe_ipc::{Channel, Listener};

const MIB: usize = 1 << 20;
/// Set in the child process: the socket's file descriptor number.
const CHILD_ENV: &str = "VMM_TEST_CHILD";

const SOURCE: &str = r#"
extern "C" __global__ void copy_u32(const unsigned* src, unsigned* dst, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"#;

fn pattern(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed))
        .collect()
}

fn setup(options: VirtualMemoryResourceOptions) -> (Device, Stream, VirtualMemoryResource) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let vmm = VirtualMemoryResource::new(&device, options).unwrap();
    (device, stream, vmm)
}

/// Reads `n` u32s at a raw device address (for mappings, which have no views).
fn read_raw(ptr: u64, n: usize) -> Vec<u32> {
    let driver = cuda_sys::driver().unwrap();
    let mut host = vec![0u32; n];
    // SAFETY: the caller's mapping holds `n` u32s at `ptr`; `host` holds as many.
    check("cuMemcpyDtoH_v2", unsafe {
        driver.cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), ptr, n * 4)
    });
    host
}

/// Writes `values` at a raw device address.
fn write_raw(ptr: u64, values: &[u32]) {
    let driver = cuda_sys::driver().unwrap();
    // SAFETY: the caller's mapping holds `values.len()` u32s at `ptr`.
    check("cuMemcpyHtoD_v2", unsafe {
        driver.cuMemcpyHtoD_v2(ptr, values.as_ptr().cast(), values.len() * 4)
    });
}

fn growth_keeps_contents_and_address() {
    let (_device, stream, vmm) = setup(VirtualMemoryResourceOptions::default());
    let granularity = vmm.granularity();
    let mut buffer = vmm.growable(1, 64 * MIB, &stream).unwrap();
    assert_eq!(buffer.len(), granularity, "rounded up to the granularity");
    let base = buffer.as_raw();
    let start = pattern(granularity / 4, 1);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&start)
        .unwrap();
    for size in [granularity + 1, 4 * granularity, 9 * granularity] {
        assert_eq!(buffer.grow(size).unwrap(), Growth::InPlace);
        assert_eq!(buffer.as_raw(), base);
        assert!(buffer.len() >= size && buffer.len().is_multiple_of(granularity));
    }
    assert_eq!(buffer.grow(granularity).unwrap(), Growth::Unchanged);
    assert_eq!(buffer.chunk_count(), 4);
    let all = buffer.as_slice::<u32>().unwrap();
    assert_eq!(all.slice(..start.len()).unwrap().to_vec().unwrap(), start);
    let tail = pattern(granularity / 4, 2);
    let n = all.len();
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .slice_mut(n - tail.len()..)
        .unwrap()
        .copy_from_host(&tail)
        .unwrap();
    let back = buffer.as_slice::<u32>().unwrap().to_vec().unwrap();
    assert_eq!(&back[..start.len()], start);
    assert_eq!(&back[n - tail.len()..], tail);
    buffer.close().unwrap();
}

/// A growable buffer moved off a stream held busy (a host function waits for a gate) sees the
/// fill queued there before the move; moved off a finished stream, it sees the new value.
fn a_growable_buffer_moved_off_a_busy_stream_sees_the_work_queued_before() {
    let (device, busy, vmm) = setup(VirtualMemoryResourceOptions::default());
    let other = device.create_stream(Default::default()).unwrap();
    let mut buffer = vmm.growable(4 * MIB, 4 * MIB, &busy).unwrap();
    buffer.as_mut_slice::<u32>().unwrap().fill(1).unwrap();
    busy.sync().unwrap();
    let (open, gate) = std::sync::mpsc::channel::<()>();
    busy.launch_host_func(move || {
        let _ = gate.recv();
    })
    .unwrap();
    buffer.as_mut_slice::<u32>().unwrap().fill(7).unwrap();
    assert!(!busy.query().unwrap(), "the gate holds the fill");
    buffer.set_stream(&other).unwrap();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        open.send(()).unwrap();
    });
    let seen = buffer.as_slice::<u32>().unwrap().to_vec().unwrap();
    opener.join().unwrap();
    assert!(seen.iter().all(|&v| v == 7), "the fill was missed");
    buffer.as_mut_slice::<u32>().unwrap().fill(3).unwrap();
    other.sync().unwrap();
    buffer.set_stream(&busy).unwrap();
    assert!(buffer.stream().same_as(&busy));
    let back = buffer.as_slice::<u32>().unwrap().to_vec().unwrap();
    assert!(back.iter().all(|&v| v == 3));
    buffer.close().unwrap();
}

fn growth_past_the_reservation_moves_without_losing_contents() {
    let (_device, stream, vmm) = setup(VirtualMemoryResourceOptions::default());
    let granularity = vmm.granularity();
    let mut buffer = vmm.growable(granularity, 2 * granularity, &stream).unwrap();
    let start = pattern(granularity / 4, 3);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&start)
        .unwrap();
    let base = buffer.as_raw();
    assert_eq!(buffer.grow(2 * granularity).unwrap(), Growth::InPlace);
    let growth = buffer.grow(5 * granularity).unwrap();
    assert_eq!(growth, Growth::Moved { from: base });
    assert_ne!(buffer.as_raw(), base);
    assert!(buffer.capacity() >= 5 * granularity);
    assert_eq!(buffer.chunk_count(), 3);
    let back = buffer.as_slice::<u32>().unwrap().to_vec().unwrap();
    assert_eq!(
        &back[..start.len()],
        start,
        "the same physical memory, moved"
    );
    buffer.close().unwrap();
}

fn growth_beyond_max_size_is_refused_and_leaves_the_buffer_whole() {
    let device = Device::new(0).unwrap();
    let granularity = VirtualMemoryResource::new(&device, Default::default())
        .unwrap()
        .granularity();
    let (_device, stream, vmm) =
        setup(VirtualMemoryResourceOptions::default().max_size(4 * granularity));
    let mut buffer = vmm.growable(granularity, granularity, &stream).unwrap();
    let start = pattern(granularity / 4, 4);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&start)
        .unwrap();
    let error = buffer.grow(4 * granularity + 1).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("max_size"), "{error}");
    assert_eq!(buffer.len(), granularity);
    assert!(matches!(vmm.map(0).unwrap_err(), Error::InvalidArgument(_)));
    assert!(matches!(
        vmm.growable(5 * granularity, 0, &stream).unwrap_err(),
        Error::InvalidArgument(_)
    ));
    assert!(matches!(
        buffer.grow(4 * granularity).unwrap(),
        Growth::Moved { .. }
    ));
    let back = buffer.as_slice::<u32>().unwrap().to_vec().unwrap();
    assert_eq!(&back[..start.len()], start);
    buffer.close().unwrap();
}

fn buffers_from_the_resource_round_trip() {
    let (_device, stream, vmm) = setup(VirtualMemoryResourceOptions::default());
    let values = pattern(300_000, 5);
    let buffer = vmm.allocate_from_host(&values, &stream).unwrap();
    assert_eq!(
        buffer.len(),
        values.len() * 4,
        "the size asked, mapped rounded up"
    );
    assert_eq!(buffer.to_vec::<u32>().unwrap(), values);
    let mut zeroed = vmm.allocate_zeroed::<u32>(1000, &stream).unwrap();
    assert!(
        zeroed
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .all(|&value| value == 0)
    );
    let staging = vmm.allocate_from_host(&values[..1000], &stream).unwrap();
    zeroed.copy_from(&staging).unwrap();
    assert_eq!(zeroed.to_vec::<u32>().unwrap(), values[..1000]);
    buffer.close().unwrap();
    zeroed.close().unwrap();
}

fn the_floor_path_maps_and_unmaps_a_gib() {
    let (device, _stream, vmm) = setup(VirtualMemoryResourceOptions::default());
    if device.mem_info().unwrap().free < 2 << 30 {
        eprintln!("skipped: less than 2 GiB free");
        return;
    }
    let mapping = vmm.map(1 << 30).unwrap();
    assert_eq!(mapping.len(), 1 << 30);
    let values = pattern(1024, 6);
    write_raw(mapping.as_raw() + (1 << 30) - 4096, &values);
    assert_eq!(read_raw(mapping.as_raw() + (1 << 30) - 4096, 1024), values);
    mapping.close().unwrap();
}

fn a_thread_without_a_current_context_maps() {
    let device = Device::new(0).unwrap();
    let vmm = VirtualMemoryResource::new(&device, Default::default()).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    std::thread::spawn(move || {
        // No context is current on this new thread.
        let mapping = vmm.map(1).unwrap();
        assert_eq!(mapping.len(), vmm.granularity());
        mapping.close().unwrap();
        // Buffers of the resource copy on their stream, whatever is current.
        let values = pattern(1024, 3);
        let mut buffer = vmm.allocate_array::<u32>(1024, &stream).unwrap();
        buffer.copy_from_host(&values).unwrap();
        assert_eq!(buffer.to_vec::<u32>().unwrap(), values);
        let mut growable = vmm.growable(4096, 4 * vmm.granularity(), &stream).unwrap();
        growable.grow(2 * vmm.granularity()).unwrap();
        let values = pattern(2 * vmm.granularity() / 4, 4);
        growable
            .as_mut_slice::<u32>()
            .unwrap()
            .copy_from_host(&values)
            .unwrap();
        assert_eq!(
            growable.as_slice::<u32>().unwrap().to_vec().unwrap(),
            values
        );
    })
    .join()
    .unwrap();
}

fn a_second_device_reads_through_access_set_later() {
    let Some(gpus) = devices(2) else { return };
    let (owner, reader) = (gpus[0], gpus[1]);
    let owner_stream = owner.create_stream(Default::default()).unwrap();
    let vmm = VirtualMemoryResource::new(&owner, Default::default()).unwrap();
    let granularity = vmm.granularity();
    let mut buffer = vmm
        .growable(granularity, 4 * granularity, &owner_stream)
        .unwrap();
    buffer.set_access(&[(reader, VmmAccess::Read)]).unwrap();
    buffer.grow(2 * granularity).unwrap(); // the new chunk gets the reader's access too
    let values = pattern(2 * granularity / 4, 7);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&values)
        .unwrap();
    owner_stream.sync().unwrap();

    reader.set_current().unwrap();
    let reader_stream = reader.create_stream(Default::default()).unwrap();
    let kernel = Program::new(SOURCE, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
        .get_kernel("copy_u32")
        .unwrap();
    let mut out = reader
        .default_memory_resource()
        .unwrap()
        .allocate_zeroed::<u32>(values.len(), &reader_stream)
        .unwrap();
    let config = LaunchConfig::for_num_elements(values.len(), 256).unwrap();
    // SAFETY: the kernel reads `n` u32s of the VMM buffer (readable by the reader) and writes
    // `n` u32s of `out`.
    unsafe {
        launch(
            &reader_stream,
            &config,
            &kernel,
            (buffer.as_raw(), &mut out, values.len()),
        )
        .unwrap();
    }
    assert_eq!(
        out.to_vec::<u32>().unwrap(),
        values,
        "GPU 1 read GPU 0's memory"
    );
    drop(out);
    buffer.close().unwrap();
}

fn peers_in_the_options_get_access_to_every_allocation() {
    let Some(gpus) = devices(2) else { return };
    let vmm = VirtualMemoryResource::new(
        &gpus[0],
        VirtualMemoryResourceOptions::default().peers(vec![gpus[1]]),
    )
    .unwrap();
    let mapping = vmm.map(1).unwrap();
    let values = pattern(1024, 8);
    gpus[0].set_current().unwrap(); // the raw synchronous copies need a current context
    write_raw(mapping.as_raw(), &values);
    gpus[1].set_current().unwrap();
    let stream = gpus[1].create_stream(Default::default()).unwrap();
    let pool = gpus[1].default_memory_resource().unwrap();
    let out = pool.allocate_zeroed::<u32>(1024, &stream).unwrap();
    let driver = cuda_sys::driver().unwrap();
    // SAFETY: both ranges hold 4096 bytes; GPU 1 may read the mapping (a peer).
    check("cuMemcpyDtoDAsync_v2", unsafe {
        driver.cuMemcpyDtoDAsync_v2(out.as_raw(), mapping.as_raw(), 4096, stream.as_raw())
    });
    assert_eq!(out.to_vec::<u32>().unwrap(), values);
    drop(out);
    mapping.close().unwrap();
}

/// A POSIX-fd resource, or `None` (after saying why) where the device has none.
fn exportable() -> Option<(Stream, VirtualMemoryResource)> {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let options = VirtualMemoryResourceOptions::default().handle_type(IpcHandleType::PosixFd);
    match VirtualMemoryResource::new(&device, options) {
        Ok(vmm) => Some((device.create_stream(Default::default()).unwrap(), vmm)),
        Err(error) if error.is_not_supported() => {
            eprintln!("skipped: {error}");
            None
        }
        Err(error) => panic!("{error}"),
    }
}

fn export_without_a_handle_type_is_refused() {
    let (_device, stream, vmm) = setup(VirtualMemoryResourceOptions::default());
    let buffer = vmm.growable(1, 1, &stream).unwrap();
    let error = buffer.export_fds().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("handle_type"), "{error}");
}

fn chunks_export_and_import_in_process() {
    let Some((stream, vmm)) = exportable() else {
        return;
    };
    let granularity = vmm.granularity();
    let mut buffer = vmm.growable(granularity, 4 * granularity, &stream).unwrap();
    buffer.grow(2 * granularity).unwrap();
    let values = pattern(2 * granularity / 4, 9);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&values)
        .unwrap();
    let exported = buffer.export_fds().unwrap();
    assert_eq!(exported.len(), 2);
    let parts: Vec<(BorrowedFd<'_>, VmmShareDescriptor)> = exported
        .iter()
        .map(|(fd, descriptor)| {
            let bytes = descriptor.to_bytes();
            (fd.as_fd(), VmmShareDescriptor::from_bytes(&bytes).unwrap())
        })
        .collect();
    let imported = vmm.import_fds(&parts).unwrap();
    assert_ne!(imported.as_raw(), buffer.as_raw());
    assert_eq!(read_raw(imported.as_raw(), values.len()), values);
    write_raw(imported.as_raw(), &[77]);
    assert_eq!(
        buffer
            .as_slice::<u32>()
            .unwrap()
            .slice(..1)
            .unwrap()
            .to_vec()
            .unwrap(),
        [77],
        "one physical memory behind both"
    );
    imported.close().unwrap();
    buffer.close().unwrap();
}

fn a_failed_import_undoes_its_mappings_and_leaves_the_export_usable() {
    let Some((stream, vmm)) = exportable() else {
        return;
    };
    let granularity = vmm.granularity();
    let mut buffer = vmm
        .growable(2 * granularity, 2 * granularity, &stream)
        .unwrap();
    buffer.grow(3 * granularity).unwrap();
    let values = pattern(3 * granularity / 4, 10);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&values)
        .unwrap();
    let exported = buffer.export_fds().unwrap();
    let null = std::fs::File::open("/dev/null").unwrap();
    let mut parts: Vec<_> = exported.iter().map(|(fd, d)| (fd.as_fd(), *d)).collect();
    parts[1].0 = null.as_fd();
    let error = vmm.import_fds(&parts).unwrap_err();
    assert!(
        error.cuda_code().is_some(),
        "the driver refused the bad fd: {error}"
    );
    // One chunk of three: refused before the driver.
    assert!(matches!(
        vmm.import_fds(&parts[..1]).unwrap_err(),
        Error::InvalidArgument(_)
    ));
    let good: Vec<_> = exported.iter().map(|(fd, d)| (fd.as_fd(), *d)).collect();
    let imported = vmm.import_fds(&good).unwrap();
    assert_eq!(read_raw(imported.as_raw(), values.len()), values);
    imported.close().unwrap();
    assert_eq!(buffer.as_slice::<u32>().unwrap().to_vec().unwrap(), values);
    buffer.close().unwrap();
}

fn fabric_handles_work_or_say_they_are_unsupported() {
    let device = Device::new(0).unwrap();
    let options = VirtualMemoryResourceOptions::default().handle_type(IpcHandleType::Fabric);
    match VirtualMemoryResource::new(&device, options) {
        Err(error) => assert!(error.is_not_supported(), "{error}"),
        Ok(vmm) => {
            let mapping = vmm.map(1).unwrap();
            match mapping.export_fabric() {
                Ok(exported) => {
                    let imported = vmm.import_fabric(&exported).unwrap();
                    write_raw(mapping.as_raw(), &[5]);
                    assert_eq!(read_raw(imported.as_raw(), 1), [5]);
                    imported.close().unwrap();
                }
                // Fabric export also needs an IMEX channel, which a machine may not grant.
                Err(error) => eprintln!("skipped: fabric export: {error}"),
            }
            mapping.close().unwrap();
        }
    }
}

fn chunks_export_to_a_child_process() {
    let Some((stream, vmm)) = exportable() else {
        return;
    };
    let granularity = vmm.granularity();
    let mut buffer = vmm.growable(granularity, granularity, &stream).unwrap();
    buffer.grow(2 * granularity).unwrap(); // moved: the chunks are exported from the new range
    let values = pattern(2 * granularity / 4, 11);
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .copy_from_host(&values)
        .unwrap();
    let exported = buffer.export_fds().unwrap();
    let path = std::env::temp_dir().join(format!("cuda-safe-vmm-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = Listener::bind(&path).unwrap();
    let mut process = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, &path)
        .spawn()
        .unwrap();
    let channel = listener.accept().unwrap();
    channel.set_timeout(Some(Duration::from_secs(60))).unwrap();
    channel.send_vmm_chunks(&exported).unwrap();
    let answer = channel.recv_bytes().unwrap();
    assert!(process.wait().unwrap().success(), "the child failed");
    let mismatches = u64::from_le_bytes(answer.try_into().expect("8 bytes"));
    assert_eq!(mismatches, 0, "the child read other data");
    buffer.close().unwrap();
}

/// The child: imports the chunks its parent sends, checks the pattern, answers with the
/// number of wrong values.
fn child_main(socket: &str) -> ExitCode {
    let channel = Channel::connect(socket).unwrap();
    channel.set_timeout(Some(Duration::from_secs(60))).unwrap();
    let chunks = channel.recv_vmm_chunks().unwrap();
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let vmm = VirtualMemoryResource::new(&device, Default::default()).unwrap();
    let parts: Vec<_> = chunks
        .iter()
        .map(|(fd, desc)| (fd.as_fd(), *desc))
        .collect();
    let mapping = vmm.import_fds(&parts).unwrap();
    let values = read_raw(mapping.as_raw(), mapping.len() / 4);
    let wrong = values
        .iter()
        .zip(pattern(values.len(), 11))
        .filter(|(got, want)| *got != want)
        .count() as u64;
    channel.send_bytes(&wrong.to_le_bytes()).unwrap();
    mapping.close().unwrap();
    ExitCode::SUCCESS
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    growth_keeps_contents_and_address,
    growth_past_the_reservation_moves_without_losing_contents,
    a_growable_buffer_moved_off_a_busy_stream_sees_the_work_queued_before,
    growth_beyond_max_size_is_refused_and_leaves_the_buffer_whole,
    buffers_from_the_resource_round_trip,
    the_floor_path_maps_and_unmaps_a_gib,
    a_thread_without_a_current_context_maps,
    a_second_device_reads_through_access_set_later,
    peers_in_the_options_get_access_to_every_allocation,
    export_without_a_handle_type_is_refused,
    chunks_export_and_import_in_process,
    a_failed_import_undoes_its_mappings_and_leaves_the_export_usable,
    fabric_handles_work_or_say_they_are_unsupported,
    chunks_export_to_a_child_process,
];

/// The child's part, when this process is this file's child ([`CHILD_ENV`] naming the
/// socket): its exit code; `None` otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<ExitCode> {
    let socket = std::env::var(CHILD_ENV).ok()?;
    Some(child_main(&socket))
}
