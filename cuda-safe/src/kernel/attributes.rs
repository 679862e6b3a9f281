//! A kernel's attributes on a device: what it uses (registers, shared and local memory) and
//! the limits that follow, plus the settable ones.

use super::Kernel;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use cuda_sys::CUfunction_attribute;

/// A kernel's resource use and limits on one device (`cuKernelGetAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    /// Registers per thread.
    pub num_regs: u32,
    /// Static shared memory per block, in bytes.
    pub shared_size_bytes: u32,
    /// Constant memory, in bytes.
    pub const_size_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_size_bytes: u32,
    /// The most threads a block of this kernel can have (limited by its registers).
    pub max_threads_per_block: u32,
    /// The PTX ISA version it was compiled for (`90` is 9.0).
    pub ptx_version: u32,
    /// The binary (SASS) version (`90` for sm_90).
    pub binary_version: u32,
    /// The dynamic shared memory a launch may ask for without raising the limit.
    pub max_dynamic_shared_size_bytes: u32,
}

impl Kernel {
    /// One raw attribute on `device`.
    #[doc = cuda_sys::api_doc!(cuKernelGetAttribute)]
    #[doc(alias = "cuKernelGetAttribute")]
    pub fn attribute(&self, attribute: CUfunction_attribute, device: &Device) -> Result<i32> {
        let mut value = 0;
        // SAFETY: valid out-pointer, kernel and device.
        unsafe {
            cu!(
                self.driver(),
                cuKernelGetAttribute(&mut value, attribute, self.as_raw(), device.as_raw())
            )
        }?;
        Ok(value)
    }

    /// The kernel's resource use and limits on `device` (one driver call per field).
    pub fn attributes(&self, device: &Device) -> Result<KernelAttributes> {
        use CUfunction_attribute as A;
        let get = |attribute| Ok::<u32, Error>(self.attribute(attribute, device)?.max(0) as u32);
        Ok(KernelAttributes {
            num_regs: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_size_bytes: get(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_size_bytes: get(A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_size_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            ptx_version: get(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
            max_dynamic_shared_size_bytes: get(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
        })
    }

    /// Sets a settable attribute on `device` (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`,
    /// `..._PREFERRED_SHARED_MEMORY_CARVEOUT`, `..._NON_PORTABLE_CLUSTER_SIZE_ALLOWED`, ...).
    #[doc = cuda_sys::api_doc!(cuKernelSetAttribute)]
    #[doc(alias = "cuKernelSetAttribute")]
    pub fn set_attribute(
        &self,
        attribute: CUfunction_attribute,
        value: i32,
        device: &Device,
    ) -> Result<()> {
        // SAFETY: valid kernel and device; the driver checks the attribute and value.
        unsafe {
            cu!(
                self.driver(),
                cuKernelSetAttribute(attribute, value, self.as_raw(), device.as_raw())
            )
        }
    }

    /// Allows launches on `device` to ask for up to `bytes` of dynamic shared memory.
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32, device: &Device) -> Result<()> {
        let value = i32::try_from(bytes)
            .map_err(|_| Error::invalid_argument(format!("{bytes} bytes of shared memory")))?;
        self.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            value,
            device,
        )
    }
}
