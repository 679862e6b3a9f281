//! Safe CUDA for Rust, modelled on NVIDIA's `cuda.core`: compile CUDA C++ at run time with
//! NVRTC ([`Program`]), load it once for every context ([`ObjectCode`], [`Kernel`]), launch
//! with checked arguments ([`launch`]), manage devices, contexts, streams, events and memory
//! ([`Device`], [`Context`], [`Stream`], [`Event`], [`DeviceMemoryResource`], [`Buffer`]),
//! cache compiled programs ([`cache`], [`KernelCache`]), split a GPU's SMs between jobs (green
//! contexts: [`SplitRequest`], [`Device::create_green_context`]), record work once and replay
//! it as a CUDA graph ([`Graph`], [`Capture`], [`GraphExec`]) and watch GPUs through NVML
//! ([`system`]). Its [`nvtx`] ranges and marks name what a profiler shows, at one relaxed load
//! when none runs. The annex crates stand beside it, on its public API: `cuda-safe-libs`
//! (cuBLAS, cuBLASLt, cuRAND), `cuda-safe-nccl` (collectives and the multi-process bootstrap),
//! `cuda-safe-ipc` (a UNIX-socket channel for shared memory and events) and `cuda-safe-async`
//! (futures of GPU work); a crate wrapping another CUDA library builds on [`handle`],
//! [`ordering`], [`callback`], [`cu!`] and [`Error::Library`] as they do.
//!
//! ```no_run
//! use cuda_safe::{launch, CodeKind, Device, LaunchConfig, Program, ProgramOptions};
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
//! let program = Program::new(source, ProgramOptions::default())?;
//! let kernel = program.compile(CodeKind::Cubin)?.load()?.get_kernel("twice")?;
//!
//! let mut x = pool.allocate_from_host(&[1.5f32; 1024], &stream)?;
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
//!
//! The modules stand on floors (`docs/architecture.md` draws them): a module imports only
//! from its own floor or those below, naming the defining module; this root only re-exports.
//!
//! Features: `cuda-12` (the default ABI) or `cuda-13`; `disk-cache` (default: the on-disk
//! program cache), `nvjitlink` (default: nvJitLink as the linker's backend), `fatbin`
//! (`FatbinBuilder`), `half`, `serde`, `tracing` and `cudarc`. With `default-features = false`
//! and one ABI the core builds the in-memory cache, the keys and the driver's linker only.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use cuda_sys as sys;
#[cfg(feature = "fatbin")]
#[cfg_attr(docsrs, doc(cfg(feature = "fatbin")))]
pub use nvfatbin_sys;
#[cfg(feature = "nvjitlink")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvjitlink")))]
pub use nvjitlink_sys;
pub use nvml_sys;
pub use nvrtc_sys;

// Ground: no driver object, used by everything above.
mod abi;
pub mod callback;
mod code;
mod driver;
mod error;
mod ffi;
pub mod handle;
mod hex;
mod setters;
mod trace;
mod user_dirs;
mod user_file;
mod uuid;

// Floor 1: compiled bytes by key, and the compiler versions keys name.
pub mod cache;
mod library_note;

// Floor 2: the driver core.
mod context;
mod device;
mod event;
mod memory;
pub mod ordering;
mod stream;

// Floor 3: what runs on the core.
mod graph;
mod green;
mod kernel;
mod launch;
mod link;
mod module;
mod program;
mod tma;

// Beside: NVML, on the ground floor only.
pub mod system;
// Beside: NVTX annotations for Nsight, on the ground floor only.
pub mod nvtx;

// Top: built from the floors below.
pub mod checkpoint;
#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
pub mod cudarc_bridge;
pub mod dlpack;
#[cfg(unix)]
pub use memory::ipc;
pub use memory::managed;
mod kernels;
mod nvml_bridge;

pub use code::{CodeKind, CompiledCode};
pub use context::{Context, ScopedCurrent};
pub use device::{Device, DeviceProperties, LaunchLimits, MemInfo};
pub use driver::cuda_driver_version;
#[allow(deprecated)]
pub use driver::driver_version;
pub use error::{Error, LibraryError, LibraryFailure, Result};
pub use event::{Event, EventOptions};
pub use graph::{
    ArenaUsage, Capture, CaptureDependency, CaptureMode, CaptureStatus, ConditionalHandle,
    CopyNodeSide, DeviceGraphHandle, DotFlags, Graph, GraphAllocation, GraphArena, GraphExec,
    InstantiateOptions, KernelEdge, KernelNode, Node, RecaptureReport, StaticBuffer,
};
pub use green::{
    DeviceResources, GreenContextOptions, GroupLayout, PartitionRules, SmResource, SmSplit,
    SplitPlan, SplitRequest, WorkqueueConfig, WorkqueueScope,
};
pub use kernel::{Kernel, KernelAttributes, KernelOccupancy, ParamInfo};
pub use kernels::KernelCache;
pub use launch::{
    AccessPolicyWindow, AccessProperty, AttributeSupport, ClusterScheduling, DeviceRepr, Dim3,
    KernelArg, KernelArgs, LaunchAttributes, LaunchConfig, MemSyncDomain, MemSyncDomainMap,
    ProgrammaticEvent, launch, launch_with,
};
#[allow(deprecated)]
pub use link::LinkedCode;
#[cfg(feature = "nvjitlink")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvjitlink")))]
pub use link::nvjitlink_version;
#[cfg(feature = "fatbin")]
#[cfg_attr(docsrs, doc(cfg(feature = "fatbin")))]
pub use link::{FatbinBuilder, FatbinCompression, FatbinHost, FatbinOptions};
pub use link::{LinkInput, LinkInputKind, Linker, LinkerBackend, LinkerOptions};
pub use memory::copies::{
    ArrayDescriptor, ArrayFlags, ArrayFormat, Copy3d, CudaArray, HostPitched, HostPitchedMut,
    Offset3, Pitched, PitchedBuffer, PitchedMut,
};
pub use memory::managed::{Advice, MemoryLocation, RangeAttributes};
pub use memory::peer::PeerAttributes;
pub use memory::texture::{
    AddressMode, FilterMode, MipmappedArray, ReadMode, SurfaceObject, TextureDescriptor,
    TextureLimits, TextureObject,
};
pub use memory::vmm::{
    FabricHandle, GrowableBuffer, Growth, VirtualMapping, VirtualMemoryResource,
    VirtualMemoryResourceOptions, VmmAccess, VmmGranularity, VmmLocation, VmmShareDescriptor,
};
pub use memory::{
    Buffer, DeviceMemoryResource, DeviceSlice, DeviceSliceMut, IpcHandleType,
    ManagedMemoryResource, MemoryResource, PinnedBlock, PinnedMemoryResource, PoolOptions,
    SyncDeviceMemoryResource,
};
pub use module::ObjectCode;
pub use program::{
    CompiledProgram, CppStandard, CudaHeaders, Pch, PchStatus, Program, ProgramOptions, Toolchain,
    nvrtc_pch_heap_size, nvrtc_set_pch_heap_size, nvrtc_supported_archs, nvrtc_version,
};
pub use stream::{Stream, StreamOptions, WeakStream};
pub use tma::{
    Im2colOptions, Interleave, L2Promotion, MAX_RANK as TENSOR_MAP_MAX_RANK, Swizzle, TensorMap,
    TensorMapDataType, TensorOptions, TiledOptions,
};
pub use uuid::{Uuid, UuidParseError};

/// What the exported macros ([`cu!`], [`cu_ready!`]) expand to: not an API of its own.
#[doc(hidden)]
pub mod __private {
    pub use crate::callback::refuse_inside_callback;
    pub use crate::error::{check, check_ready};
    /// The annexes' hex digits (NCCL unique ids, job secrets): the core's one implementation.
    pub mod hex {
        pub use crate::hex::{decode, decode_array, encode, write};
    }
}
