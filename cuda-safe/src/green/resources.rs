//! The driver's side of green contexts: a device's (or context's) SM resources, and splitting
//! them into disjoint groups.

use std::fmt;

use super::plan::{GroupLayout, PartitionRules, SplitPlan, SplitRequest, equal_size, plan_split};
use super::workqueue::WorkqueueConfig;
use crate::abi;
use crate::context::Context;
use crate::device::Device;
use crate::driver::cuda_driver_version;
use crate::error::{Error, Result, cu};
use cuda_sys::{CUdevResource, CUdevResourceType, CudaVersion};

/// The first driver with `cuDevSmResourceSplit` (structured groups), workqueue configurations
/// and `cuStreamGetDevResource`: CUDA 13.1.
pub(super) const CUDA_13_1: CudaVersion = CudaVersion(13010);

/// [`Error::Unsupported`] naming `feature` and the driver it needs, unless this one is at
/// least `need`.
pub(super) fn require_driver(feature: &'static str, need: CudaVersion) -> Result<()> {
    let version = cuda_driver_version()?;
    if version < need {
        return Err(Error::unsupported(
            feature,
            format!("it needs a CUDA {need} driver; this one supports CUDA {version}"),
        ));
    }
    Ok(())
}

/// The resources of a device (or context) that green contexts are made from; a context's
/// resources keep the context alive.
#[derive(Debug, Clone)]
pub struct DeviceResources {
    device: Device,
    source: ResourceSource,
}

#[derive(Debug, Clone)]
enum ResourceSource {
    Device,
    Context(Context),
}

/// A set of SMs: all of a device's, or one group of a split.
#[derive(Clone, Copy)]
pub struct SmResource {
    raw: CUdevResource,
    device: Device,
}

/// The outcome of a split: disjoint groups and what is left over.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SmSplit {
    /// The groups, in the order asked.
    pub groups: Vec<SmResource>,
    /// The SMs in no group.
    pub remainder: SmResource,
}

impl DeviceResources {
    /// The resources of a whole device.
    pub(super) fn of_device(device: &Device) -> Self {
        Self {
            device: *device,
            source: ResourceSource::Device,
        }
    }

    /// The resources of a context (its SMs, for a green context its partition).
    pub(super) fn of_context(context: &Context) -> Self {
        Self {
            device: *context.device(),
            source: ResourceSource::Context(context.clone()),
        }
    }

    fn get(&self, kind: CUdevResourceType) -> Result<CUdevResource> {
        let driver = self.device.driver();
        let mut raw = CUdevResource::default();
        // SAFETY: valid out-pointer; the device handle, or the context `self` keeps alive.
        unsafe {
            match &self.source {
                ResourceSource::Device => cu!(
                    driver,
                    cuDeviceGetDevResource(self.device.as_raw(), &mut raw, kind)
                ),
                ResourceSource::Context(context) => {
                    cu!(
                        driver,
                        cuCtxGetDevResource(context.as_raw(), &mut raw, kind)
                    )
                }
            }
        }?;
        Ok(raw)
    }

    /// All the SMs (of the device, or of the context these resources came from).
    #[doc = cuda_sys::api_doc!(cuDeviceGetDevResource)]
    #[doc = cuda_sys::api_doc!(cuCtxGetDevResource)]
    #[doc(alias = "cuDeviceGetDevResource", alias = "cuCtxGetDevResource")]
    pub fn sm(&self) -> Result<SmResource> {
        Ok(SmResource::from_raw_parts(
            self.get(CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM)?,
            self.device,
        ))
    }

    /// The device's workqueue configuration, to provision a green context with
    /// ([`GreenContextOptions::workqueue`](super::GreenContextOptions::workqueue)).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] under the `cuda-12` ABI or with a driver older than CUDA 13.1.
    pub fn workqueue_config(&self) -> Result<WorkqueueConfig> {
        let kind = abi::workqueue_resource_type()?;
        require_driver("green-context workqueues", CUDA_13_1)?;
        Ok(WorkqueueConfig::from_raw(self.get(kind)?))
    }
}

impl SmResource {
    /// The SMs of `raw` (an SM resource the driver filled) on `device`, its link to a further
    /// resource cleared.
    pub(super) fn from_raw_parts(raw: CUdevResource, device: Device) -> Self {
        Self {
            raw: abi::unlinked(raw),
            device,
        }
    }

    /// How many SMs the resource holds.
    pub fn sm_count(&self) -> u32 {
        // SAFETY: an SM resource (its type says so) stores its fields in the `sm` variant.
        unsafe { self.raw.__bindgen_anon_1.sm.smCount }
    }

    /// The raw `CUdevResource`.
    pub fn as_raw(&self) -> &CUdevResource {
        &self.raw
    }

    /// The device the SMs belong to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The partition rules: from the resource itself where the driver states them (CUDA 13
    /// headers), else from the architecture.
    pub fn rules(&self) -> Result<PartitionRules> {
        if let Some((min_partition_size, alignment)) = abi::stated_sm_rules(&self.raw) {
            return Ok(PartitionRules {
                min_partition_size,
                alignment,
            });
        }
        let (major, _) = self.device.compute_capability()?;
        Ok(PartitionRules::for_compute_capability(major))
    }

    /// A dry run: the split worked out from the partition rules and what this driver can do,
    /// creating nothing. It gives exactly the error [`split`](Self::split) would give: for
    /// equal groups it asks the driver's own simulation (`cuDevSmResourceSplitByCount` with no
    /// output), which knows the hardware's layout (an H200 makes 15 groups of 8 SMs, not 16);
    /// groups of different sizes, and groups with a [`GroupLayout`], need a CUDA 13.1 driver
    /// and the `cuda-13` ABI.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a request the SMs cannot meet (saying what they can
    /// give) or a layout the rules refuse, [`Error::Unsupported`] for structured groups where
    /// they cannot be made.
    pub fn plan(&self, request: &SplitRequest) -> Result<SplitPlan> {
        let arch = self.arch_name();
        let plan = plan_split(self.sm_count(), &self.rules()?, request, &arch)?;
        match plain_size(&plan, request.group_layout()) {
            Some(size) => self.check_equal_layout(plan.counts.len() as u32, size, &arch)?,
            None => check_structured_support()?,
        }
        Ok(plan)
    }

    /// Asks the driver how many groups of `size` SMs its layout makes; an error when fewer
    /// than `asked`.
    fn check_equal_layout(&self, asked: u32, size: u32, arch: &str) -> Result<()> {
        let mut possible = asked;
        // SAFETY: a NULL result asks only for the number of groups; input is valid.
        unsafe {
            cu!(
                self.device.driver(),
                cuDevSmResourceSplitByCount(
                    std::ptr::null_mut(),
                    &mut possible,
                    &self.raw,
                    std::ptr::null_mut(),
                    0,
                    size,
                )
            )
        }?;
        if possible < asked {
            return Err(Error::invalid_argument(format!(
                "asked {asked} x {size} of {} SMs on {arch}: the hardware's layout gives \
                 {possible} x {size} with {} left",
                self.sm_count(),
                self.sm_count()
                    .saturating_sub(possible.saturating_mul(size))
            )));
        }
        Ok(())
    }

    fn arch_name(&self) -> String {
        self.device
            .arch()
            .map_or_else(|_| "this GPU".to_owned(), |arch| format!("sm_{arch}"))
    }

    /// Splits the SMs into disjoint groups, in one driver call: equal groups through
    /// `cuDevSmResourceSplitByCount`, unequal ones and those with a [`GroupLayout`] through
    /// `cuDevSmResourceSplit` (CUDA 13.1).
    ///
    #[doc = cuda_sys::api_doc!(cuDevSmResourceSplitByCount)]
    /// # Errors
    ///
    /// As [`plan`](Self::plan); [`Error::UnexpectedAnswer`] if the driver makes other groups
    /// than it said it would.
    #[doc(alias = "cuDevSmResourceSplitByCount", alias = "cuDevSmResourceSplit")]
    pub fn split(&self, request: &SplitRequest) -> Result<SmSplit> {
        let plan = self.plan(request)?;
        let groups = plan.counts.len();
        let mut result = vec![CUdevResource::default(); groups];
        let mut remainder = CUdevResource::default();
        if let Some(size) = plain_size(&plan, request.group_layout()) {
            let mut produced = groups as u32;
            // SAFETY: `result` holds `produced` resources; input and remainder are valid.
            unsafe {
                cu!(
                    self.device.driver(),
                    cuDevSmResourceSplitByCount(
                        result.as_mut_ptr(),
                        &mut produced,
                        &self.raw,
                        &mut remainder,
                        0,
                        size,
                    )
                )
            }?;
            if produced as usize != groups {
                return Err(Error::unexpected(
                    "cuDevSmResourceSplitByCount",
                    format!("it made {produced} groups of {size} SMs, not the {groups} planned"),
                ));
            }
        } else {
            let layout = request.group_layout();
            let group = abi::GroupParams {
                coscheduled: layout.coscheduled_sm_count,
                preferred_coscheduled: layout.preferred_coscheduled_sm_count,
                backfill: layout.backfill,
            };
            abi::split_sm_counts(
                self.device.driver(),
                &self.raw,
                &plan.counts,
                group,
                &mut result,
                &mut remainder,
            )?;
        }
        let groups: Vec<SmResource> = result
            .into_iter()
            .map(|raw| SmResource::from_raw_parts(raw, self.device))
            .collect();
        for (group, &count) in groups.iter().zip(&plan.counts) {
            if group.sm_count() != count {
                return Err(Error::unexpected(
                    "cuDevSmResourceSplit",
                    format!(
                        "it gave a group of {} SMs where {count} were planned",
                        group.sm_count()
                    ),
                ));
            }
        }
        Ok(SmSplit {
            groups,
            remainder: SmResource::from_raw_parts(remainder, self.device),
        })
    }
}

/// The size of every group when the plan is a plain split (equal groups, no layout), which
/// `cuDevSmResourceSplitByCount` makes; `None` for a structured one.
fn plain_size(plan: &SplitPlan, layout: GroupLayout) -> Option<u32> {
    equal_size(&plan.counts).filter(|_| layout.is_default())
}

/// Whether structured groups (different sizes, or a layout) can be made here: the `cuda-13`
/// ABI and a CUDA 13.1 driver ([`Error::Unsupported`] otherwise, saying which is missing).
fn check_structured_support() -> Result<()> {
    const FEATURE: &str = abi::STRUCTURED_SPLITS;
    if abi::MAJOR < 13 {
        return Err(Error::unsupported(
            FEATURE,
            "they need cuDevSmResourceSplit (CUDA 13.1) and the cuda-13 ABI; equal groups \
             without a layout work",
        ));
    }
    let version = cuda_driver_version()?;
    if version < CUDA_13_1 {
        return Err(Error::unsupported(
            FEATURE,
            format!(
                "they need cuDevSmResourceSplit (a CUDA 13.1 driver); this one supports CUDA \
                 {version}; equal groups without a layout work"
            ),
        ));
    }
    Ok(())
}

impl fmt::Debug for SmResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmResource")
            .field("sm_count", &self.sm_count())
            .field("device", &self.device.ordinal())
            .finish()
    }
}

// SAFETY: the raw resources are plain data describing SMs; no pointer in them is dereferenced
// by this crate (the `nextResource` link is cleared when the resource is made).
unsafe impl Send for SmResource {}
// SAFETY: as above.
unsafe impl Sync for SmResource {}
