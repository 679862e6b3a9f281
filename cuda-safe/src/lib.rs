//! Safe CUDA for Rust, modelled on NVIDIA's `cuda.core`: devices, contexts, streams, events,
//! memory resources and buffers (more to come: NVRTC programs, kernels and launches, program
//! caches, green contexts), plus GPU monitoring through NVML in [`system`].
//!
//! ```no_run
//! use cuda_safe::{Device, PinnedMemoryResource};
//!
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let pinned = PinnedMemoryResource::new(&device)?;
//!
//! let mut host = pinned.allocate(1 << 20, &stream)?;
//! host.as_host_mut_slice::<f32>()?.fill(2.0);
//! let mut on_gpu = pool.allocate(1 << 20, &stream)?;
//! on_gpu.copy_from(&host)?; // asynchronous: pinned source, same stream
//! assert_eq!(on_gpu.to_vec::<f32>()?[0], 2.0);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Every handle keeps what it depends on alive through `Arc`s (a buffer its resource and
//! stream, a stream its context), `Drop` never panics (it logs through the `log` crate), and
//! each type has a `close` that returns the error instead. The raw layers are re-exported for
//! calls the safe layer does not wrap: [`sys`] (the driver API), [`nvrtc_sys`] and
//! [`nvml_sys`]. Each loads its library at run time, so this crate builds and links on machines
//! without CUDA.

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
pub mod system;

pub use context::Context;
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
