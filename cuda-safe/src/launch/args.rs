//! Kernel arguments: values passed by their bytes ([`DeviceRepr`]), memory handles passed by
//! their device address and ordered on their stream ([`KernelArg`]), and tuples of up to 16
//! of them laid out on the stack ([`KernelArgs`]).

use std::ffi::c_void;

use crate::memory::{Buffer, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;
use crate::sys::CUdeviceptr;

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
    fn for_each_stream<'a>(&'a self, f: &mut dyn FnMut(&'a Stream));
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
        ().with_params(|pointers, sizes, _| assert!(pointers.is_empty() && sizes.is_empty()));
    }
}
