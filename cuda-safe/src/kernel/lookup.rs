//! Looking kernels up in loaded code: by name (a name expression or a symbol) and all of them.

use std::sync::Arc;

use super::Kernel;
use crate::error::{Result, cu};
use crate::ffi::to_c_string;
use crate::module::ObjectCode;
use cuda_sys::CUkernel;

impl ObjectCode {
    /// The kernel called `name`: a name expression given to the program before compiling
    /// (`"scale<float>"`), or the kernel's symbol (`"saxpy"` for an `extern "C"` kernel).
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryGetKernel)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a name with a NUL byte; the driver's
    /// `CUDA_ERROR_NOT_FOUND` when the code has no kernel of that name (a templated kernel
    /// needs its name expression added before compiling).
    #[doc(alias = "cuLibraryGetKernel")]
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        let library = self.library();
        let symbol = library.symbol_of(name);
        let c_symbol = to_c_string("kernel name", symbol)?;
        let mut raw: CUkernel = std::ptr::null_mut();
        // SAFETY: valid out-pointer, loaded library and NUL-terminated name.
        unsafe {
            cu!(
                library.driver(),
                cuLibraryGetKernel(&mut raw, library.raw(), c_symbol.as_ptr())
            )
        }?;
        Ok(Kernel::new(raw, Arc::from(name), library.clone()))
    }

    /// Every kernel of the code, named by its symbol.
    ///
    #[doc = cuda_sys::api_doc!(cuLibraryEnumerateKernels)]
    /// # Errors
    ///
    /// A missing entry point before CUDA 12.4 drivers ([`Error::is_symbol_missing`](crate::Error::is_symbol_missing)); the
    /// driver's error.
    #[doc(alias = "cuLibraryEnumerateKernels")]
    pub fn kernels(&self) -> Result<Vec<Kernel>> {
        let library = self.library();
        let driver = library.driver();
        let mut count = 0;
        // SAFETY: valid out-pointer and library.
        unsafe { cu!(driver, cuLibraryGetKernelCount(&mut count, library.raw())) }?;
        let mut raws: Vec<CUkernel> = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: `raws` holds `count` handles.
        unsafe {
            cu!(
                driver,
                cuLibraryEnumerateKernels(raws.as_mut_ptr(), count, library.raw())
            )
        }?;
        raws.into_iter()
            .map(|raw| {
                let unnamed = Kernel::new(raw, Arc::from(""), library.clone());
                let symbol = unnamed.symbol()?;
                Ok(Kernel::new(raw, Arc::from(symbol), library.clone()))
            })
            .collect()
    }
}
