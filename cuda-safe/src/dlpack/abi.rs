//! The DLPack C ABI (`dlpack.h`, 1.x), written out by hand: the structs a producer and a
//! consumer exchange, with compile-time checks of their sizes and field offsets.
//!
//! Enumerations are open newtypes over the C integer, so a value from a newer producer is a
//! value, never undefined behaviour; the importer refuses the ones it cannot interpret.

use std::ffi::c_void;

/// The DLPack major version this crate reads and writes.
pub const DLPACK_MAJOR_VERSION: u32 = 1;

/// The DLPack minor version this crate writes (it reads any 1.x: minor versions only add
/// enumeration values, and unknown ones are refused on import).
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write through the tensor.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;

/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy the consumer owns alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;

/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded, not packed.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLPackVersion`: the ABI version of a [`DLManagedTensorVersioned`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLPackVersion {
    /// A different major version means a different layout after the `flags` field.
    pub major: u32,
    /// A newer minor version only adds enumeration values.
    pub minor: u32,
}

/// `DLDeviceType` (an `int32_t` enumeration), as an open newtype.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`: pageable host memory.
    pub const CPU: Self = Self(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: Self = Self(2);
    /// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`, `cuMemHostAlloc`).
    pub const CUDA_HOST: Self = Self(3);
    /// `kDLOpenCL`.
    pub const OPENCL: Self = Self(4);
    /// `kDLVulkan`.
    pub const VULKAN: Self = Self(7);
    /// `kDLMetal`.
    pub const METAL: Self = Self(8);
    /// `kDLVPI`.
    pub const VPI: Self = Self(9);
    /// `kDLROCM`.
    pub const ROCM: Self = Self(10);
    /// `kDLROCMHost`.
    pub const ROCM_HOST: Self = Self(11);
    /// `kDLExtDev`.
    pub const EXT_DEV: Self = Self(12);
    /// `kDLCUDAManaged`: CUDA managed (unified) memory.
    pub const CUDA_MANAGED: Self = Self(13);
    /// `kDLOneAPI`.
    pub const ONE_API: Self = Self(14);
    /// `kDLWebGPU`.
    pub const WEB_GPU: Self = Self(15);
    /// `kDLHexagon`.
    pub const HEXAGON: Self = Self(16);
    /// `kDLMAIA`.
    pub const MAIA: Self = Self(17);
}

/// `DLDevice`: where a tensor's memory lives.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The kind of memory.
    pub device_type: DLDeviceType,
    /// The device ordinal (0 for host, pinned and managed memory).
    pub device_id: i32,
}

/// `DLDataTypeCode` (stored as a `uint8_t`), as an open newtype.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDataTypeCode(pub u8);

impl DLDataTypeCode {
    /// `kDLInt`: signed integer.
    pub const INT: Self = Self(0);
    /// `kDLUInt`: unsigned integer.
    pub const UINT: Self = Self(1);
    /// `kDLFloat`: IEEE floating point.
    pub const FLOAT: Self = Self(2);
    /// `kDLOpaqueHandle`: an opaque handle.
    pub const OPAQUE_HANDLE: Self = Self(3);
    /// `kDLBfloat`: bfloat16.
    pub const BFLOAT: Self = Self(4);
    /// `kDLComplex`: complex number (two floats of `bits / 2` each).
    pub const COMPLEX: Self = Self(5);
    /// `kDLBool`: boolean (8 bits).
    pub const BOOL: Self = Self(6);
    /// `kDLFloat8_e3m4`.
    pub const FLOAT8_E3M4: Self = Self(7);
    /// `kDLFloat8_e4m3`.
    pub const FLOAT8_E4M3: Self = Self(8);
    /// `kDLFloat8_e4m3b11fnuz`.
    pub const FLOAT8_E4M3B11FNUZ: Self = Self(9);
    /// `kDLFloat8_e4m3fn`.
    pub const FLOAT8_E4M3FN: Self = Self(10);
    /// `kDLFloat8_e4m3fnuz`.
    pub const FLOAT8_E4M3FNUZ: Self = Self(11);
    /// `kDLFloat8_e5m2`.
    pub const FLOAT8_E5M2: Self = Self(12);
    /// `kDLFloat8_e5m2fnuz`.
    pub const FLOAT8_E5M2FNUZ: Self = Self(13);
    /// `kDLFloat8_e8m0fnu`.
    pub const FLOAT8_E8M0FNU: Self = Self(14);
    /// `kDLFloat6_e2m3fn`.
    pub const FLOAT6_E2M3FN: Self = Self(15);
    /// `kDLFloat6_e3m2fn`.
    pub const FLOAT6_E3M2FN: Self = Self(16);
    /// `kDLFloat4_e2m1fn`.
    pub const FLOAT4_E2M1FN: Self = Self(17);

    /// Whether DLPack 1.x defines this code.
    pub const fn is_known(self) -> bool {
        self.0 <= Self::FLOAT4_E2M1FN.0
    }
}

/// `DLDataType`: an element type as type code, bit width and vector lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// The kind of number.
    pub code: DLDataTypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a strided tensor that does not manage its memory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    /// The base address (a device address for CUDA memory).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` extents (may be null when `ndim` is 0).
    pub shape: *mut i64,
    /// `ndim` strides in elements; null means compact row-major before DLPack 1.2.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the legacy (unversioned) exchange struct.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context, for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when done; frees the struct itself too. May be null.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`: the DLPack 1.x exchange struct.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The ABI version; a major version other than 1 may only have its deleter called.
    pub version: DLPackVersion,
    /// The producer's context, for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when done; frees the struct itself too. May be null.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

// The sizes and offsets of dlpack.h 1.x on a 64-bit target.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<DLPackVersion>() == 8);
    assert!(size_of::<DLDevice>() == 8);
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLTensor>() == 48 && align_of::<DLTensor>() == 8);
    assert!(offset_of!(DLTensor, data) == 0);
    assert!(offset_of!(DLTensor, device) == 8);
    assert!(offset_of!(DLTensor, ndim) == 16);
    assert!(offset_of!(DLTensor, dtype) == 20);
    assert!(offset_of!(DLTensor, shape) == 24);
    assert!(offset_of!(DLTensor, strides) == 32);
    assert!(offset_of!(DLTensor, byte_offset) == 40);
    assert!(size_of::<DLManagedTensor>() == 64);
    assert!(offset_of!(DLManagedTensor, manager_ctx) == 48);
    assert!(offset_of!(DLManagedTensor, deleter) == 56);
    assert!(size_of::<DLManagedTensorVersioned>() == 80);
    assert!(offset_of!(DLManagedTensorVersioned, manager_ctx) == 8);
    assert!(offset_of!(DLManagedTensorVersioned, deleter) == 16);
    assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
    assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};
