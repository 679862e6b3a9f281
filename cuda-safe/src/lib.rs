//! Safe CUDA for Rust, modelled on NVIDIA's `cuda.core`: compile CUDA C++ at run time with
//! NVRTC ([`Program`]), load it once for every context ([`ObjectCode`], [`Kernel`]), launch
//! with checked arguments ([`launch`]), manage devices, contexts, streams, events and memory
//! ([`Device`], [`Context`], [`Stream`], [`Event`], [`DeviceMemoryResource`], [`Buffer`]),
//! cache compiled programs ([`cache`]), split a GPU's SMs between jobs (green contexts:
//! [`SplitRequest`], [`Device::create_green_context`]) and watch GPUs through NVML
//! ([`system`]).
//!
//! ```no_run
//! use cuda_safe::{launch, CodeKind, Device, LaunchConfig, ObjectCode, Program, ProgramOptions};
//!
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//!
//! let source = r#"extern "C" __global__ void twice(float* x, size_t n) {
//!     size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= 2.0f;
//! }"#;
//! let compiled = Program::new(source, ProgramOptions::default())?.compile(CodeKind::Cubin)?;
//! let kernel = ObjectCode::load(&compiled.program)?.get_kernel("twice")?;
//!
//! let mut x = pool.allocate(4 * 1024, &stream)?;
//! x.copy_from_host(&[1.5f32; 1024])?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! // SAFETY: `twice` updates 1024 floats, which the buffer holds.
//! unsafe { launch(&stream, &config, &kernel, (&mut x, 1024usize))? };
//! assert_eq!(x.to_vec::<f32>()?[0], 3.0);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Every handle keeps what it depends on alive through `Arc`s (a buffer its resource and
//! stream, a stream its context, a kernel its loaded code), `Drop` never panics (it logs
//! through the `log` crate), and each type has a `close` that returns the error instead. The
//! raw layers are re-exported for calls the safe layer does not wrap: [`sys`] (the driver
//! API), [`nvrtc_sys`] and [`nvml_sys`]. Each loads its library at run time, so this crate
//! builds and links on machines without CUDA.

/// Asserts at compile time that each type is `Send` and `Sync`.
macro_rules! assert_send_sync {
    ($($ty:ty),+ $(,)?) => {
        const _: () = {
            const fn assert_send_sync<T: Send + Sync>() {}
            $(assert_send_sync::<$ty>();)+
        };
    };
}
pub(crate) use assert_send_sync;

pub use cuda_sys as sys;
pub use nvml_sys;
pub use nvrtc_sys;

mod context;
mod device;
mod driver;
mod error;
mod event;
mod green;
mod launch;
mod memory;
mod module;
mod program;
mod stream;

pub mod cache;
pub mod checkpoint;
pub mod dlpack;
pub mod system;

pub use context::{Context, ScopedCurrent};
pub use device::{Device, DeviceProperties, MemInfo, Uuid};
pub use driver::driver_version;
pub use error::{Error, Result};
pub use event::{Event, EventOptions};
pub use green::{
    DeviceResources, GreenContextOptions, PartitionRules, SmResource, SmSplit, SplitPlan,
    SplitRequest, WorkqueueConfig,
};
pub use launch::{DeviceRepr, Dim3, KernelArg, KernelArgs, LaunchConfig, LaunchLimits, launch};
pub use memory::{
    Buffer, DeviceMemoryResource, DeviceSlice, DeviceSliceMut, ManagedMemoryResource,
    MemoryResource, PinnedMemoryResource, PoolOptions,
};
pub use module::{Kernel, KernelAttributes, ObjectCode, ParamInfo};
pub use program::{
    CodeKind, CompiledProgram, CppStandard, Program, ProgramOptions, nvrtc_supported_archs,
    nvrtc_version,
};
pub use stream::{Stream, StreamOptions};

/// Reports an error that a `Drop` cannot return (it never panics): logged at error level.
#[cold]
pub(crate) fn log_drop_error(what: &str, error: &Error) {
    log::error!("cuda-safe: dropping a {what} failed: {error}");
}
