//! SM resources: the partition rules a resource states (CUDA 13), workqueue resources and
//! their fields, splits into structured groups (`cuDevSmResourceSplit`, CUDA 13.1), a
//! stream's resources (`cuStreamGetDevResource`, CUDA 13.1) and green-context ids
//! (`cuGreenCtxGetId`): all declared by the CUDA 13 headers only.

use crate::error::{Error, Result};
use cuda_sys::{CUdevResource, CUgreenCtx, CUstream, Driver, if_abi13};

/// Why a feature only the CUDA 13 headers declare is missing from this build.
const NEEDS_ABI13: &str = "the cuda-12 ABI does not declare it; build with the cuda-13 feature";

/// What `cuDevSmResourceSplit` makes that `cuDevSmResourceSplitByCount` cannot.
pub(crate) const STRUCTURED_SPLITS: &str = "SM groups of different sizes or with a layout";

/// How each group of a structured split is laid out (`CU_DEV_SM_RESOURCE_GROUP_PARAMS` but
/// for the SM count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GroupParams {
    /// SMs co-scheduled together (0: the driver's choice).
    pub(crate) coscheduled: u32,
    /// Combine co-scheduled sets into sets of this many SMs where possible (0: no preference).
    pub(crate) preferred_coscheduled: u32,
    /// `CU_DEV_SM_RESOURCE_GROUP_BACKFILL`: the constraints are a hint, the count is met.
    pub(crate) backfill: bool,
}

/// `resource` with its link to a further resource (`nextResource`, CUDA 13) cleared: the
/// crate keeps one resource per value and never follows a link, so a kept resource names no
/// memory of the driver's (and may move between threads). CUDA 12 resources have no link.
pub(crate) fn unlinked(resource: CUdevResource) -> CUdevResource {
    if_abi13! {
        let mut resource = resource;
        resource.nextResource = std::ptr::null_mut();
        return resource;
    }
    #[allow(unreachable_code)]
    resource
}

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

/// The `(concurrency limit, sharing scope)` of a workqueue configuration resource (13 ABI;
/// `None` under 12, which has none).
pub(crate) fn workqueue_fields(resource: &CUdevResource) -> Option<(u32, u32)> {
    let _ = resource;
    if_abi13! {
        // SAFETY: a workqueue configuration stores its fields in the `wqConfig` variant (every
        // bit pattern of its integers is a value).
        let config = unsafe { resource.__bindgen_anon_1.wqConfig };
        return Some((config.wqConcurrencyLimit, config.sharingScope.0));
    }
    #[allow(unreachable_code)]
    None
}

/// Sets the concurrency limit and sharing scope of a workqueue configuration resource (13
/// ABI; [`Error::Unsupported`] under 12).
pub(crate) fn set_workqueue_fields(
    resource: &mut CUdevResource,
    limit: u32,
    scope: u32,
) -> Result<()> {
    let _ = (&resource, limit, scope);
    if_abi13! {
        // Writing a union field is safe; the variant written is the one the type names.
        resource.__bindgen_anon_1.wqConfig.wqConcurrencyLimit = limit;
        resource.__bindgen_anon_1.wqConfig.sharingScope =
            cuda_sys::CUdevWorkqueueConfigScope(scope);
        return Ok(());
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("green-context workqueues", NEEDS_ABI13))
}

/// The unique id of a green context (`cuGreenCtxGetId`: CUDA 12.9 drivers, 13 ABI):
/// [`Error::Unsupported`] under 12, or naming the release needed when the driver lacks it.
pub(crate) fn green_context_id(driver: &'static Driver, green: CUgreenCtx) -> Result<u64> {
    let _ = (driver, green);
    if_abi13! {
        let mut id = 0;
        // SAFETY: a live green context (the caller's) and a valid out-pointer.
        let outcome = unsafe { crate::error::cu!(driver, cuGreenCtxGetId(green, &mut id)) };
        return match outcome {
            Err(missing) if missing.is_symbol_missing() => {
                Err(Error::unsupported("green-context ids", missing.to_string()))
            }
            other => other.map(|()| id),
        };
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("green-context ids", NEEDS_ABI13))
}

/// The SMs a stream's work runs on (`cuStreamGetDevResource`: CUDA 13.1 drivers, 13 ABI):
/// [`Error::Unsupported`] under 12, or naming the release needed when the driver lacks it.
pub(crate) fn stream_sm_resource(
    driver: &'static Driver,
    stream: CUstream,
) -> Result<CUdevResource> {
    let _ = (driver, stream);
    if_abi13! {
        let mut resource = CUdevResource::default();
        let kind = cuda_sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM;
        // SAFETY: a live stream (the caller's) and a valid out-pointer.
        let outcome =
            unsafe { crate::error::cu!(driver, cuStreamGetDevResource(stream, &mut resource, kind)) };
        return match outcome {
            Err(missing) if missing.is_symbol_missing() => {
                Err(Error::unsupported("a stream's SM resource", missing.to_string()))
            }
            other => other.map(|()| resource),
        };
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("a stream's SM resource", NEEDS_ABI13))
}

/// Splits `input` into structured groups of the given SM counts, each laid out as `group`
/// says, in one call (`cuDevSmResourceSplit`, CUDA 13.1, 13 ABI); [`Error::Unsupported`]
/// otherwise.
pub(crate) fn split_sm_counts(
    driver: &'static Driver,
    input: &CUdevResource,
    counts: &[u32],
    group: GroupParams,
    result: &mut [CUdevResource],
    remainder: &mut CUdevResource,
) -> Result<()> {
    let _ = (driver, input, counts, group, &result, &remainder);
    if_abi13! {
        let flags = if group.backfill {
            cuda_sys::CUdevSmResourceGroup_flags::CU_DEV_SM_RESOURCE_GROUP_BACKFILL.0
        } else {
            cuda_sys::CUdevSmResourceGroup_flags::CU_DEV_SM_RESOURCE_GROUP_DEFAULT.0
        };
        let mut params: Vec<cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS> = counts
            .iter()
            .map(|&count| cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS {
                smCount: count,
                coscheduledSmCount: group.coscheduled,
                preferredCoscheduledSmCount: group.preferred_coscheduled,
                flags,
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
                STRUCTURED_SPLITS,
                format!("{missing}; equal groups without a layout work on this driver"),
            )),
            other => other,
        };
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        STRUCTURED_SPLITS,
        "they need cuDevSmResourceSplit (CUDA 13.1) and the cuda-13 ABI; equal groups without \
         a layout work",
    ))
}
