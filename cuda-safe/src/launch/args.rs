//! Kernel arguments: values passed by their bytes ([`DeviceRepr`]), memory handles passed by
//! their device address and ordered on their stream ([`KernelArg`]), and tuples of up to 16
//! of them laid out on the stack ([`KernelArgs`]). A shared buffer (`Arc<Buffer>`) passes its
//! address too, and a graph node made with it keeps the buffer alive.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use crate::memory::texture::{SurfaceObject, TextureObject};
use crate::memory::{Buffer, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

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

/// Something a graph node keeps alive for as long as a graph or executable may run it.
pub(crate) type Keep = Box<dyn Any + Send>;

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
    /// What a graph node made with this argument must keep alive while the graph may run (an
    /// `Arc<Buffer>` keeps its buffer); nothing for values and borrowed memory. Called when a
    /// node is added, never on a launch.
    #[inline(always)]
    fn keep_alive(&self) -> Option<Box<dyn Any + Send>> {
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

/// Implements [`KernelArg`] for shared buffers: their address, ordered on their stream, and
/// the buffer kept alive by a graph node made with it.
macro_rules! shared_buffer_args {
    ($($ty:ty),* $(,)?) => {$(
        impl KernelArg for $ty {
            type Repr = CUdeviceptr;
            #[inline(always)]
            fn to_repr(&self) -> CUdeviceptr {
                self.as_raw()
            }
            #[inline(always)]
            fn stream(&self) -> Option<&Stream> {
                Some(Buffer::stream(self))
            }
            fn keep_alive(&self) -> Option<Box<dyn Any + Send>> {
                let buffer: Arc<Buffer> = Arc::clone(self);
                Some(Box::new(buffer))
            }
        }
    )*};
}

shared_buffer_args!(Arc<Buffer>, &Arc<Buffer>);

/// Implements [`KernelArg`] for texture and surface objects: their 64-bit handle, ordered on
/// their resource's stream (which their destruction waits for); shared ones (`Arc`) are kept
/// alive by a graph node made with them.
macro_rules! texture_args {
    ($($ty:ty),* $(,)?) => {$(
        impl KernelArg for &$ty {
            type Repr = u64;
            #[inline(always)]
            fn to_repr(&self) -> u64 {
                self.as_raw()
            }
            #[inline(always)]
            fn stream(&self) -> Option<&Stream> {
                Some(<$ty>::stream(self))
            }
        }

        impl KernelArg for Arc<$ty> {
            type Repr = u64;
            #[inline(always)]
            fn to_repr(&self) -> u64 {
                self.as_raw()
            }
            #[inline(always)]
            fn stream(&self) -> Option<&Stream> {
                Some(<$ty>::stream(self))
            }
            fn keep_alive(&self) -> Option<Box<dyn Any + Send>> {
                let object: Arc<$ty> = Arc::clone(self);
                Some(Box::new(object))
            }
        }
    )*};
}

texture_args!(TextureObject, SurfaceObject);

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
    fn for_each_stream<'a>(&'a self, f: &mut dyn FnMut(&'a Stream));

    /// Adds to `keep` what a graph node made with these arguments keeps alive
    /// ([`KernelArg::keep_alive`]).
    fn keep_alive(&self, keep: &mut Vec<Box<dyn Any + Send>>);
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
            fn for_each_stream<'a>(&'a self, f: &mut dyn FnMut(&'a Stream)) {
                $(if let Some(stream) = self.$index.stream() {
                    f(stream);
                })*
            }

            fn keep_alive(&self, keep: &mut Vec<Box<dyn Any + Send>>) {
                $(if let Some(item) = self.$index.keep_alive() {
                    keep.push(item);
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

    fn for_each_stream<'a>(&'a self, _f: &mut dyn FnMut(&'a Stream)) {}

    fn keep_alive(&self, _keep: &mut Vec<Box<dyn Any + Send>>) {}
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

#[cfg(test)]
mod tests {
    use super::*;

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
        args.for_each_stream(&mut |_| streams += 1);
        assert_eq!(streams, 0, "scalars have no stream");
        let mut keep = Vec::new();
        args.keep_alive(&mut keep);
        assert!(keep.is_empty(), "scalars keep nothing alive");
        ().with_params(|pointers, sizes, _| assert!(pointers.is_empty() && sizes.is_empty()));
    }

    /// An argument that keeps a shared value alive, as `Arc<Buffer>` does.
    struct Shared(Arc<u32>);

    impl KernelArg for Shared {
        type Repr = u32;
        fn to_repr(&self) -> u32 {
            *self.0
        }
        fn keep_alive(&self) -> Option<Box<dyn Any + Send>> {
            Some(Box::new(self.0.clone()))
        }
    }

    #[test]
    fn arguments_hand_graph_nodes_what_they_keep_alive() {
        let value = Arc::new(7u32);
        let args = (1u8, Shared(value.clone()), Shared(value.clone()));
        let mut keep = Vec::new();
        args.keep_alive(&mut keep);
        assert_eq!(keep.len(), 2);
        assert_eq!(Arc::strong_count(&value), 5);
        let kept = keep[0].downcast_ref::<Arc<u32>>().expect("the Arc itself");
        assert_eq!(**kept, 7);
        drop(keep);
        drop(args);
        assert_eq!(Arc::strong_count(&value), 1);
    }
}
