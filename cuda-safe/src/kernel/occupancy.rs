//! Occupancy: how many blocks of a kernel fit on an SM, and the block size that fills it.

use super::Kernel;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::launch::LaunchConfig;
use cuda_sys::{CUfunction, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};

/// Occupancy queries of one kernel on one device ([`Kernel::occupancy`]), as `cuda.core`'s
/// `kernel.occupancy`. Each query makes the device's primary context current for its call.
#[derive(Debug, Clone, Copy)]
pub struct KernelOccupancy<'a> {
    kernel: &'a Kernel,
    device: Device,
}

impl Kernel {
    /// The occupancy queries of this kernel on `device`.
    pub fn occupancy(&self, device: &Device) -> KernelOccupancy<'_> {
        KernelOccupancy {
            kernel: self,
            device: *device,
        }
    }
}

impl KernelOccupancy<'_> {
    /// Runs `query` with the kernel as a function of the device's primary context, current
    /// for the query only.
    fn with_function<T>(&self, query: impl FnOnce(CUfunction) -> Result<T>) -> Result<T> {
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

    /// How many clusters of `config`'s shape (its grid, block, dynamic shared memory and
    /// cluster) can be resident on the device at once.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] on a device without clusters (before compute capability 9.0);
    /// [`Error::InvalidArgument`] for a configuration without a cluster; the driver's error
    /// (a cluster over 8 blocks needs the kernel's non-portable cluster size allowed).
    #[doc(alias = "cuOccupancyMaxActiveClusters")]
    pub fn max_active_clusters(&self, config: &LaunchConfig) -> Result<u32> {
        if config.cluster.is_none() {
            return Err(Error::invalid_argument(
                "max_active_clusters needs LaunchConfig::cluster",
            ));
        }
        self.cluster_query(config, |function, raw| {
            let mut clusters = 0;
            // SAFETY: valid out-pointer, function and configuration; the context is current.
            unsafe {
                cu!(
                    self.kernel.driver(),
                    cuOccupancyMaxActiveClusters(&mut clusters, function, raw)
                )
            }?;
            Ok(clusters.max(0) as u32)
        })
    }

    /// The largest cluster size (in blocks) that `config`'s grid, block and dynamic shared
    /// memory allow for this kernel on the device (its cluster shape, if any, is ignored).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] on a device without clusters; the driver's error.
    #[doc(alias = "cuOccupancyMaxPotentialClusterSize")]
    pub fn max_potential_cluster_size(&self, config: &LaunchConfig) -> Result<u32> {
        let unclustered = LaunchConfig {
            cluster: None,
            ..*config
        };
        self.cluster_query(&unclustered, |function, raw| {
            let mut size = 0;
            // SAFETY: valid out-pointer, function and configuration; the context is current.
            unsafe {
                cu!(
                    self.kernel.driver(),
                    cuOccupancyMaxPotentialClusterSize(&mut size, function, raw)
                )
            }?;
            Ok(size.max(0) as u32)
        })
    }

    /// Runs a cluster occupancy `query` with `config` as a `CUlaunchConfig` (its cluster as
    /// the one attribute, when set), after checking the device has clusters.
    fn cluster_query(
        &self,
        config: &LaunchConfig,
        query: impl FnOnce(CUfunction, *const CUlaunchConfig) -> Result<u32>,
    ) -> Result<u32> {
        if !self.device.launch_limits()?.cluster_launch {
            return Err(Error::unsupported(
                "cluster occupancy",
                "thread-block clusters need compute capability 9.0 or newer",
            ));
        }
        let mut cluster = CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            ..Default::default()
        };
        let count = match config.cluster {
            Some(shape) => {
                cluster.value.clusterDim.x = shape.x;
                cluster.value.clusterDim.y = shape.y;
                cluster.value.clusterDim.z = shape.z;
                1
            }
            None => 0,
        };
        let raw = CUlaunchConfig {
            gridDimX: config.grid.x,
            gridDimY: config.grid.y,
            gridDimZ: config.grid.z,
            blockDimX: config.block.x,
            blockDimY: config.block.y,
            blockDimZ: config.block.z,
            sharedMemBytes: config.shared_mem,
            hStream: std::ptr::null_mut(),
            attrs: &mut cluster,
            numAttrs: count,
        };
        self.with_function(|function| query(function, &raw))
    }
}
