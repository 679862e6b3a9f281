//! SM resources: the partition rules a resource states (CUDA 13), workqueue resources and
//! splits into groups of different sizes (`cuDevSmResourceSplit`, CUDA 13.1).

use crate::error::{Error, Result};
use cuda_sys::{CUdevResource, Driver, if_abi13};

/// The partition rules an SM resource states about itself (`(min group, alignment)`): CUDA 13
/// resources carry them; CUDA 12 ones do not.
pub(crate) fn stated_sm_rules(resource: &CUdevResource) -> Option<(u32, u32)> {
    let _ = resource;
    if_abi13! {
        // SAFETY: an SM resource stores its fields in the `sm` variant.
        let sm = unsafe { resource.__bindgen_anon_1.sm };
        if sm.minSmPartitionSize > 0 && sm.smCoscheduledAlignment > 0 {
            return Some((sm.minSmPartitionSize, sm.smCoscheduledAlignment));
        }
    }
    None
}

/// The resource type of a device's workqueue configuration (CUDA 13.1 drivers, 13 ABI), or
/// why there is none.
pub(crate) fn workqueue_resource_type() -> Result<cuda_sys::CUdevResourceType> {
    if_abi13! {
        return Ok(cuda_sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        "green-context workqueues",
        "the cuda-12 ABI has no workqueue resources; build with the cuda-13 feature",
    ))
}

/// Splits `input` into groups of the given SM counts in one call (`cuDevSmResourceSplit`,
/// CUDA 13.1, 13 ABI); [`Error::Unsupported`] otherwise.
pub(crate) fn split_sm_counts(
    driver: &'static Driver,
    input: &CUdevResource,
    counts: &[u32],
    result: &mut [CUdevResource],
    remainder: &mut CUdevResource,
) -> Result<()> {
    let _ = (driver, input, counts, &result, &remainder);
    if_abi13! {
        let mut params: Vec<cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS> = counts
            .iter()
            .map(|&count| cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS {
                smCount: count,
                ..Default::default()
            })
            .collect();
        let groups = u32::try_from(result.len()).unwrap_or(u32::MAX);
        // SAFETY: `result` and `params` hold one entry per group; input and remainder are
        // valid.
        let outcome = unsafe {
            crate::error::cu!(
                driver,
                cuDevSmResourceSplit(
                    result.as_mut_ptr(),
                    groups,
                    input,
                    remainder,
                    0,
                    params.as_mut_ptr(),
                )
            )
        };
        return match outcome {
            Err(missing) if missing.is_symbol_missing() => Err(Error::unsupported(
                "SM groups of different sizes",
                format!("{missing}; equal groups work on this driver"),
            )),
            other => other,
        };
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        "SM groups of different sizes",
        "they need cuDevSmResourceSplit (CUDA 13.1) and the cuda-13 ABI; equal groups work",
    ))
}
