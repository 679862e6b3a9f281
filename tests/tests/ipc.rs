//! Two processes sharing GPU memory: a child imports a pool and a buffer, reads it after the
//! parent's IPC event, modifies it and hands the parent its own IPC event; a child killed while
//! it copies from an imported buffer leaves the parent's memory, pool and context intact; the
//! mistakes refused before the driver.
//!
//! The child is this test binary run again with `CUDA_SAFE_IPC_CHILD=<role>:<socket path>`.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, gpu_file, random_words};
use cuda_safe::ipc::IpcBufferDescriptor;
use cuda_safe::{
    Device, DeviceMemoryResource, Error, Event, EventOptions, IpcHandleType, PoolOptions,
    StreamOptions,
};
use cuda_safe_ipc::{Channel, Listener, Released};

const CHILD_ENV: &str = "CUDA_SAFE_IPC_CHILD";
/// Words in the shared buffer (64 MiB).
const WORDS: usize = 16 << 20;
/// Words the parent overwrites after exporting, ordered by its IPC event.
const HEAD: usize = 1024;
const HEAD_VALUE: u32 = 0xDEAD_BEEF;
const FLIP: u32 = 0x5A5A_5A5A;

/// What the child reads: the random words with the parent's later head.
fn expected_after_parent(data: &[u32]) -> Vec<u32> {
    let mut expected = data.to_vec();
    expected[..HEAD].fill(HEAD_VALUE);
    expected
}

fn shareable_pool(device: &Device) -> DeviceMemoryResource {
    DeviceMemoryResource::new_pool(device, PoolOptions::default().ipc(IpcHandleType::PosixFd))
        .unwrap()
}

/// A socket path of this test's own, and the child started with `role`, connecting to it.
fn start_child(role: &str) -> (Listener, Child) {
    let path: PathBuf =
        std::env::temp_dir().join(format!("cuda-safe-ipc-{}-{role}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = Listener::bind(&path).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, format!("{role}:{}", path.display()))
        .spawn()
        .unwrap();
    (listener, child)
}

fn a_child_process_reads_and_modifies_a_buffer_ordered_by_ipc_events() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = shareable_pool(&device);
    let data = random_words(WORDS, 7);
    let mut buffer = pool.allocate_from_host(&data, &stream).unwrap();
    let (listener, mut child) = start_child("modify");
    let channel = listener.accept().unwrap();
    channel.set_timeout(Some(Duration::from_secs(120))).unwrap();
    channel.send_pool(&pool).unwrap();
    // First a descriptor claiming twice the buffer's size, which the child must refuse.
    let honest = buffer.export_ipc().unwrap();
    let mut bytes = honest.to_bytes();
    bytes[64..].copy_from_slice(&(2 * honest.size() as u64).to_le_bytes());
    let lying = IpcBufferDescriptor::from_bytes(&bytes).unwrap();
    channel.send_buffer_descriptor(&lying).unwrap();
    channel.send_buffer(&buffer).unwrap();
    // Work queued after the export: the child sees it only by waiting for the event.
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .slice_mut(..HEAD)
        .unwrap()
        .fill(HEAD_VALUE)
        .unwrap();
    let ready = Event::new(
        &device.context().unwrap(),
        EventOptions::default().ipc(true),
    )
    .unwrap();
    stream.record(&ready).unwrap();
    channel.send_event(&ready).unwrap();
    let verdict = String::from_utf8(channel.recv_bytes().unwrap()).unwrap();
    assert_eq!(verdict, "read ok", "the child's check of what it read");
    // The child's writes are ordered before its event; wait for it here.
    let written = channel.recv_event(&device.context().unwrap()).unwrap();
    stream.wait(&written).unwrap();
    let got = buffer.to_vec::<u32>().unwrap();
    let expected: Vec<u32> = expected_after_parent(&data)
        .iter()
        .map(|word| word ^ FLIP)
        .collect();
    assert!(got == expected, "the child's writes did not arrive whole");
    assert_eq!(channel.wait_released().unwrap(), Released::Acknowledged);
    drop(buffer);
    assert!(child.wait().unwrap().success(), "the child failed");
}

fn a_child_killed_while_copying_from_an_imported_buffer_leaves_the_parent_intact() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = shareable_pool(&device);
    let data = random_words(WORDS, 11);
    let buffer = pool.allocate_from_host(&data, &stream).unwrap();
    let (listener, mut child) = start_child("copy-until-killed");
    let channel = listener.accept().unwrap();
    channel.set_timeout(Some(Duration::from_secs(120))).unwrap();
    channel.send_pool(&pool).unwrap();
    channel.send_buffer(&buffer).unwrap();
    assert_eq!(channel.recv_bytes().unwrap(), b"copying");
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    // The child's mappings went with it: the parent may free now.
    assert_eq!(channel.wait_released().unwrap(), Released::PeerGone);
    assert!(
        buffer.to_vec::<u32>().unwrap() == data,
        "the parent's data changed"
    );
    drop(buffer);
    // The pool and the context still work.
    let mut again = pool.allocate_array::<u32>(WORDS, &stream).unwrap();
    again.fill(3u32).unwrap();
    assert!(again.to_vec::<u32>().unwrap().iter().all(|&word| word == 3));
    drop(again);
    stream.sync().unwrap();
    device.sync().unwrap();
}

fn mistakes_are_refused_before_the_driver() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let private = DeviceMemoryResource::new_pool(&device, PoolOptions::default()).unwrap();
    let error = private.export_pool().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert_eq!(private.ipc_handle_type(), None);
    let shareable = shareable_pool(&device);
    assert_eq!(shareable.ipc_handle_type(), Some(IpcHandleType::PosixFd));
    assert!(!shareable.is_imported());
    let empty = shareable.allocate(0, &stream).unwrap();
    assert!(matches!(empty.export_ipc(), Err(Error::InvalidArgument(_))));
    let buffer = shareable.allocate(4096, &stream).unwrap();
    let _exported = shareable.export_pool().unwrap();
    let descriptor = buffer.export_ipc().unwrap();
    assert_eq!(descriptor.size(), 4096);
    // A buffer is imported through a pool imported from its process, not through its own.
    let error = shareable.import_buffer(&descriptor, &stream).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    // An event without `ipc` has no handle.
    let plain = device.create_event(EventOptions::default()).unwrap();
    assert!(matches!(plain.ipc_handle(), Err(Error::InvalidArgument(_))));
    // A fabric pool where the machine has a fabric; a typed "not supported" where it has not.
    match DeviceMemoryResource::new_pool(&device, PoolOptions::default().ipc(IpcHandleType::Fabric))
    {
        // Without an IMEX channel the export is refused before the driver, which would crash
        // when the pool is destroyed after refusing it (driver 580).
        Ok(pool) => match pool.export_pool() {
            Ok(exported) => println!("fabric pool exported: {:?}", exported.handle_type()),
            Err(error) => {
                println!("fabric export refused: {error}");
                assert!(error.is_not_supported(), "{error}");
            }
        },
        Err(error) => {
            println!("fabric pool refused: {error}");
            assert!(error.is_not_supported(), "{error}");
        }
    }
}

/// The child's side, run when this binary is started with `CHILD_ENV`.
fn child(role: &str, path: &str) -> Result<(), Error> {
    let channel = Channel::connect(path)?;
    channel.set_timeout(Some(Duration::from_secs(120)))?;
    let device = Device::new(0)?;
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = channel.recv_pool()?;
    assert!(pool.is_imported());
    assert!(matches!(
        pool.allocate(4096, &stream),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(pool.export_pool(), Err(Error::InvalidArgument(_))));
    if role == "modify" {
        // A descriptor claiming more than the driver mapped is refused (and unmapped).
        let refused = channel.recv_buffer(&pool, &stream).unwrap_err();
        assert!(matches!(refused, Error::InvalidArgument(_)), "{refused}");
    }
    let mut shared = channel.recv_buffer(&pool, &stream)?;
    assert_eq!(shared.len(), WORDS * 4);
    match role {
        "modify" => {
            let ready = channel.recv_event(&device.context()?)?;
            stream.wait(&ready)?;
            let read = shared.to_vec::<u32>()?;
            let expected = expected_after_parent(&random_words(WORDS, 7));
            let verdict = match read.iter().zip(&expected).position(|(a, b)| a != b) {
                None => "read ok".to_owned(),
                Some(i) => format!("word {i}: read {:#x}, expected {:#x}", read[i], expected[i]),
            };
            channel.send_bytes(verdict.as_bytes())?;
            let flipped: Vec<u32> = read.iter().map(|word| word ^ FLIP).collect();
            // SAFETY: `flipped` lives until the stream has passed the copy (synced below).
            unsafe {
                shared
                    .as_mut_slice::<u32>()?
                    .copy_from_host_async(&flipped)?
            };
            let written = Event::new(&device.context()?, EventOptions::default().ipc(true))?;
            stream.record(&written)?;
            channel.send_event(&written)?;
            stream.sync()?;
            channel.release(shared)
        }
        "copy-until-killed" => {
            let mut own = device.allocate(WORDS * 4, &stream)?;
            for _ in 0..20_000 {
                own.copy_from(&shared)?;
            }
            channel.send_bytes(b"copying")?;
            stream.sync()?;
            std::thread::sleep(Duration::from_secs(600));
            Ok(())
        }
        other => panic!("unknown child role {other}"),
    }
}

fn buffers_of_every_size_are_exported_once_their_pool_is() {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = shareable_pool(&device);
    let early = pool.allocate(4096, &stream).unwrap();
    let error = early.export_ipc().unwrap_err();
    assert!(
        matches!(error, Error::InvalidArgument(_))
            && error.to_string().contains("export the pool first"),
        "{error}"
    );
    let _exported = pool.export_pool().unwrap();
    early.export_ipc().unwrap();
    for size in [1, 4096, 1 << 20, 2 << 20, (2 << 20) + 1, 64 << 20] {
        let buffer = pool.allocate(size, &stream).unwrap();
        assert_eq!(buffer.export_ipc().unwrap().size(), size);
    }
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    a_child_process_reads_and_modifies_a_buffer_ordered_by_ipc_events,
    a_child_killed_while_copying_from_an_imported_buffer_leaves_the_parent_intact,
    mistakes_are_refused_before_the_driver,
    buffers_of_every_size_are_exported_once_their_pool_is,
];

/// The child's part, when this process is one of this file's children ([`CHILD_ENV`] set to
/// `role:path`): its exit code; `None` otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<std::process::ExitCode> {
    let spec = std::env::var(CHILD_ENV).ok()?;
    let (role, path) = spec.split_once(':').expect("role:path");
    Some(match child(role, path) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("child ({role}): {error}");
            std::process::ExitCode::FAILURE
        }
    })
}
