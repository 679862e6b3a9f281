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

use std::ffi::c_void;
use std::sync::{Mutex, PoisonError};

use crate::error::check;
use crate::sys::{
    CUdeviceptr, CUfunction, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig, CUstream,
};
use crate::{Buffer, Device, DeviceSlice, DeviceSliceMut, Error, Kernel, Result, Stream};

/// Three dimensions of a grid, block or cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x.
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z` (saturating at `u64::MAX`, never overflowing).
    pub fn volume(&self) -> u64 {
        u64::from(self.x)
            .saturating_mul(u64::from(self.y))
            .saturating_mul(u64::from(self.z))
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

/// How to launch a kernel: grid and block shape, dynamic shared memory, an optional
/// thread-block cluster shape (sm_90 on) and whether the launch is cooperative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u32,
    /// Blocks in a cluster (needs compute capability 9.0; the grid must be a multiple).
    pub cluster: Option<Dim3>,
    /// Whether blocks may synchronize grid-wide (all must be resident at once).
    pub cooperative: bool,
}

impl LaunchConfig {
    /// A plain launch of `grid` blocks of `block` threads.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            shared_mem: 0,
            cluster: None,
            cooperative: false,
        }
    }

    /// One thread per element: `ceil(n / block)` blocks of `block` threads along x.
    pub fn for_num_elements(n: usize, block: u32) -> Result<Self> {
        if block == 0 {
            return Err(Error::invalid_argument("a block needs at least one thread"));
        }
        let blocks = n.div_ceil(block as usize).max(1);
        let grid = u32::try_from(blocks).map_err(|_| {
            Error::invalid_argument(format!("{n} elements need {blocks} blocks, over u32"))
        })?;
        Ok(Self::new(grid, block))
    }

    /// Checks the configuration against a device's limits.
    pub fn validate(&self, limits: &LaunchLimits) -> Result<()> {
        let invalid = |what: String| Err(Error::invalid_argument(what));
        if self.grid.volume() == 0 || self.block.volume() == 0 {
            return invalid(format!(
                "grid {:?} and block {:?} must have no zero dimension",
                self.grid, self.block
            ));
        }
        if self.block.volume() > u64::from(limits.max_threads_per_block) {
            return invalid(format!(
                "a block of {} threads is over the device's {}",
                self.block.volume(),
                limits.max_threads_per_block
            ));
        }
        let block = [self.block.x, self.block.y, self.block.z];
        let grid = [self.grid.x, self.grid.y, self.grid.z];
        for axis in 0..3 {
            if block[axis] > limits.max_block_dim[axis] || grid[axis] > limits.max_grid_dim[axis] {
                return invalid(format!(
                    "grid {:?} / block {:?} exceed the device's limits {:?} / {:?}",
                    self.grid, self.block, limits.max_grid_dim, limits.max_block_dim
                ));
            }
        }
        if self.shared_mem > limits.max_shared_memory_per_block_optin {
            return invalid(format!(
                "{} bytes of dynamic shared memory are over the device's {} per block",
                self.shared_mem, limits.max_shared_memory_per_block_optin
            ));
        }
        if let Some(cluster) = self.cluster {
            if !limits.cluster_launch {
                return Err(Error::unsupported(
                    "thread-block clusters",
                    "they need compute capability 9.0 or newer",
                ));
            }
            if cluster.volume() == 0 || cluster.volume() > 16 {
                return invalid(format!("a cluster of {:?} blocks (1 to 16)", cluster));
            }
            if self.grid.x % cluster.x != 0
                || self.grid.y % cluster.y != 0
                || self.grid.z % cluster.z != 0
            {
                return invalid(format!(
                    "grid {:?} is not a multiple of the cluster {:?}",
                    self.grid, cluster
                ));
            }
        }
        if self.cooperative && !limits.cooperative_launch {
            return Err(Error::unsupported(
                "cooperative launches",
                "the device does not support them",
            ));
        }
        Ok(())
    }
}

/// The device limits a launch configuration is checked against, read once per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Most threads in a block.
    pub max_threads_per_block: u32,
    /// Largest block per dimension.
    pub max_block_dim: [u32; 3],
    /// Largest grid per dimension.
    pub max_grid_dim: [u32; 3],
    /// Most dynamic shared memory a block may opt in to.
    pub max_shared_memory_per_block_optin: u32,
    /// Whether clusters are supported.
    pub cluster_launch: bool,
    /// Whether cooperative launches are supported.
    pub cooperative_launch: bool,
}

impl LaunchLimits {
    /// The limits of `device`, read on first use and kept for the life of the process.
    pub fn of(device: &Device) -> Result<&'static LaunchLimits> {
        static KNOWN: Mutex<Vec<(usize, &'static LaunchLimits)>> = Mutex::new(Vec::new());
        let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, limits)) = known
            .iter()
            .find(|(ordinal, _)| *ordinal == device.ordinal())
        {
            return Ok(limits);
        }
        let properties = device.properties()?;
        // One small value per device for the life of the process: leaking is what makes the
        // per-launch check a plain read.
        let limits: &'static LaunchLimits = Box::leak(Box::new(LaunchLimits {
            max_threads_per_block: properties.max_threads_per_block,
            max_block_dim: properties.max_block_dim,
            max_grid_dim: properties.max_grid_dim,
            max_shared_memory_per_block_optin: properties
                .max_shared_memory_per_block_optin
                .max(properties.max_shared_memory_per_block),
            cluster_launch: properties.cluster_launch,
            cooperative_launch: properties.cooperative_launch,
        }));
        known.push((device.ordinal(), limits));
        Ok(limits)
    }
}

/// Types passed to a kernel by value, as their bytes.
///
/// # Safety
///
/// The type must be plain data with the same size, alignment and layout as the kernel's C++
/// parameter type: `#[repr(C)]` (or a primitive), no references, no padding the kernel reads.
pub unsafe trait DeviceRepr: Copy {}

macro_rules! device_repr {
    ($($ty:ty),* $(,)?) => {$(
        // SAFETY: a primitive with the C layout of the same-named C++ type.
        unsafe impl DeviceRepr for $ty {}
    )*};
}

device_repr!(
    u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, u128, i128, f32, f64, bool
);

// SAFETY: raw pointers are addresses, as in C.
unsafe impl<T> DeviceRepr for *const T {}
// SAFETY: as above.
unsafe impl<T> DeviceRepr for *mut T {}

#[cfg(feature = "half")]
// SAFETY: `half::f16` is a `#[repr(transparent)]` u16 with the bits of CUDA's `__half`.
unsafe impl DeviceRepr for half::f16 {}
#[cfg(feature = "half")]
// SAFETY: `half::bf16` is a `#[repr(transparent)]` u16 with the bits of `__nv_bfloat16`.
unsafe impl DeviceRepr for half::bf16 {}

/// One kernel argument: what it passes (its [`DeviceRepr`] value).
pub trait KernelArg {
    /// The value the kernel receives.
    type Repr: DeviceRepr;
    /// Converts the argument to that value.
    fn to_repr(&self) -> Self::Repr;
    /// The stream the argument's memory is ordered on (a buffer's), if any: a launch on
    /// another stream is ordered after that stream's queued work, and that stream's later
    /// work (the buffer's free) after the launch.
    #[inline(always)]
    fn stream(&self) -> Option<&Stream> {
        None
    }
}

impl<T: DeviceRepr> KernelArg for T {
    type Repr = T;
    #[inline(always)]
    fn to_repr(&self) -> T {
        *self
    }
}

/// Implements [`KernelArg`] for memory handles: their device address, ordered on their stream.
macro_rules! memory_args {
    ($([$($generics:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($generics)*> KernelArg for $ty {
            type Repr = CUdeviceptr;
            #[inline(always)]
            fn to_repr(&self) -> CUdeviceptr {
                self.as_raw()
            }
            #[inline(always)]
            fn stream(&self) -> Option<&Stream> {
                Some((**self).stream())
            }
        }
    )*};
}

memory_args!(
    [] &Buffer,
    [] &mut Buffer,
    [T: bytemuck::Pod] &DeviceSlice<'_, T>,
    [T: bytemuck::Pod] &mut DeviceSliceMut<'_, T>,
);

impl<T: bytemuck::Pod> KernelArg for DeviceSlice<'_, T> {
    type Repr = CUdeviceptr;
    #[inline(always)]
    fn to_repr(&self) -> CUdeviceptr {
        self.as_raw()
    }
    #[inline(always)]
    fn stream(&self) -> Option<&Stream> {
        Some(DeviceSlice::stream(self))
    }
}

/// A tuple of up to 16 [`KernelArg`]s.
pub trait KernelArgs {
    /// Lays the arguments out on the stack and calls `f` with one pointer per argument, each
    /// argument's size and its type name (for errors).
    fn with_params<R>(
        &self,
        f: impl FnOnce(&mut [*mut c_void], &[usize], &[&'static str]) -> R,
    ) -> R;

    /// Calls `f` with the stream of each argument that has one ([`KernelArg::stream`]).
    fn for_each_stream(&self, f: impl FnMut(&Stream));
}

macro_rules! kernel_args {
    ($(($($name:ident . $index:tt),*)),* $(,)?) => {$(
        impl<$($name: KernelArg),*> KernelArgs for ($($name,)*) {
            #[inline(always)]
            #[allow(unused_mut, non_snake_case)]
            fn with_params<R>(
                &self,
                f: impl FnOnce(&mut [*mut c_void], &[usize], &[&'static str]) -> R,
            ) -> R {
                $(let mut $name = self.$index.to_repr();)*
                let mut pointers = [$((&raw mut $name).cast::<c_void>()),*];
                let sizes = [$(size_of::<$name::Repr>()),*];
                let names = [$(std::any::type_name::<$name::Repr>()),*];
                f(&mut pointers, &sizes, &names)
            }

            #[inline(always)]
            fn for_each_stream(&self, mut f: impl FnMut(&Stream)) {
                $(if let Some(stream) = self.$index.stream() {
                    f(stream);
                })*
            }
        }
    )*};
}

impl KernelArgs for () {
    #[inline(always)]
    fn with_params<R>(
        &self,
        f: impl FnOnce(&mut [*mut c_void], &[usize], &[&'static str]) -> R,
    ) -> R {
        f(&mut [], &[], &[])
    }

    fn for_each_stream(&self, _f: impl FnMut(&Stream)) {}
}

kernel_args!(
    (A.0),
    (A.0, B.1),
    (A.0, B.1, C.2),
    (A.0, B.1, C.2, D.3),
    (A.0, B.1, C.2, D.3, E.4),
    (A.0, B.1, C.2, D.3, E.4, F.5),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10),
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11),
    (
        A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11, M.12
    ),
    (
        A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11, M.12, N.13
    ),
    (
        A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11, M.12, N.13, O.14
    ),
    (
        A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11, M.12, N.13, O.14, P.15
    ),
);

/// Checks the arguments against the kernel's parameter list, when the driver gave one.
#[inline]
fn check_args(
    kernel: &Kernel,
    stream: &Stream,
    sizes: &[usize],
    names: &[&'static str],
) -> Result<()> {
    let Some(params) = kernel.params_in(stream.context()) else {
        return Ok(());
    };
    if params.len() != sizes.len() {
        return Err(Error::invalid_argument(format!(
            "kernel `{}` takes {} parameters, {} arguments were given",
            kernel.name(),
            params.len(),
            sizes.len()
        )));
    }
    for (index, (param, &size)) in params.iter().zip(sizes).enumerate() {
        if param.size != size {
            return Err(Error::invalid_argument(format!(
                "parameter {index} of kernel `{}` is {} bytes, the argument ({}) is {size}",
                kernel.name(),
                param.size,
                names.get(index).copied().unwrap_or("?"),
            )));
        }
    }
    Ok(())
}

/// Launches `kernel` on `stream` with `config` and `args` (`cuLaunchKernelEx`).
///
/// The configuration is checked against the stream's device and the arguments against the
/// kernel's parameter list before anything reaches the driver; the launch itself is queued.
///
/// A buffer or slice argument whose stream is not `stream` is ordered both ways: the launch
/// waits for the work queued on the buffer's stream, and that stream's later work (the buffer's
/// free, a host view) waits for the launch. This costs nothing when every buffer is on the
/// launch stream.
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
#[doc(alias = "cuLaunchKernelEx")]
#[inline]
pub unsafe fn launch<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: A,
) -> Result<()> {
    config.validate(stream.launch_limits()?)?;
    let mut foreign = false;
    args.for_each_stream(|other| foreign |= !other.same_as(stream));
    if foreign {
        // Everything that can fail before the launch does so here: after it, an error would
        // leave a queued kernel unordered with its buffers' frees.
        stream.marker()?;
        order_streams(&args, stream, |other| stream.wait_stream(other))?;
    }
    let launched = args.with_params(|pointers, sizes, names| {
        check_args(kernel, stream, sizes, names)?;
        let mut attributes = [CUlaunchAttribute::default(); 2];
        let mut count = 0;
        if let Some(cluster) = config.cluster {
            attributes[count].id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attributes[count].value.clusterDim.x = cluster.x;
            attributes[count].value.clusterDim.y = cluster.y;
            attributes[count].value.clusterDim.z = cluster.z;
            count += 1;
        }
        if config.cooperative {
            attributes[count].id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attributes[count].value.cooperative = 1;
            count += 1;
        }
        let launch_config = CUlaunchConfig {
            gridDimX: config.grid.x,
            gridDimY: config.grid.y,
            gridDimZ: config.grid.z,
            blockDimX: config.block.x,
            blockDimY: config.block.y,
            blockDimZ: config.block.z,
            sharedMemBytes: config.shared_mem,
            hStream: stream.as_raw(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: count as u32,
        };
        let parameters = if pointers.is_empty() {
            std::ptr::null_mut()
        } else {
            pointers.as_mut_ptr()
        };
        // SAFETY: the configuration and attributes live on this stack frame; one pointer per
        // parameter, each to a value of the parameter's size (checked when the driver says);
        // the kernel is context-independent and launches in the stream's context. What the
        // kernel does with its arguments is the caller's promise.
        check("cuLaunchKernelEx", unsafe {
            kernel.driver().cuLaunchKernelEx(
                &launch_config,
                kernel.as_raw() as CUfunction,
                parameters,
                std::ptr::null_mut(),
            )
        })
    });
    if let Err(error) = launched {
        return Err(explain_launch_error(error, stream, config, kernel));
    }
    if foreign {
        order_after_launch(&args, stream)?;
    }
    Ok(())
}

/// Makes every argument stream wait for the launch just queued on `stream`. If that fails,
/// waits for the launch itself, so no buffer can be freed under the kernel; the error then
/// says the kernel was launched.
#[cold]
fn order_after_launch<A: KernelArgs>(args: &A, stream: &Stream) -> Result<()> {
    let ordered = stream.marker()?.record(stream).and_then(|()| {
        let marker = stream.marker()?;
        order_streams(args, stream, |other| other.wait(marker))
    });
    match ordered {
        Ok(()) => Ok(()),
        Err(error) => {
            stream.sync()?;
            Err(Error::invalid_argument(format!(
                "the kernel was launched (and has finished), but ordering its buffers' streams \
                 after it failed: {error}"
            )))
        }
    }
}

/// Calls `order` once for every distinct argument stream other than `stream`, stopping at the
/// first error.
#[cold]
fn order_streams<A: KernelArgs>(
    args: &A,
    stream: &Stream,
    mut order: impl FnMut(&Stream) -> Result<()>,
) -> Result<()> {
    let mut seen: [Option<CUstream>; 16] = [None; 16];
    let mut result = Ok(());
    args.for_each_stream(|other| {
        if result.is_err() || other.same_as(stream) {
            return;
        }
        let raw = Some(other.as_raw());
        if seen.contains(&raw) {
            return;
        }
        if let Some(slot) = seen.iter_mut().find(|slot| slot.is_none()) {
            *slot = raw;
        }
        result = order(other);
    });
    result
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
    if error.cuda_code() != Some(crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE)
        || config.shared_mem == 0
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    const H200: LaunchLimits = LaunchLimits {
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [2_147_483_647, 65_535, 65_535],
        max_shared_memory_per_block_optin: 232_448,
        cluster_launch: true,
        cooperative_launch: true,
    };

    #[test]
    fn dims_convert_and_multiply() {
        assert_eq!(Dim3::from(5), Dim3 { x: 5, y: 1, z: 1 });
        assert_eq!(Dim3::from((2, 3)).volume(), 6);
        assert_eq!(Dim3::from((u32::MAX, u32::MAX, 2)).volume(), u64::MAX);
    }

    #[test]
    fn elements_round_up_to_whole_blocks() {
        assert_eq!(LaunchConfig::for_num_elements(1000, 256).unwrap().grid.x, 4);
        assert_eq!(LaunchConfig::for_num_elements(1024, 256).unwrap().grid.x, 4);
        assert_eq!(LaunchConfig::for_num_elements(0, 256).unwrap().grid.x, 1);
        assert!(LaunchConfig::for_num_elements(10, 0).is_err());
        assert!(LaunchConfig::for_num_elements(usize::MAX, 1).is_err());
    }

    #[test]
    fn validation_catches_each_bad_shape() {
        let ok = LaunchConfig::new(132, 256);
        assert!(ok.validate(&H200).is_ok());
        let bad = |config: LaunchConfig| config.validate(&H200).unwrap_err().to_string();
        assert!(bad(LaunchConfig::new(0, 256)).contains("zero"));
        assert!(bad(LaunchConfig::new(1, (32, 0))).contains("zero"));
        assert!(bad(LaunchConfig::new(1, 2048)).contains("over the device's 1024"));
        assert!(bad(LaunchConfig::new(1, (1, 1, 128))).contains("exceed"));
        assert!(bad(LaunchConfig::new((1, 70_000), 32)).contains("exceed"));
        let shared = LaunchConfig {
            shared_mem: 300_000,
            ..ok
        };
        assert!(bad(shared).contains("shared memory"));
        let cluster = LaunchConfig {
            cluster: Some(Dim3::from(5)),
            ..ok
        };
        assert!(bad(cluster).contains("not a multiple"));
        let cluster = LaunchConfig {
            cluster: Some(Dim3::from(32)),
            grid: Dim3::from(64),
            ..ok
        };
        assert!(bad(cluster).contains("1 to 16"));
        let fits = LaunchConfig {
            cluster: Some(Dim3::from(4)),
            ..ok
        };
        assert!(fits.validate(&H200).is_ok());
        let old = LaunchLimits {
            cluster_launch: false,
            ..H200
        };
        let clustered = LaunchConfig {
            cluster: Some(Dim3::from(2)),
            ..ok
        };
        assert!(matches!(
            clustered.validate(&old),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn tuples_lay_out_each_argument_with_its_size() {
        let args = (2.0f32, 7u64, 3i8, 1.5f64);
        args.with_params(|pointers, sizes, names| {
            assert_eq!(sizes, [4, 8, 1, 8]);
            assert_eq!(pointers.len(), 4);
            // SAFETY: the pointers point at the laid-out values of these types.
            unsafe {
                assert_eq!(*pointers[0].cast::<f32>(), 2.0);
                assert_eq!(*pointers[1].cast::<u64>(), 7);
                assert_eq!(*pointers[2].cast::<i8>(), 3);
                assert_eq!(*pointers[3].cast::<f64>(), 1.5);
            }
            assert_eq!(names[0], "f32");
        });
        let mut streams = 0;
        args.for_each_stream(|_| streams += 1);
        assert_eq!(streams, 0, "scalars have no stream");
        ().with_params(|pointers, sizes, _| assert!(pointers.is_empty() && sizes.is_empty()));
    }
}
