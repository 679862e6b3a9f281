//! How to launch: grid, block, cluster shapes, shared memory and cooperation, checked
//! against the device's [`LaunchLimits`] before the driver sees them.

use crate::context::Context;
use crate::device::LaunchLimits;
use crate::error::{Error, Result};

/// Limits every device this crate can drive has (compute capability 5.0 and newer, the oldest
/// CUDA 12 supports): a configuration within them needs no look at the device's own.
const EVERY_DEVICE: LaunchLimits = LaunchLimits {
    max_threads_per_block: 1024,
    max_block_dim: [1024, 1024, 64],
    max_grid_dim: [i32::MAX as u32, 65_535, 65_535],
    max_shared_memory_per_block_optin: 48 * 1024,
    cluster_launch: false,
    cooperative_launch: false,
};

/// Three dimensions of a grid, block or cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x.
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `x * y * z` (saturating at `u64::MAX`, never overflowing).
    pub fn volume(&self) -> u64 {
        u64::from(self.x)
            .saturating_mul(u64::from(self.y))
            .saturating_mul(u64::from(self.z))
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

/// One extent, checked into a `u32`.
fn extent<T: Copy + std::fmt::Display + TryInto<u32>>(value: T, axis: &str) -> Result<u32> {
    value.try_into().map_err(|_| {
        Error::invalid_argument(format!(
            "a grid or block extent of {value} along {axis} does not fit the u32 the driver takes"
        ))
    })
}

/// `TryFrom` of the other integer types (and their pairs and triples), checked: a value that
/// does not fit a `u32` (a negative one, or one past `u32::MAX`) is
/// [`Error::InvalidArgument`], never truncated. (Only `u32` converts with `From`, so integer
/// literals keep meaning `u32` in [`LaunchConfig::new`].)
macro_rules! checked_dims {
    ($($int:ty),*) => {$(
        impl TryFrom<$int> for Dim3 {
            type Error = Error;

            fn try_from(x: $int) -> Result<Self> {
                Ok(Self { x: extent(x, "x")?, y: 1, z: 1 })
            }
        }

        impl TryFrom<($int, $int)> for Dim3 {
            type Error = Error;

            fn try_from((x, y): ($int, $int)) -> Result<Self> {
                Ok(Self { x: extent(x, "x")?, y: extent(y, "y")?, z: 1 })
            }
        }

        impl TryFrom<($int, $int, $int)> for Dim3 {
            type Error = Error;

            fn try_from((x, y, z): ($int, $int, $int)) -> Result<Self> {
                Ok(Self { x: extent(x, "x")?, y: extent(y, "y")?, z: extent(z, "z")? })
            }
        }
    )*};
}

checked_dims!(usize, u64, u16, u8, i32, i64, isize);

/// How to launch a kernel: grid and block shape, dynamic shared memory, an optional
/// thread-block cluster shape (sm_90 on) and whether the launch is cooperative.
///
/// `grid` always counts blocks, as the driver does, also in a cluster launch; `cuda.core`
/// counts clusters there instead, which [`LaunchConfig::clusters`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchConfig {
    /// Blocks in the grid (blocks, not clusters, when `cluster` is set).
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u32,
    /// Blocks in a cluster (needs compute capability 9.0; the grid must be a multiple).
    pub cluster: Option<Dim3>,
    /// Whether blocks may synchronize grid-wide (all must be resident at once).
    pub cooperative: bool,
}

crate::setters::setters! {
    impl LaunchConfig {
        grid: into Dim3,
        block: into Dim3,
        shared_mem: value u32,
        cluster: some_into Dim3,
        cooperative: value bool,
    }
}

impl LaunchConfig {
    /// A plain launch of `grid` blocks of `block` threads (`u32`s, or pairs or triples of
    /// them; [`try_new`](Self::try_new) takes any integer type, checked).
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            shared_mem: 0,
            cluster: None,
            cooperative: false,
        }
    }

    /// A plain launch from any integers (or pairs or triples of them): `usize` grids
    /// computed from lengths, `i32`s from other APIs. Each extent is checked into the `u32`
    /// the driver takes.
    ///
    /// ```
    /// use cuda_safe::{Dim3, LaunchConfig};
    ///
    /// let n: usize = 1 << 20;
    /// let config = LaunchConfig::try_new(n.div_ceil(256), 256usize)?;
    /// assert_eq!(config.grid, Dim3::from(4096));
    /// assert!(LaunchConfig::try_new(1usize << 40, 256usize).is_err());
    /// assert!(LaunchConfig::try_new(-1i32, 256i32).is_err());
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an extent that is negative or past `u32::MAX`.
    pub fn try_new<G, B>(grid: G, block: B) -> Result<Self>
    where
        G: TryInto<Dim3>,
        B: TryInto<Dim3>,
        Error: From<G::Error> + From<B::Error>,
    {
        Ok(Self::new(grid.try_into()?, block.try_into()?))
    }

    /// A cluster launch counted as `cuda.core` counts it: `grid` clusters of `cluster` blocks
    /// of `block` threads. [`LaunchConfig::grid`] becomes `grid * cluster` blocks per axis.
    ///
    /// ```
    /// use cuda_safe::{Dim3, LaunchConfig};
    ///
    /// let config = LaunchConfig::clusters((66, 2), 2, 128)?; // 66 x 2 clusters of 2 blocks
    /// assert_eq!(config.grid, Dim3::from((132, 2)));
    /// assert_eq!(config.cluster, Some(Dim3::from(2)));
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the grid in blocks passes `u32::MAX` along an axis.
    /// Zero dimensions and cluster sizes are checked at launch, as for every configuration.
    pub fn clusters(
        grid: impl Into<Dim3>,
        cluster: impl Into<Dim3>,
        block: impl Into<Dim3>,
    ) -> Result<Self> {
        let (grid, cluster) = (grid.into(), cluster.into());
        let blocks = (
            grid.x.checked_mul(cluster.x),
            grid.y.checked_mul(cluster.y),
            grid.z.checked_mul(cluster.z),
        );
        let (Some(x), Some(y), Some(z)) = blocks else {
            return Err(Error::invalid_argument(format!(
                "{grid:?} clusters of {cluster:?} blocks are over u32::MAX blocks along an axis"
            )));
        };
        Ok(Self {
            cluster: Some(cluster),
            ..Self::new((x, y, z), block)
        })
    }

    /// One thread per element: `ceil(n / block)` blocks of `block` threads along x.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a block of 0 threads, or more than `u32::MAX` blocks.
    pub fn for_num_elements(n: usize, block: u32) -> Result<Self> {
        if block == 0 {
            return Err(Error::invalid_argument("a block needs at least one thread"));
        }
        let blocks = n.div_ceil(block as usize).max(1);
        let grid = u32::try_from(blocks).map_err(|_| {
            Error::invalid_argument(format!("{n} elements need {blocks} blocks, over u32"))
        })?;
        Ok(Self::new(grid, block))
    }

    /// Checks the configuration against a device's limits ([`launch`](crate::launch) does).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] for a zero dimension, a block, grid or dynamic shared memory
    ///   over the device's limits, a cluster of more than 16 blocks, or a grid that is not a
    ///   multiple of the cluster;
    /// - [`Error::Unsupported`] for clusters before compute capability 9.0, or a cooperative
    ///   launch the device does not support.
    pub fn validate(&self, limits: &LaunchLimits) -> Result<()> {
        if self.fits(limits) {
            return Ok(());
        }
        self.check(limits)
    }

    /// Checks the configuration against `context`'s device, reading its limits (once per
    /// context) only for a configuration beyond what every device allows: a launch of up to
    /// 1024 threads per block and 48 KiB of dynamic shared memory, without a cluster or
    /// cooperation, reads nothing but the configuration.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate); the driver's error reading the limits.
    #[inline]
    pub(crate) fn validate_in(&self, context: &Context) -> Result<()> {
        if self.fits(&EVERY_DEVICE) {
            return Ok(());
        }
        self.check(context.launch_limits()?)
    }

    /// Whether the configuration is within `limits`, without saying why not.
    #[inline(always)]
    fn fits(&self, limits: &LaunchLimits) -> bool {
        let (grid, block) = (self.grid, self.block);
        let within = |value: u32, max: u32| (1..=max).contains(&value);
        self.cluster.is_none()
            && !self.cooperative
            && self.shared_mem <= limits.max_shared_memory_per_block_optin
            && within(grid.x, limits.max_grid_dim[0])
            && within(grid.y, limits.max_grid_dim[1])
            && within(grid.z, limits.max_grid_dim[2])
            && within(block.x, limits.max_block_dim[0])
            && within(block.y, limits.max_block_dim[1])
            && within(block.z, limits.max_block_dim[2])
            && block.volume() <= u64::from(limits.max_threads_per_block)
    }

    /// [`validate`](Self::validate) without the shortcut: says what is wrong.
    #[cold]
    fn check(&self, limits: &LaunchLimits) -> Result<()> {
        let invalid = |what: String| Err(Error::invalid_argument(what));
        if self.grid.volume() == 0 || self.block.volume() == 0 {
            return invalid(format!(
                "grid {:?} and block {:?} must have no zero dimension",
                self.grid, self.block
            ));
        }
        if self.block.volume() > u64::from(limits.max_threads_per_block) {
            return invalid(format!(
                "a block of {} threads is over the device's {}",
                self.block.volume(),
                limits.max_threads_per_block
            ));
        }
        let block = [self.block.x, self.block.y, self.block.z];
        let grid = [self.grid.x, self.grid.y, self.grid.z];
        for axis in 0..3 {
            if block[axis] > limits.max_block_dim[axis] || grid[axis] > limits.max_grid_dim[axis] {
                return invalid(format!(
                    "grid {:?} / block {:?} exceed the device's limits {:?} / {:?}",
                    self.grid, self.block, limits.max_grid_dim, limits.max_block_dim
                ));
            }
        }
        if self.shared_mem > limits.max_shared_memory_per_block_optin {
            return invalid(format!(
                "{} bytes of dynamic shared memory are over the device's {} per block",
                self.shared_mem, limits.max_shared_memory_per_block_optin
            ));
        }
        if let Some(cluster) = self.cluster {
            if !limits.cluster_launch {
                return Err(Error::unsupported(
                    "thread-block clusters",
                    "they need compute capability 9.0 or newer",
                ));
            }
            if cluster.volume() == 0 || cluster.volume() > 16 {
                return invalid(format!("a cluster of {:?} blocks (1 to 16)", cluster));
            }
            if !self.grid.x.is_multiple_of(cluster.x)
                || !self.grid.y.is_multiple_of(cluster.y)
                || !self.grid.z.is_multiple_of(cluster.z)
            {
                return invalid(format!(
                    "grid {:?} is not a multiple of the cluster {:?}",
                    self.grid, cluster
                ));
            }
        }
        if self.cooperative && !limits.cooperative_launch {
            return Err(Error::unsupported(
                "cooperative launches",
                "the device does not support them",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H200: LaunchLimits = LaunchLimits {
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [2_147_483_647, 65_535, 65_535],
        max_shared_memory_per_block_optin: 232_448,
        cluster_launch: true,
        cooperative_launch: true,
    };

    /// The limits of the smallest device: what every one allows, and no more.
    const SMALLEST: LaunchLimits = EVERY_DEVICE;

    #[test]
    fn what_every_device_allows_is_valid_on_each() {
        for config in [
            LaunchConfig::new(1, 1),
            LaunchConfig::new(4096, 256),
            LaunchConfig::new((i32::MAX as u32, 65_535, 65_535), (1024, 1, 1)),
            LaunchConfig::new(1, (1, 16, 64)),
            LaunchConfig {
                shared_mem: 48 * 1024,
                ..LaunchConfig::new(1, 32)
            },
        ] {
            assert!(config.fits(&EVERY_DEVICE), "{config:?}");
            assert!(config.validate(&H200).is_ok(), "{config:?}");
            assert!(config.validate(&SMALLEST).is_ok(), "{config:?}");
        }
    }

    #[test]
    fn beyond_what_every_device_allows_the_device_decides() {
        let big_shared = LaunchConfig {
            shared_mem: 100 * 1024,
            ..LaunchConfig::new(1, 32)
        };
        let cooperative = LaunchConfig {
            cooperative: true,
            ..LaunchConfig::new(1, 32)
        };
        let clustered = LaunchConfig::clusters(4, 2, 128).unwrap();
        for config in [big_shared, cooperative, clustered] {
            assert!(!config.fits(&EVERY_DEVICE), "{config:?}");
            assert!(config.validate(&H200).is_ok(), "{config:?}");
            assert!(config.validate(&SMALLEST).is_err(), "{config:?}");
        }
        for config in [
            LaunchConfig::new(0, 32),
            LaunchConfig::new(1, 0),
            LaunchConfig::new(1, 2048),
            LaunchConfig::new(1, (32, 32, 2)),
            LaunchConfig::new((1, 65_536), 32),
            LaunchConfig::new(1, (1, 1, 65)),
        ] {
            assert!(!config.fits(&EVERY_DEVICE), "{config:?}");
            assert!(config.validate(&H200).is_err(), "{config:?}");
        }
    }

    proptest::proptest! {
        /// The shortcut agrees with the full check: within what every device allows, the
        /// check passes on any device at least as large.
        #[test]
        fn the_shortcut_never_accepts_what_the_check_refuses(
            grid in (0u32..=u32::MAX, 0u32..=70_000, 0u32..=70_000),
            block in (0u32..=2048, 0u32..=2048, 0u32..=128),
            shared_mem in 0u32..=300_000,
        ) {
            let config = LaunchConfig { shared_mem, ..LaunchConfig::new(grid, block) };
            proptest::prop_assert_eq!(config.fits(&H200), config.check(&H200).is_ok());
            if config.fits(&EVERY_DEVICE) {
                proptest::prop_assert!(config.check(&SMALLEST).is_ok());
                proptest::prop_assert!(config.check(&H200).is_ok());
            }
        }
    }

    #[test]
    fn dims_convert_and_multiply() {
        assert_eq!(Dim3::from(5), Dim3 { x: 5, y: 1, z: 1 });
        assert_eq!(Dim3::from((2, 3)).volume(), 6);
        assert_eq!(Dim3::from((u32::MAX, u32::MAX, 2)).volume(), u64::MAX);
    }

    #[test]
    fn elements_round_up_to_whole_blocks() {
        assert_eq!(LaunchConfig::for_num_elements(1000, 256).unwrap().grid.x, 4);
        assert_eq!(LaunchConfig::for_num_elements(1024, 256).unwrap().grid.x, 4);
        assert_eq!(LaunchConfig::for_num_elements(0, 256).unwrap().grid.x, 1);
        assert!(LaunchConfig::for_num_elements(10, 0).is_err());
        assert!(LaunchConfig::for_num_elements(usize::MAX, 1).is_err());
    }

    #[test]
    fn clusters_multiply_out_to_blocks() {
        let config = LaunchConfig::clusters((3, 2, 1), (4, 1, 2), 64).unwrap();
        assert_eq!(config.grid, Dim3::from((12, 2, 2)));
        assert_eq!(config.cluster, Some(Dim3::from((4, 1, 2))));
        assert_eq!(config.block, Dim3::from(64));
        assert!(config.validate(&H200).is_ok());
        let largest = LaunchConfig::clusters(u32::MAX / 2, 2, 1).unwrap();
        assert_eq!(largest.grid.x, u32::MAX - 1);
        for (grid, cluster) in [
            ((u32::MAX / 2 + 1, 1, 1), (2, 1, 1)),
            ((1, 65_536, 1), (1, 65_536, 1)),
            ((1, 1, u32::MAX), (1, 1, 2)),
        ] {
            let error = LaunchConfig::clusters(grid, cluster, 32).unwrap_err();
            assert!(error.to_string().contains("over u32::MAX"), "{error}");
        }
        let zero = LaunchConfig::clusters(0, 2, 32).unwrap();
        assert!(
            zero.validate(&H200)
                .unwrap_err()
                .to_string()
                .contains("zero")
        );
    }

    #[test]
    fn validation_catches_each_bad_shape() {
        let ok = LaunchConfig::new(132, 256);
        assert!(ok.validate(&H200).is_ok());
        let bad = |config: LaunchConfig| config.validate(&H200).unwrap_err().to_string();
        assert!(bad(LaunchConfig::new(0, 256)).contains("zero"));
        assert!(bad(LaunchConfig::new(1, (32, 0))).contains("zero"));
        assert!(bad(LaunchConfig::new(1, 2048)).contains("over the device's 1024"));
        assert!(bad(LaunchConfig::new(1, (1, 1, 128))).contains("exceed"));
        assert!(bad(LaunchConfig::new((1, 70_000), 32)).contains("exceed"));
        let shared = LaunchConfig {
            shared_mem: 300_000,
            ..ok
        };
        assert!(bad(shared).contains("shared memory"));
        let cluster = LaunchConfig {
            cluster: Some(Dim3::from(5)),
            ..ok
        };
        assert!(bad(cluster).contains("not a multiple"));
        let cluster = LaunchConfig {
            cluster: Some(Dim3::from(32)),
            grid: Dim3::from(64),
            ..ok
        };
        assert!(bad(cluster).contains("1 to 16"));
        let fits = LaunchConfig {
            cluster: Some(Dim3::from(4)),
            ..ok
        };
        assert!(fits.validate(&H200).is_ok());
        let old = LaunchLimits {
            cluster_launch: false,
            ..H200
        };
        let clustered = LaunchConfig {
            cluster: Some(Dim3::from(2)),
            ..ok
        };
        assert!(matches!(
            clustered.validate(&old),
            Err(Error::Unsupported { .. })
        ));
    }
}
