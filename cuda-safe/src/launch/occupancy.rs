//! Cluster occupancy: how many clusters of a launch configuration's shape fit on the device,
//! and the largest cluster its grid and block allow.

use super::config::LaunchConfig;
use crate::error::{Error, Result, cu};
use crate::kernel::KernelOccupancy;
use cuda_sys::{CUfunction, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};

impl KernelOccupancy<'_> {
    /// How many clusters of `config`'s shape (its grid, block, dynamic shared memory and
    /// cluster) can be resident on the device at once.
    ///
    #[doc = cuda_sys::api_doc!(cuOccupancyMaxActiveClusters)]
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
    #[doc = cuda_sys::api_doc!(cuOccupancyMaxPotentialClusterSize)]
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
