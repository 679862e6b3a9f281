//! The in-place scaling kernel: compiled with NVRTC on first use (once per process), launched
//! on any strided `float32` view of up to [`MAX_NDIM`] dimensions.

use std::sync::{Mutex, PoisonError};

use cuda_safe::dlpack::{StridedMemoryView, ViewDevice};
use cuda_safe::{
    CodeKind, DeviceRepr, Error, Kernel, LaunchConfig, Program, ProgramOptions, Result, Stream,
    launch,
};

/// The most dimensions the kernel handles.
pub(crate) const MAX_NDIM: usize = 8;

/// Multiplies every element of a strided float32 tensor by `factor`, in place; a grid-stride
/// loop walks the elements in row-major order.
const SOURCE: &str = r#"
struct Layout { long long shape[8]; long long strides[8]; int ndim; };
extern "C" __global__ void scale_strided_f32(float* origin, Layout layout, long long n,
                                             float factor) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += step) {
        long long rest = i, offset = 0;
        for (int axis = layout.ndim - 1; axis >= 0; --axis) {
            long long extent = layout.shape[axis];
            offset += (rest % extent) * layout.strides[axis];
            rest /= extent;
        }
        origin[offset] *= factor;
    }
}
"#;

/// The kernel's `Layout` parameter.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelLayout {
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    ndim: i32,
    padding: i32,
}

// SAFETY: `#[repr(C)]` with the fields of the C++ `Layout` in order and its tail padding made
// explicit: 136 bytes, 8-aligned, as NVRTC lays it out.
unsafe impl DeviceRepr for KernelLayout {}

impl KernelLayout {
    /// The layout of `view`; more than [`MAX_NDIM`] dimensions, or axes that reach the same
    /// element twice (an in-place update would then race), are refused.
    pub(crate) fn of(view: &StridedMemoryView) -> Result<Self> {
        let ndim = view.ndim();
        if ndim > MAX_NDIM {
            return Err(Error::invalid_argument(format!(
                "the kernel takes at most {MAX_NDIM} dimensions, the tensor has {ndim}"
            )));
        }
        check_no_overlap(view.shape(), view.strides())?;
        let mut layout = Self {
            shape: [1; MAX_NDIM],
            strides: [0; MAX_NDIM],
            ndim: ndim as i32,
            padding: 0,
        };
        layout.shape[..ndim].copy_from_slice(view.shape());
        layout.strides[..ndim].copy_from_slice(view.strides());
        Ok(layout)
    }
}

/// Refuses layouts where two indices may name one element: with the axes of extent > 1 sorted
/// by |stride|, each |stride| must pass the reach of all smaller axes (a sufficient test).
fn check_no_overlap(shape: &[i64], strides: &[i64]) -> Result<()> {
    let mut axes = [(0i64, 0i64); MAX_NDIM];
    let mut count = 0;
    for (&extent, &stride) in shape.iter().zip(strides) {
        if extent > 1 {
            axes[count] = (stride.unsigned_abs() as i64, extent);
            count += 1;
        }
    }
    let axes = &mut axes[..count];
    axes.sort_unstable();
    let mut reach: i64 = 0;
    for &(stride, extent) in axes.iter() {
        if stride <= reach {
            return Err(Error::invalid_argument(format!(
                "shape {shape:?} with strides {strides:?} reaches some elements twice; an \
                 in-place update needs distinct elements"
            )));
        }
        reach = (extent - 1)
            .checked_mul(stride)
            .and_then(|axis_reach| axis_reach.checked_add(reach))
            .ok_or_else(|| Error::invalid_argument("the tensor's reach overflows"))?;
    }
    Ok(())
}

/// The kernel compiled for the architecture `arch` (`"90"`), built on the first call for it
/// and kept; a failure is returned and not kept, so a later call tries again.
fn kernel(arch: &str) -> Result<Kernel> {
    static KERNELS: Mutex<Vec<(String, Kernel)>> = Mutex::new(Vec::new());
    let mut kernels = KERNELS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, kernel)) = kernels.iter().find(|(known, _)| known == arch) {
        return Ok(kernel.clone());
    }
    let options = ProgramOptions::default()
        .name("cuda_safe_interop.cu")
        .arch(arch);
    let compiled = Program::new(SOURCE, options)?.compile(CodeKind::Cubin)?;
    let kernel = compiled.load()?.get_kernel("scale_strided_f32")?;
    kernels.push((arch.to_owned(), kernel.clone()));
    Ok(kernel)
}

/// The CUDA device whose kernels reach the view: its own for device memory; for pinned and
/// managed memory, which every device reaches, the device current on the calling thread (the
/// caller's stream is of its primary context), device 0 when none is; pageable host memory is
/// refused.
fn device_of(view: &StridedMemoryView) -> Result<cuda_safe::Device> {
    let device = match view.device() {
        ViewDevice::Cuda(ordinal) => cuda_safe::Device::new(ordinal)?,
        ViewDevice::CudaHost | ViewDevice::CudaManaged => match cuda_safe::Device::current()? {
            Some(device) => device,
            None => cuda_safe::Device::new(0)?,
        },
        ViewDevice::Host => {
            return Err(Error::invalid_argument(
                "the tensor is in pageable host memory, which kernels cannot reach",
            ));
        }
        other => {
            return Err(Error::invalid_argument(format!(
                "the tensor is on {other:?}, which this library's kernels do not reach"
            )));
        }
    };
    view.require_device(&device)?;
    Ok(device)
}

/// Whether a call returns once the kernel is queued or once it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Return once queued: the caller's later work on the stream is ordered after it.
    Queued,
    /// Return once done: the tensor's deleter runs next.
    Done,
}

/// Multiplies every element of a writable float32 view by `factor` on `stream` (a raw
/// `CUstream` of the device's primary context, 0 for the legacy default stream): ordered after
/// the producer's work there, and before the caller's later work there.
pub(crate) fn scale_in_place(
    view: &StridedMemoryView,
    factor: f32,
    stream: usize,
    wait: Wait,
) -> Result<()> {
    if view.is_read_only() {
        return Err(Error::invalid_argument("the tensor is read-only"));
    }
    view.typed_ptr::<f32>()?;
    let layout = KernelLayout::of(view)?;
    let device = device_of(view)?;
    if view.is_empty() {
        return Ok(());
    }
    let kernel = kernel(&device.arch()?)?;
    // Current for this call only: the caller's current context (the CUDA runtime's current
    // device, PyTorch's) is restored when the guard drops, at the end of this call.
    let context = device.context()?;
    let _current = context.scoped()?;
    let stream = if stream == 0 {
        // SAFETY: `context` is current on this thread until the guard drops, and the handle
        // is used on this thread only, within this call.
        unsafe { Stream::legacy_default(&context) }
    } else {
        // SAFETY: the caller guarantees a live stream of this context, used within this call.
        unsafe { Stream::from_raw(stream as cuda_safe::sys::CUstream, &context) }
    };
    let count = view.len();
    // A grid-stride loop: at most 2^16 blocks of 256 threads, whatever the size.
    let config = LaunchConfig::for_num_elements(count.min(1 << 24), 256)?;
    // SAFETY: the kernel takes (float*, Layout, long long, float); it writes each element of
    // the view exactly once (no two indices reach one element, checked above), all inside the
    // producer's live allocation (the DLPack span was checked on import).
    unsafe {
        launch(
            &stream,
            &config,
            &kernel,
            (view, layout, count as i64, factor),
        )
    }?;
    match wait {
        Wait::Queued => Ok(()),
        Wait::Done => stream.sync(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_safe::dlpack::DLDataType;

    fn host_view(shape: &[i64], strides: &[i64]) -> StridedMemoryView {
        // SAFETY: nothing reads through the view.
        unsafe {
            StridedMemoryView::from_raw_parts(
                1 << 20,
                shape,
                Some(strides),
                DLDataType::F32,
                ViewDevice::Host,
                None,
            )
        }
        .unwrap()
    }

    #[test]
    fn layouts_of_distinct_elements_are_accepted() {
        let layout = KernelLayout::of(&host_view(&[4, 3], &[1, 4])).unwrap();
        assert_eq!((layout.ndim, &layout.shape[..3]), (2, &[4, 3, 1][..]));
        assert_eq!(&layout.strides[..2], &[1, 4]);
        assert!(KernelLayout::of(&host_view(&[2, 3], &[-3, 1])).is_ok());
        assert!(KernelLayout::of(&host_view(&[5, 1], &[1, 0])).is_ok());
        assert_eq!(size_of::<KernelLayout>(), 136);
    }

    #[test]
    fn overlapping_or_deep_layouts_are_refused() {
        for (shape, strides) in [
            (&[4][..], &[0][..]),
            (&[2, 2][..], &[1, 1][..]),
            (&[3, 4][..], &[2, 1][..]),
        ] {
            let refused = KernelLayout::of(&host_view(shape, strides));
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{shape:?}"
            );
        }
        let deep = host_view(&[1; 9], &[1; 9]);
        assert!(KernelLayout::of(&deep).is_err());
    }

    #[test]
    fn host_and_read_only_tensors_are_refused_before_the_gpu() {
        let view = host_view(&[4], &[1]);
        assert!(matches!(
            scale_in_place(&view, 2.0, 0, Wait::Done),
            Err(Error::InvalidArgument(_))
        ));
        let read_only = view.into_read_only();
        assert!(matches!(
            scale_in_place(&read_only, 2.0, 0, Wait::Queued),
            Err(Error::InvalidArgument(_))
        ));
    }
}
