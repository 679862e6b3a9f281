//! What a [`VirtualMemoryResource`](super::VirtualMemoryResource) is told, and the arithmetic
//! of sizes against the allocation granularity (pure, so it is tested without a GPU).

use crate::device::Device;
use crate::error::{Error, Result};
use crate::memory::IpcHandleType;
use cuda_sys::{CUmemAccess_flags, CUmemAllocationGranularity_flags};

/// Where the physical memory lives (`cuda.core`'s `location_type`, with its `numa_id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum VmmLocation {
    /// On the resource's device (the default).
    #[default]
    Device,
    /// On the host NUMA node with this id (CUDA 12.2 drivers; the device reaches it through
    /// its access descriptor).
    HostNuma(u32),
}

/// Which allocation granularity sizes are rounded to (`cuda.core`'s `granularity`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum VmmGranularity {
    /// The smallest the driver accepts.
    Minimum,
    /// The one the driver recommends for performance (the default; 2 MiB on an H200).
    #[default]
    Recommended,
}

impl VmmGranularity {
    pub(super) fn raw(self) -> CUmemAllocationGranularity_flags {
        match self {
            Self::Minimum => CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            Self::Recommended => {
                CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
            }
        }
    }
}

/// What a device may do with the memory (`cuda.core`'s `self_access` / `peer_access`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum VmmAccess {
    /// Read and write (the default).
    #[default]
    ReadWrite,
    /// Read only: a kernel's write faults.
    Read,
}

impl VmmAccess {
    pub(super) fn raw(self) -> CUmemAccess_flags {
        match self {
            Self::ReadWrite => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            Self::Read => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ,
        }
    }
}

/// How a [`VirtualMemoryResource`](super::VirtualMemoryResource) allocates: the option names
/// are `cuda.core`'s `VirtualMemoryResourceOptions`, plus `max_size`.
///
/// One difference: `handle_type` defaults to `None` (no exportable handle), so an allocation
/// makes exactly the driver calls of a plain one; set it to share memory with other processes.
/// `cuda.core`'s `"managed"` allocation type is not offered (only the CUDA 13 headers have it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualMemoryResourceOptions {
    /// Where the physical memory lives.
    pub location: VmmLocation,
    /// The handle type the memory can be exported as (`None`: not exportable).
    pub handle_type: Option<IpcHandleType>,
    /// Which granularity sizes are rounded up to.
    pub granularity: VmmGranularity,
    /// Ask for memory that RDMA devices can reach (GPUDirect RDMA; checked against
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`).
    pub gpu_direct_rdma: bool,
    /// A hint for where to reserve address ranges (0: anywhere).
    pub addr_hint: u64,
    /// The alignment of reserved address ranges (a power of two; `None`: the driver's).
    pub addr_align: Option<usize>,
    /// Other devices given access to every allocation (with `peer_access`).
    pub peers: Vec<Device>,
    /// The resource's own device's access. With [`VmmAccess::Read`], kernels and copies on
    /// the device may only read the memory: a fill or a copy into a buffer of the resource
    /// then faults on the GPU (a sticky error that ends the context), so use it for mappings
    /// another writer fills, not for buffers this process writes.
    pub self_access: VmmAccess,
    /// The peers' access.
    pub peer_access: VmmAccess,
    /// The most bytes one allocation or growable buffer may reach (`None`: no limit beyond
    /// the device's memory); a larger request is refused before the driver.
    pub max_size: Option<usize>,
}

crate::setters::setters! {
    impl VirtualMemoryResourceOptions {
        location: value VmmLocation,
        handle_type: some IpcHandleType,
        granularity: value VmmGranularity,
        gpu_direct_rdma: value bool,
        addr_hint: value u64,
        addr_align: some usize,
        peers: items Device,
        self_access: value VmmAccess,
        peer_access: value VmmAccess,
        max_size: some usize,
    }
}

/// `size` rounded up to a multiple of `granularity`, refusing 0, sizes past `max_size` and
/// overflow.
pub(super) fn round_up(size: usize, granularity: usize, max_size: Option<usize>) -> Result<usize> {
    if size == 0 {
        return Err(Error::invalid_argument(
            "a virtual memory allocation of 0 bytes",
        ));
    }
    if granularity == 0 || !granularity.is_power_of_two() {
        return Err(Error::invalid_argument(format!(
            "granularity {granularity} is not a power of two"
        )));
    }
    let rounded = size
        .checked_add(granularity - 1)
        .map(|padded| padded & !(granularity - 1))
        .ok_or_else(|| {
            Error::invalid_argument(format!(
                "{size} bytes rounded up to the {granularity}-byte granularity overflow usize"
            ))
        })?;
    if let Some(max) = max_size
        && rounded > max
    {
        return Err(Error::invalid_argument(format!(
            "{size} bytes ({rounded} at the {granularity}-byte granularity) exceed the \
             resource's max_size of {max} bytes"
        )));
    }
    Ok(rounded)
}

/// What growing a buffer to a new size takes: the bytes to map at the end, and a new
/// reservation when the current one cannot hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GrowthPlan {
    /// The new mapped size (a multiple of the granularity).
    pub(super) mapped: usize,
    /// The size of a new, larger reservation the existing memory moves into, if needed.
    pub(super) reserve: Option<usize>,
}

/// Plans growing a buffer of `mapped` bytes inside a reservation of `reserved` bytes to hold
/// `size` bytes: `None` when it already does. A new reservation is at least twice the old
/// one (so moves are rare), capped at `max_size`.
pub(super) fn plan_growth(
    mapped: usize,
    reserved: usize,
    size: usize,
    granularity: usize,
    max_size: Option<usize>,
) -> Result<Option<GrowthPlan>> {
    if size <= mapped {
        return Ok(None);
    }
    let wanted = round_up(size, granularity, max_size)?;
    if wanted <= reserved {
        return Ok(Some(GrowthPlan {
            mapped: wanted,
            reserve: None,
        }));
    }
    let doubled =
        round_up(reserved.saturating_mul(2).max(wanted), granularity, None).unwrap_or(wanted);
    let reserve = match max_size {
        Some(max) => doubled.min(max & !(granularity - 1)).max(wanted),
        None => doubled,
    };
    Ok(Some(GrowthPlan {
        mapped: wanted,
        reserve: Some(reserve),
    }))
}

/// Checks that an alignment asked for is a power of two.
pub(super) fn check_alignment(align: Option<usize>) -> Result<usize> {
    match align {
        None => Ok(0),
        Some(align) if align.is_power_of_two() => Ok(align),
        Some(align) => Err(Error::invalid_argument(format!(
            "addr_align {align} is not a power of two"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MIB2: usize = 2 << 20;

    #[test]
    fn sizes_round_up_to_the_granularity() {
        assert_eq!(round_up(1, MIB2, None).unwrap(), MIB2);
        assert_eq!(round_up(MIB2, MIB2, None).unwrap(), MIB2);
        assert_eq!(round_up(MIB2 + 1, MIB2, None).unwrap(), 2 * MIB2);
        assert_eq!(round_up(1 << 30, MIB2, Some(1 << 30)).unwrap(), 1 << 30);
    }

    #[test]
    fn bad_sizes_are_refused_with_the_reason() {
        let zero = round_up(0, MIB2, None).unwrap_err().to_string();
        assert!(zero.contains("0 bytes"), "{zero}");
        let overflow = round_up(usize::MAX - 5, MIB2, None)
            .unwrap_err()
            .to_string();
        assert!(overflow.contains("overflow"), "{overflow}");
        let beyond = round_up(MIB2 + 1, MIB2, Some(MIB2 + 5))
            .unwrap_err()
            .to_string();
        assert!(beyond.contains("max_size"), "{beyond}");
        assert!(round_up(1, 3, None).is_err());
        assert!(round_up(1, 0, None).is_err());
    }

    #[test]
    fn growth_maps_in_place_while_the_reservation_holds() {
        assert_eq!(plan_growth(MIB2, 8 * MIB2, MIB2, MIB2, None).unwrap(), None);
        assert_eq!(
            plan_growth(MIB2, 8 * MIB2, 3 * MIB2 + 1, MIB2, None).unwrap(),
            Some(GrowthPlan {
                mapped: 4 * MIB2,
                reserve: None
            })
        );
        assert_eq!(
            plan_growth(MIB2, 2 * MIB2, 3 * MIB2, MIB2, None).unwrap(),
            Some(GrowthPlan {
                mapped: 3 * MIB2,
                reserve: Some(4 * MIB2)
            }),
            "a full reservation at least doubles"
        );
        assert_eq!(
            plan_growth(MIB2, 4 * MIB2, 5 * MIB2, MIB2, Some(7 * MIB2)).unwrap(),
            Some(GrowthPlan {
                mapped: 5 * MIB2,
                reserve: Some(7 * MIB2)
            }),
            "but never past max_size"
        );
        assert!(plan_growth(MIB2, 4 * MIB2, 9 * MIB2, MIB2, Some(8 * MIB2)).is_err());
    }

    #[test]
    fn alignments_must_be_powers_of_two() {
        assert_eq!(check_alignment(None).unwrap(), 0);
        assert_eq!(check_alignment(Some(1 << 21)).unwrap(), 1 << 21);
        assert!(check_alignment(Some(3 << 20)).is_err());
        assert!(check_alignment(Some(0)).is_err());
    }

    proptest! {
        #[test]
        fn rounding_is_the_least_multiple_at_or_above(
            size in 1usize..(1 << 40),
            shift in 12u32..31,
        ) {
            let granularity = 1usize << shift;
            let rounded = round_up(size, granularity, None).unwrap();
            prop_assert!(rounded >= size);
            prop_assert_eq!(rounded % granularity, 0);
            prop_assert!(rounded - size < granularity);
        }

        #[test]
        fn growth_plans_hold_the_size_and_respect_the_limit(
            mapped_chunks in 1usize..64,
            spare_chunks in 0usize..64,
            size in 1usize..(1 << 32),
            max_chunks in proptest::option::of(1usize..256),
        ) {
            let granularity = MIB2;
            let mapped = mapped_chunks * granularity;
            let reserved = mapped + spare_chunks * granularity;
            let max_size = max_chunks.map(|chunks| chunks * granularity);
            match plan_growth(mapped, reserved, size, granularity, max_size) {
                Ok(None) => prop_assert!(size <= mapped),
                Ok(Some(plan)) => {
                    prop_assert!(plan.mapped >= size && plan.mapped > mapped);
                    prop_assert_eq!(plan.mapped % granularity, 0);
                    let room = plan.reserve.unwrap_or(reserved);
                    prop_assert!(room >= plan.mapped);
                    prop_assert_eq!(room % granularity, 0);
                    if let Some(max) = max_size {
                        prop_assert!(plan.mapped <= max);
                        prop_assert!(plan.reserve.is_none_or(|reserve| reserve <= max));
                    }
                    prop_assert_eq!(plan.reserve.is_some(), plan.mapped > reserved);
                }
                Err(_) => prop_assert!(max_size.is_some_and(|max| size > max)),
            }
        }
    }
}
