//! Occupancy: how many blocks of a kernel fit on an SM, and the block size that fills it (the
//! cluster queries, which take a launch configuration, stand with the launch module).

use super::Kernel;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use cuda_sys::CUfunction;

/// Occupancy queries of one kernel on one device ([`Kernel::occupancy`]), as `cuda.core`'s
/// `kernel.occupancy`. Each query makes the device's primary context current for its call.
#[derive(Debug, Clone, Copy)]
pub struct KernelOccupancy<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) device: Device,
}

impl Kernel {
    /// The occupancy queries of this kernel on `device`.
    pub fn occupancy(&self, device: &Device) -> KernelOccupancy<'_> {
        KernelOccupancy {
            kernel: self,
            device: *device,
        }
    }

    /// How many blocks of `block_size` threads fit on one SM of `device`.
    ///
    /// # Errors
    ///
    /// As [`KernelOccupancy::max_active_blocks_per_multiprocessor`].
    #[deprecated(
        since = "0.2.0",
        note = "use `kernel.occupancy(&device).max_active_blocks_per_multiprocessor(..)`"
    )]
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        device: &Device,
        block_size: u32,
        dynamic_shared: usize,
    ) -> Result<u32> {
        self.occupancy(device)
            .max_active_blocks_per_multiprocessor(block_size, dynamic_shared)
    }

    /// The block size that fills an SM of `device`, and the smallest grid that does.
    ///
    /// # Errors
    ///
    /// As [`KernelOccupancy::max_potential_block_size`].
    #[deprecated(
        since = "0.2.0",
        note = "use `kernel.occupancy(&device).max_potential_block_size(..)`"
    )]
    pub fn max_potential_block_size(
        &self,
        device: &Device,
        dynamic_shared: usize,
    ) -> Result<(u32, u32)> {
        self.occupancy(device)
            .max_potential_block_size(dynamic_shared)
    }
}

impl KernelOccupancy<'_> {
    /// Runs `query` with the kernel as a function of the device's primary context, current
    /// for the query only.
    pub(crate) fn with_function<T>(
        &self,
        query: impl FnOnce(CUfunction) -> Result<T>,
    ) -> Result<T> {
        let context = self.device.context()?;
        let _current = context.scoped()?;
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: valid out-pointer and kernel; the context is current.
        unsafe {
            cu!(
                self.kernel.driver(),
                cuKernelGetFunction(&mut function, self.kernel.as_raw())
            )
        }?;
        query(function)
    }

    /// How many blocks of `block_size` threads (with `dynamic_shared` bytes of dynamic shared
    /// memory each) fit on one SM at once.
    ///
    #[doc = cuda_sys::api_doc!(cuOccupancyMaxActiveBlocksPerMultiprocessor)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a block size past `i32::MAX`; the driver's error.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessor")]
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_shared: usize,
    ) -> Result<u32> {
        let block = i32::try_from(block_size)
            .map_err(|_| Error::invalid_argument(format!("block size {block_size}")))?;
        self.with_function(|function| {
            let mut blocks = 0;
            // SAFETY: valid out-pointer and function; the context is current.
            unsafe {
                cu!(
                    self.kernel.driver(),
                    cuOccupancyMaxActiveBlocksPerMultiprocessor(
                        &mut blocks,
                        function,
                        block,
                        dynamic_shared,
                    )
                )
            }?;
            Ok(blocks.max(0) as u32)
        })
    }

    /// The block size that maximises occupancy, and the smallest grid that fills the device
    /// with it: `(min_grid_size, block_size)`.
    #[doc = cuda_sys::api_doc!(cuOccupancyMaxPotentialBlockSize)]
    #[doc(alias = "cuOccupancyMaxPotentialBlockSize")]
    pub fn max_potential_block_size(&self, dynamic_shared: usize) -> Result<(u32, u32)> {
        self.with_function(|function| {
            let (mut grid, mut block) = (0, 0);
            // SAFETY: valid out-pointers and function; no per-block-size callback; the context
            // is current.
            unsafe {
                cu!(
                    self.kernel.driver(),
                    cuOccupancyMaxPotentialBlockSize(
                        &mut grid,
                        &mut block,
                        function,
                        None,
                        dynamic_shared,
                        0,
                    )
                )
            }?;
            Ok((grid.max(0) as u32, block.max(0) as u32))
        })
    }
}
