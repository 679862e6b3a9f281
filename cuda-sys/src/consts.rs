//! Constants of `cuda.h` that bindgen drops: macros that cast to a pointer or handle type,
//! and enum aliases spelled as macros. Written by hand; identical in the CUDA 12 and 13 headers.

use std::ffi::c_void;

use crate::{CUdevice, CUkernelNodeAttrID, CUlaunchAttributeID, CUstream, CUstreamAttrID};

/// `CU_STREAM_LEGACY`: the legacy default stream, which synchronizes with other blocking streams.
pub const CU_STREAM_LEGACY: CUstream = std::ptr::without_provenance_mut(0x1);
/// `CU_STREAM_PER_THREAD`: the per-thread default stream.
pub const CU_STREAM_PER_THREAD: CUstream = std::ptr::without_provenance_mut(0x2);

/// `CU_LAUNCH_PARAM_END`: ends the `extra` array of `cuLaunchKernel`.
pub const CU_LAUNCH_PARAM_END: *mut c_void =
    std::ptr::without_provenance_mut(crate::CU_LAUNCH_PARAM_END_AS_INT as usize);
/// `CU_LAUNCH_PARAM_BUFFER_POINTER`: the next `extra` entry points to the argument buffer.
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void =
    std::ptr::without_provenance_mut(crate::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize);
/// `CU_LAUNCH_PARAM_BUFFER_SIZE`: the next `extra` entry points to the buffer's size.
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void =
    std::ptr::without_provenance_mut(crate::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize);

/// `CU_DEVICE_CPU`: the host, where an API takes a device (prefetch, advice).
pub const CU_DEVICE_CPU: CUdevice = -1;
/// `CU_DEVICE_INVALID`: no device.
pub const CU_DEVICE_INVALID: CUdevice = -2;

/// Declares `CU_<kind>_ATTRIBUTE_<name>` aliases of `CU_LAUNCH_ATTRIBUTE_<name>`.
macro_rules! launch_attribute_aliases {
    ($ty:ty: $($alias:ident = $name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($alias), "`: alias of `", stringify!($name), "`.")]
            pub const $alias: $ty = CUlaunchAttributeID::$name;
        )*
    };
}

launch_attribute_aliases! { CUkernelNodeAttrID:
    CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
    CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE = CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
    CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
    CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE =
        CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
    CU_KERNEL_NODE_ATTRIBUTE_PRIORITY = CU_LAUNCH_ATTRIBUTE_PRIORITY,
    CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
    CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
    CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION =
        CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
    CU_KERNEL_NODE_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE =
        CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
    CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT =
        CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
}

launch_attribute_aliases! { CUstreamAttrID:
    CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
    CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY = CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
    CU_STREAM_ATTRIBUTE_PRIORITY = CU_LAUNCH_ATTRIBUTE_PRIORITY,
    CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
    CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
}
