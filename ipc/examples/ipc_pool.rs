//! Two processes, one buffer: the parent fills a buffer of a shareable pool and hands the pool
//! and the buffer to a child process over a UNIX socket; the child waits for the parent's IPC
//! event, reads the buffer, doubles every element with a kernel of its own, and hands back an
//! IPC event after which the parent reads the result. The child then gives the buffer back and
//! the parent frees it (the protocol of `cuda_safe::ipc`).
//!
//! It also prints, as `FIG` lines, the export time (pool handle + buffer descriptor) and the
//! child's import time (pool + buffer), measured as `multi_gpu_floor.c` measures them.
//!
//! ```text
//! cargo run --release -p cuda-safe --example ipc_pool
//! ```

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use cuda_safe::{
    CodeKind, Device, DeviceMemoryResource, Event, EventOptions, IpcHandleType, LaunchConfig,
    PoolOptions, Program, ProgramOptions, launch,
};
use cuda_safe_ipc::{Channel, Listener, Released};

/// The crate's errors and the operating system's (starting the child).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The variable that makes this program the child, naming the parent's socket.
const CHILD_ENV: &str = "CUDA_SAFE_IPC_POOL_SOCKET";
/// Elements in the shared buffer (64 MiB of `u32`).
const LEN: usize = 16 << 20;

const DOUBLE: &str = r#"
extern "C" __global__ void double_plus_one(unsigned* x, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2u * x[i] + 1u;
}
"#;

fn main() -> ExitCode {
    let result = match std::env::var(CHILD_ENV) {
        Ok(path) => child(&path),
        Err(_) => parent(),
    };
    result.unwrap_or_else(|error| {
        eprintln!("error: {error}");
        ExitCode::FAILURE
    })
}

fn ipc_event(device: &Device) -> cuda_safe::Result<Event> {
    device.create_event(EventOptions::default().ipc(true))
}

fn parent() -> Result<ExitCode> {
    let device = Device::new(0)?;
    let stream = device.create_stream(Default::default())?;
    let pool = DeviceMemoryResource::new_pool(
        &device,
        PoolOptions::default().ipc(IpcHandleType::PosixFd),
    )?;
    let input: Vec<u32> = (0..LEN as u32).map(|i| i.wrapping_mul(7)).collect();
    let mut buffer = pool.allocate_from_host(&input, &stream)?;

    let socket = std::env::temp_dir().join(format!("ipc_pool-{}.sock", std::process::id()));
    let listener = Listener::bind(&socket)?;
    let mut child = Command::new(std::env::current_exe()?)
        .env(CHILD_ENV, listener.path())
        .spawn()?;
    // Bounded: a child that dies before it connects does not leave the parent waiting.
    let channel = listener.accept_timeout(Duration::from_secs(60))?;
    channel.set_timeout(Some(Duration::from_secs(60)))?;

    // Export exactly what the floor times: the pool's handle and the buffer's descriptor.
    stream.sync()?;
    let started = Instant::now();
    let exported = pool.export_pool()?;
    let descriptor = buffer.export_ipc()?;
    let export_us = started.elapsed().as_secs_f64() * 1e6;
    channel.send_exported_pool(&exported)?;
    channel.send_buffer_descriptor(&descriptor)?;

    // Work queued after the export reaches the child through an IPC event.
    buffer
        .as_mut_slice::<u32>()?
        .slice_mut(..4)?
        .fill(1000u32)?;
    let ready = ipc_event(&device)?;
    stream.record(&ready)?;
    channel.send_event(&ready)?;

    let import_us: f64 = String::from_utf8_lossy(&channel.recv_bytes()?)
        .parse()
        .unwrap_or(f64::NAN);
    let doubled = channel.recv_event(&device.context()?)?;
    stream.wait(&doubled)?;
    let output = buffer.to_vec::<u32>()?;
    let wrong = output
        .iter()
        .enumerate()
        .filter(|&(i, &x)| {
            let before = if i < 4 { 1000 } else { input[i] };
            x != before.wrapping_mul(2).wrapping_add(1)
        })
        .count();
    let released = channel.wait_released()?;
    drop(buffer); // only now: the child has unmapped it
    let status = child.wait()?;

    println!(
        "parent: shared {} MiB with the child (pid {})",
        (LEN * 4) >> 20,
        child.id()
    );
    println!(
        "parent: the child doubled every element: {}",
        if wrong == 0 { "OK" } else { "WRONG" }
    );
    println!("parent: buffer given back: {released:?}; child exit {status}");
    println!("FIG ipc_pool_export {export_us:.4} us");
    println!("FIG ipc_pool_import_pointer {import_us:.4} us");
    Ok(
        if wrong == 0 && released == Released::Acknowledged && status.success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

fn child(socket: &str) -> Result<ExitCode> {
    let channel = Channel::connect(socket)?;
    channel.set_timeout(Some(Duration::from_secs(60)))?;
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;

    // The import first, timed as the floor's child times it (nothing else done before).
    let exported = channel.recv_exported_pool()?;
    let descriptor = channel.recv_buffer_descriptor()?;
    let started = Instant::now();
    let pool = DeviceMemoryResource::import_pool(exported)?;
    let mut shared = pool.import_buffer(&descriptor, &stream)?;
    let import_us = started.elapsed().as_secs_f64() * 1e6;

    let kernel = Program::new(DOUBLE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("double_plus_one")?;

    let ready = channel.recv_event(&device.context()?)?;
    stream.wait(&ready)?;
    let config = LaunchConfig::for_num_elements(LEN, 256)?;
    // SAFETY: the kernel reads and writes LEN elements of `shared`, which holds LEN u32s.
    unsafe { launch(&stream, &config, &kernel, (&mut shared, LEN))? };
    let doubled = ipc_event(&device)?;
    stream.record(&doubled)?;
    channel.send_bytes(format!("{import_us}").as_bytes())?;
    channel.send_event(&doubled)?;
    println!(
        "child: imported {} MiB in {import_us:.0} us and doubled it",
        shared.len() >> 20
    );
    channel.release(shared)?;
    Ok(ExitCode::SUCCESS)
}
