//! Launching kernels: the launch configuration, typed arguments and `launch`.
//!
//! ```no_run
//! use cuda_safe::{launch, Device, LaunchConfig, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let kernel = ObjectCode::from_file("saxpy.cubin")?.get_kernel("saxpy")?;
//! let n = 1 << 20;
//! let (x, y) = (pool.allocate(4 * n, &stream)?, pool.allocate(4 * n, &stream)?);
//! let mut out = pool.allocate(4 * n, &stream)?;
//! let config = LaunchConfig::for_num_elements(n, 256)?;
//! // SAFETY: saxpy(float a, const float* x, const float* y, float* out, size_t n) reads and
//! // writes `n` floats of each buffer, which hold exactly that many.
//! unsafe { launch(&stream, &config, &kernel, (2.0f32, &x, &y, &mut out, n))? };
//! stream.sync()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Arguments are a tuple of up to 16 values: scalars ([`DeviceRepr`] types: every integer and
//! float width, `half::f16`/`bf16` with the `half` feature, your `#[repr(C)]` structs through
//! an `unsafe impl DeviceRepr`), and buffers or typed slices, which pass their device address.
//! When the driver reports the kernel's parameter list (CUDA 12.4 on), the count and each size
//! are checked before launching. Nothing is allocated on the heap.

mod args;
mod attributes;
mod config;
mod occupancy;

pub(crate) use args::Keep;
pub use args::{DeviceRepr, KernelArg, KernelArgs};
pub use attributes::{
    AccessPolicyWindow, AccessProperty, AttributeSupport, ClusterScheduling, LaunchAttributes,
    MemSyncDomain, MemSyncDomainMap, ProgrammaticEvent,
};
pub use config::{Dim3, LaunchConfig};

use crate::context::Context;
use crate::error::{Error, Result, cu};
use crate::kernel::{Kernel, ParamInfo, Params};
use crate::ordering::ForeignStreams;
use crate::stream::Stream;
use cuda_sys::{
    CUfunction, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig, CUresult, CUstream,
};

/// Attribute slots on the stack for one `cuLaunchKernelEx` (or one graph kernel node): the
/// cluster shape, cooperation, and every [`LaunchAttributes`] field.
pub(crate) const ATTRIBUTE_SLOTS: usize = 10;

/// Checks the arguments against the kernel's parameter list (read in `context` the first
/// time), when the driver gives one, or against the parameters it gave before failing.
#[inline]
pub(crate) fn check_args(
    kernel: &Kernel,
    context: &Context,
    sizes: &[usize],
    names: &[&'static str],
) -> Result<()> {
    match kernel.params_in(context) {
        Some(params) if !params.fit(sizes) => Err(args_mismatch(kernel, params, sizes, names)),
        _ => Ok(()),
    }
}

/// What differs between a kernel's parameters and the arguments given.
#[cold]
fn args_mismatch(
    kernel: &Kernel,
    params: &Params,
    sizes: &[usize],
    names: &[&'static str],
) -> Error {
    let complete = params.complete();
    let params: &[ParamInfo] = params.list();
    if complete && params.len() != sizes.len() {
        return Error::invalid_argument(format!(
            "kernel `{}` takes {} parameters, {} arguments were given",
            kernel.name(),
            params.len(),
            sizes.len()
        ));
    }
    if params.len() > sizes.len() {
        return Error::invalid_argument(format!(
            "kernel `{}` takes at least {} parameters (the driver failed reading the rest), {} \
             arguments were given",
            kernel.name(),
            params.len(),
            sizes.len()
        ));
    }
    let differing = params
        .iter()
        .zip(sizes)
        .enumerate()
        .find(|(_, (param, size))| param.size != **size);
    match differing {
        Some((index, (param, size))) => Error::invalid_argument(format!(
            "parameter {index} of kernel `{}` is {} bytes, the argument ({}) is {size}",
            kernel.name(),
            param.size,
            names.get(index).copied().unwrap_or("?"),
        )),
        None => Error::invalid_argument(format!(
            "the arguments of kernel `{}` do not fit its parameters",
            kernel.name()
        )),
    }
}

/// Launches `kernel` on `stream` with `config` and `args`: one `cuLaunchKernel`, or one
/// `cuLaunchKernelEx` when the configuration has launch attributes (a cluster, a cooperative
/// launch).
///
/// The configuration is checked against the stream's device and the arguments against the
/// kernel's parameter list before anything reaches the driver; the launch itself is queued.
///
/// The parameter list is read once per kernel (shared by its clones), on its first launch, in
/// the stream's context ([`Kernel::params`]). When the driver cannot report it (older than
/// CUDA 12.4: `cuKernelGetParamInfo` is missing, or it answers `CUDA_ERROR_NOT_SUPPORTED`),
/// arguments are not checked, and nothing is logged. When the read fails otherwise, the
/// failure is logged once for the kernel (error level) and never retried, and this and every
/// later launch of the kernel still checks what the driver did report before failing: at least
/// that many arguments, with those parameters' sizes (a failure at the first parameter leaves
/// nothing to check). The launch is not refused for it.
///
/// A buffer or slice argument whose stream is not `stream` is ordered both ways: the launch
/// waits for the work queued on the buffer's stream, and that stream's later work (the buffer's
/// free, a host view) waits for the launch. This costs nothing when every buffer is on the
/// launch stream.
///
#[doc = cuda_sys::api_doc!(cuLaunchKernel)]
#[doc = cuda_sys::api_doc!(cuLaunchKernelEx)]
/// # Errors
///
/// Nothing is queued when:
/// - [`Error::InvalidArgument`]: the configuration is outside the device's limits
///   ([`LaunchConfig::validate`]), the arguments' count or sizes differ from the kernel's
///   parameters (when the driver reports them; fewer arguments than the parameters it reported
///   before failing, or other sizes for those), or the dynamic shared memory is over the
///   kernel's own limit (the error says to raise it with
///   [`Kernel::set_max_dynamic_shared_memory`]);
/// - [`Error::Unsupported`]: clusters or a cooperative launch on a device without them;
/// - [`Error::Cuda`]: the driver refuses the launch, or ordering it after another stream fails.
///
/// [`Error::LaunchOrdering`]: the kernel was queued and has finished (the call waited for it),
/// but ordering its buffers' other streams after it failed; the cause is its `source()`.
///
/// # Safety
///
/// The crate cannot see what the kernel does. The caller guarantees that:
/// - the arguments have the types the kernel expects (the sizes are checked when the driver
///   reports them, the types are not);
/// - every memory access the kernel makes stays inside the allocations passed (or others kept
///   alive until the kernel completes), and nothing else writes them concurrently (a buffer
///   passed as `&Buffer` must only be read); memory reached through raw addresses is not
///   ordered by the crate;
/// - the kernel's code stays loaded until the launch completes: keep the [`Kernel`] (or its
///   [`ObjectCode`](crate::ObjectCode)) alive, or synchronize the stream before dropping the
///   last handle.
#[doc(alias = "cuLaunchKernel", alias = "cuLaunchKernelEx")]
#[inline]
pub unsafe fn launch<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: A,
) -> Result<()> {
    // SAFETY: the caller's promise, as this function's.
    unsafe { launch_checked(stream, config, kernel, &args, None, Ordered::Yes) }
}

/// Launches `kernel` as [`launch`] does, with launch `attributes` beyond the configuration's
/// cluster and cooperation: always one `cuLaunchKernelEx`, its attribute array on the stack.
///
/// ```no_run
/// use cuda_safe::{launch_with, Device, LaunchAttributes, LaunchConfig, ObjectCode};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(Default::default())?;
/// let code = ObjectCode::from_file("pdl.cubin")?;
/// let (producer, consumer) = (code.get_kernel("producer")?, code.get_kernel("consumer")?);
/// let mut data = device.default_memory_resource()?.allocate(4 << 20, &stream)?;
/// let config = LaunchConfig::new(1024, 256);
/// // SAFETY: both kernels take one float* to 1M floats, which the buffer holds.
/// unsafe {
///     cuda_safe::launch(&stream, &config, &producer, (&mut data,))?;
///     // The consumer may start while the producer runs; it waits for it in
///     // cudaGridDependencySynchronize().
///     let pdl = LaunchAttributes::default().programmatic_stream_serialization(true);
///     launch_with(&stream, &config, &pdl, &consumer, (&mut data,))?;
/// }
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
#[doc = cuda_sys::api_doc!(cuLaunchKernelEx)]
/// # Errors
///
/// As [`launch`], and before anything is queued, as [`LaunchAttributes::validate`] against the
/// stream's device, context and driver ([`Error::Unsupported`] for what they lack), and
/// [`Error::InvalidArgument`] for a programmatic event with timing or IPC, or of another
/// context.
///
/// # Safety
///
/// As [`launch`]. A programmatic dependent launch lets the kernel start before the previous
/// one on the stream ends: it must call `cudaGridDependencySynchronize()` (or
/// `griddepcontrol.wait`) before touching what the previous kernel writes.
#[doc(alias = "cuLaunchKernelEx")]
pub unsafe fn launch_with<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    attributes: &LaunchAttributes<'_>,
    kernel: &Kernel,
    args: A,
) -> Result<()> {
    let attributes = Some(attributes);
    // SAFETY: the caller's promise, as this function's.
    unsafe { launch_checked(stream, config, kernel, &args, attributes, Ordered::Yes) }
}

/// Whether a launch orders its arguments' other streams around it: a capture does not.
#[derive(Clone, Copy)]
enum Ordered {
    /// As [`launch`] does.
    Yes,
    /// As [`launch_captured`] does.
    No,
}

/// What every launch does: the configuration (and `attributes`, when it sets any) checked
/// against the stream's device and context, the arguments against the kernel's parameters,
/// then one launch ([`launch_raw`]), its refusal explained; the arguments' other streams
/// ordered around it unless `ordered` says not; a programmatic event noted as recorded.
///
/// # Safety
///
/// As [`launch`].
#[inline(always)]
unsafe fn launch_checked<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &A,
    attributes: Option<&LaunchAttributes<'_>>,
    ordered: Ordered,
) -> Result<()> {
    config.validate_in(stream.context())?;
    if let Some(attributes) = attributes.filter(|set| set.count() > 0) {
        attributes.validate(config, &AttributeSupport::of(stream)?)?;
        attributes.validate_event(stream)?;
    }
    let others = match ordered {
        Ordered::Yes => ForeignStreams::before(stream, |each| args.for_each_stream(each))?,
        Ordered::No => None,
    };
    let launched = args.with_params(|pointers, sizes, names| {
        check_args(kernel, stream.context(), sizes, names)?;
        // SAFETY: one pointer per parameter, each to a value of the parameter's size (checked
        // when the driver says), alive on this stack frame; the attributes were checked
        // above. What the kernel does with its arguments is the caller's promise.
        unsafe { launch_raw(kernel, config, stream, pointers, attributes) }
    });
    if let Err(error) = launched {
        return Err(match attributes.and_then(|set| set.preferred_cluster) {
            Some(_) if error.is_not_supported() => Error::unsupported(
                "preferred cluster dimensions",
                format!("the driver refused them on this device: {error}"),
            ),
            _ => explain_launch_error(error, stream, config, kernel),
        });
    }
    if let Some(programmatic) = attributes.and_then(|set| set.programmatic_event) {
        programmatic.event.note_recorded();
    }
    ForeignStreams::after(others, stream)
}

/// One launch of `kernel` with `config` and `attributes` (none: the default ones, without a
/// look at them): `cuLaunchKernel` for a plain one, `cuLaunchKernelEx` otherwise.
///
/// # Safety
///
/// `pointers` holds one pointer per kernel parameter to a value of its size, alive for the
/// call; `stream` is a live stream of the context the kernel launches in; `attributes` were
/// validated.
#[inline(always)]
unsafe fn launch_raw(
    kernel: &Kernel,
    config: &LaunchConfig,
    stream: &Stream,
    pointers: &mut [*mut std::ffi::c_void],
    attributes: Option<&LaunchAttributes<'_>>,
) -> Result<()> {
    let parameters = if pointers.is_empty() {
        std::ptr::null_mut()
    } else {
        pointers.as_mut_ptr()
    };
    match attributes {
        None if config.cluster.is_none() && !config.cooperative => {
            // SAFETY: the caller's promise; a `CUkernel` is a valid `CUfunction` for
            // `cuLaunchKernel` and launches in the stream's context.
            unsafe {
                cu!(
                    stream.driver(),
                    cuLaunchKernel(
                        kernel.as_raw() as CUfunction,
                        config.grid.x,
                        config.grid.y,
                        config.grid.z,
                        config.block.x,
                        config.block.y,
                        config.block.z,
                        config.shared_mem,
                        stream.as_raw(),
                        parameters,
                        std::ptr::null_mut(),
                    )
                )
            }
        }
        // SAFETY: as above.
        Some(attributes) => unsafe {
            launch_ex(kernel, config, stream.as_raw(), parameters, attributes)
        },
        // SAFETY: as above.
        None => unsafe {
            let attributes = LaunchAttributes::default();
            launch_ex(kernel, config, stream.as_raw(), parameters, &attributes)
        },
    }
}

/// Records a launch on `stream`, which captures, as [`launch_with`] launches (as [`launch`]
/// with no `attributes` or attributes that set nothing), but without ordering the arguments'
/// buffers with their streams: a capture runs nothing, and it may not depend on work outside
/// it (an event of another stream); a replay runs in the graph's order, on the stream it is
/// launched on.
///
/// # Safety
///
/// As [`launch_with`], at every replay; the memory the kernel uses is ordered with the
/// replays by the caller.
pub(crate) unsafe fn launch_captured<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    attributes: Option<&LaunchAttributes<'_>>,
    kernel: &Kernel,
    args: &A,
) -> Result<()> {
    let attributes = attributes.filter(|set| set.count() > 0);
    // SAFETY: the caller's promise, as this function's.
    unsafe { launch_checked(stream, config, kernel, args, attributes, Ordered::No) }
}

/// Writes `config`'s cluster shape and cooperation into `slots` (room for two) as launch
/// attributes, and returns how many: what a launch and a graph kernel node set alike.
#[inline(always)]
pub(crate) fn write_shape(config: &LaunchConfig, slots: &mut [CUlaunchAttribute]) -> usize {
    let mut count = 0;
    if let (Some(cluster), Some(slot)) = (config.cluster, slots.get_mut(count)) {
        slot.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        slot.value.clusterDim.x = cluster.x;
        slot.value.clusterDim.y = cluster.y;
        slot.value.clusterDim.z = cluster.z;
        count += 1;
    }
    if let (true, Some(slot)) = (config.cooperative, slots.get_mut(count)) {
        slot.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        slot.value.cooperative = 1;
        count += 1;
    }
    count
}

/// One `cuLaunchKernelEx` with the configuration's cluster and cooperation and `attributes`,
/// the attribute array on this stack frame.
///
/// # Safety
///
/// `parameters` holds one pointer per kernel parameter to a value of its size (or is null for
/// none), alive for the call; `stream` is a live stream of the context the kernel launches in;
/// `attributes` were validated.
#[inline]
unsafe fn launch_ex(
    kernel: &Kernel,
    config: &LaunchConfig,
    stream: CUstream,
    parameters: *mut *mut std::ffi::c_void,
    attributes: &LaunchAttributes<'_>,
) -> Result<()> {
    let mut slots = [CUlaunchAttribute::default(); ATTRIBUTE_SLOTS];
    let mut count = write_shape(config, &mut slots);
    count += attributes.write(&mut slots[count..]);
    let launch_config = CUlaunchConfig {
        gridDimX: config.grid.x,
        gridDimY: config.grid.y,
        gridDimZ: config.grid.z,
        blockDimX: config.block.x,
        blockDimY: config.block.y,
        blockDimZ: config.block.z,
        sharedMemBytes: config.shared_mem,
        hStream: stream,
        attrs: slots.as_mut_ptr(),
        numAttrs: count as u32,
    };
    // SAFETY: the configuration and attributes live on this stack frame; the rest is the
    // caller's promise.
    unsafe {
        cu!(
            kernel.driver(),
            cuLaunchKernelEx(
                &launch_config,
                kernel.as_raw() as CUfunction,
                parameters,
                std::ptr::null_mut(),
            )
        )
    }
}

/// Turns the driver's bare `CUDA_ERROR_INVALID_VALUE` for too much dynamic shared memory into
/// an error that says which limit was hit and how to raise it.
#[cold]
fn explain_launch_error(
    error: Error,
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
) -> Error {
    if error.cuda_code() != Some(CUresult::CUDA_ERROR_INVALID_VALUE) || config.shared_mem == 0 {
        return error;
    }
    match kernel.attributes(stream.device()) {
        Ok(attributes) if config.shared_mem > attributes.max_dynamic_shared_size_bytes => {
            Error::invalid_argument(format!(
                "{error}: {} bytes of dynamic shared memory are over kernel `{}`'s limit of {}; \
                 raise it with Kernel::set_max_dynamic_shared_memory",
                config.shared_mem,
                kernel.name(),
                attributes.max_dynamic_shared_size_bytes
            ))
        }
        _ => error,
    }
}
