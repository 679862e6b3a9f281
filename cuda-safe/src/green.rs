//! Green contexts: partition a GPU's SMs between jobs, each with guaranteed, isolated SMs.
//!
//! ```no_run
//! use cuda_safe::{Device, GreenContextOptions, SplitRequest};
//!
//! let device = Device::new(0)?;
//! let all = device.resources().sm()?;
//! println!("{} SMs; {:?}", all.sm_count(), all.rules()?);
//! // Two equal halves; on an H200 (132 SMs, groups in multiples of 8): 2 x 64, 4 left over.
//! let split = all.split(&SplitRequest::equal(2, 64))?;
//! let left = device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
//! let right = device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
//! assert!(left.is_green());
//! let stream = right.create_stream(Default::default())?; // runs on the right half only
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! A request the hardware cannot meet exactly is an error that says what it can give (asking
//! for 2 x 66 of 132 SMs on sm_90 gives "2 x 64 with 4 left") unless the request opts into
//! rounding; a split never returns fewer groups than asked (the driver's layout can make fewer
//! groups than plain division: an H200 has room for 15 groups of 8 SMs, not 16, and asking for
//! 16 is an error saying so).

use std::fmt;

use crate::error::check;
use crate::sys::{
    CUdevResource, CUdevResourceDesc, CUdevResourceType, CUgreenCtx, CUgreenCtxCreate_flags,
    CUresult,
};
use crate::{Context, Device, Error, Result};

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

/// How an SM resource may be partitioned: the smallest group and the step between sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRules {
    /// The fewest SMs a group may have.
    pub min_partition_size: u32,
    /// Group sizes must be multiples of this.
    pub alignment: u32,
}

impl PartitionRules {
    /// The rules of an architecture, for drivers whose resources do not state them: 1 SM on
    /// 6.x, multiples of 2 on 7.x, at least 4 in multiples of 2 on 8.x, multiples of 8 on 9.0+.
    pub fn for_compute_capability(major: u32) -> Self {
        let (min_partition_size, alignment) = match major {
            0..=6 => (1, 1),
            7 => (2, 2),
            8 => (4, 2),
            _ => (8, 8),
        };
        Self {
            min_partition_size,
            alignment,
        }
    }

    /// `count` rounded down to a valid group size, or `None` if below the minimum.
    pub fn round_down(&self, count: u32) -> Option<u32> {
        let rounded = count - count % self.alignment.max(1);
        (rounded >= self.min_partition_size).then_some(rounded)
    }

    /// Whether `count` is a valid group size.
    pub fn allows(&self, count: u32) -> bool {
        self.round_down(count) == Some(count)
    }
}

/// A set of SMs: all of a device's, or one group of a split.
#[derive(Clone, Copy)]
pub struct SmResource {
    raw: CUdevResource,
    device: Device,
}

/// What to split an SM resource into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRequest {
    shape: Shape,
    round: bool,
}

/// The groups asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    Equal { groups: u32, size: u32 },
    Counts(Vec<u32>),
}

/// The outcome of a split: disjoint groups and what is left over.
#[derive(Debug, Clone)]
pub struct SmSplit {
    /// The groups, in the order asked.
    pub groups: Vec<SmResource>,
    /// The SMs in no group.
    pub remainder: SmResource,
}

/// A split worked out from the partition rules alone, without the driver (a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPlan {
    /// The SMs each group gets.
    pub counts: Vec<u32>,
    /// The SMs left over.
    pub remainder: u32,
}

/// A workqueue configuration for a green context (CUDA 13.1 drivers on).
#[derive(Clone, Copy)]
pub struct WorkqueueConfig {
    raw: CUdevResource,
}

/// Options of a green context.
#[derive(Debug, Clone, Copy, Default)]
pub struct GreenContextOptions {
    /// A workqueue configuration to provision with the SMs.
    pub workqueue: Option<WorkqueueConfig>,
}

impl SplitRequest {
    /// `groups` groups of `sms_each` SMs each.
    pub fn equal(groups: u32, sms_each: u32) -> Self {
        Self {
            shape: Shape::Equal {
                groups,
                size: sms_each,
            },
            round: false,
        }
    }

    /// One group per entry, of that many SMs (unequal counts need a CUDA 13.1 driver).
    pub fn counts(counts: impl Into<Vec<u32>>) -> Self {
        Self {
            shape: Shape::Counts(counts.into()),
            round: false,
        }
    }

    /// Allows rounding each count down to the nearest size the hardware supports, instead of
    /// refusing a count it cannot meet exactly.
    pub fn rounding(mut self, round: bool) -> Self {
        self.round = round;
        self
    }

    /// How many groups are asked for.
    pub fn group_count(&self) -> usize {
        match &self.shape {
            Shape::Equal { groups, .. } => *groups as usize,
            Shape::Counts(counts) => counts.len(),
        }
    }

    /// The SM count asked for each group, once the number of groups is known to be sane
    /// (at most one group per SM), so a huge count never allocates.
    fn counts_within(&self, total: u32) -> Option<Vec<u32>> {
        if self.group_count() > total as usize {
            return None;
        }
        Some(match &self.shape {
            Shape::Equal { groups, size } => vec![*size; *groups as usize],
            Shape::Counts(counts) => counts.clone(),
        })
    }
}

impl Device {
    /// The device's resources, for green contexts.
    pub fn resources(&self) -> DeviceResources {
        DeviceResources {
            device: *self,
            source: ResourceSource::Device,
        }
    }

    /// A green context owning the SMs of `sm` (a group of a split of this device's SMs).
    #[doc(alias = "cuGreenCtxCreate")]
    pub fn create_green_context(
        &self,
        sm: &SmResource,
        options: GreenContextOptions,
    ) -> Result<Context> {
        if sm.device != *self {
            return Err(Error::invalid_argument(
                "the SM resource belongs to another device",
            ));
        }
        let mut resources = vec![sm.raw];
        if let Some(workqueue) = options.workqueue {
            resources.push(workqueue.raw);
        }
        let driver = self.driver();
        let mut desc: CUdevResourceDesc = std::ptr::null_mut();
        // SAFETY: valid out-pointer; `resources` holds `len` initialised resources.
        check("cuDevResourceGenerateDesc", unsafe {
            driver.cuDevResourceGenerateDesc(
                &mut desc,
                resources.as_mut_ptr(),
                resources.len() as u32,
            )
        })?;
        let mut green: CUgreenCtx = std::ptr::null_mut();
        // SAFETY: valid out-pointer, descriptor and device; the default-stream flag is required.
        check("cuGreenCtxCreate", unsafe {
            driver.cuGreenCtxCreate(
                &mut green,
                desc,
                self.as_raw(),
                CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0,
            )
        })?;
        Context::green(self, green, sm.sm_count())
    }
}

impl DeviceResources {
    /// The resources of a context (its SMs, for a green context its partition).
    pub(crate) fn of_context(context: &Context) -> Self {
        Self {
            device: *context.device(),
            source: ResourceSource::Context(context.clone()),
        }
    }

    fn get(&self, kind: CUdevResourceType) -> Result<CUdevResource> {
        let driver = self.device.driver();
        let mut raw = CUdevResource::default();
        // SAFETY: valid out-pointer; the device handle, or the context `self` keeps alive.
        let result = unsafe {
            match &self.source {
                ResourceSource::Device => {
                    driver.cuDeviceGetDevResource(self.device.as_raw(), &mut raw, kind)
                }
                ResourceSource::Context(context) => {
                    driver.cuCtxGetDevResource(context.as_raw(), &mut raw, kind)
                }
            }
        };
        let api = match self.source {
            ResourceSource::Device => "cuDeviceGetDevResource",
            ResourceSource::Context(_) => "cuCtxGetDevResource",
        };
        check(api, result)?;
        Ok(raw)
    }

    /// All the SMs (of the device, or of the context these resources came from).
    #[doc(alias = "cuDeviceGetDevResource")]
    pub fn sm(&self) -> Result<SmResource> {
        Ok(SmResource {
            raw: self.get(CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM)?,
            device: self.device,
        })
    }

    /// The device's workqueue configuration, to provision a green context with
    /// ([`GreenContextOptions::workqueue`]). Needs the `cuda-13` ABI and a CUDA 13.1 driver;
    /// otherwise [`Error::Unsupported`].
    pub fn workqueue_config(&self) -> Result<WorkqueueConfig> {
        self.workqueue_config_raw()
            .map(|raw| WorkqueueConfig { raw })
    }

    #[cfg(feature = "cuda-12")]
    fn workqueue_config_raw(&self) -> Result<CUdevResource> {
        Err(Error::unsupported(
            "green-context workqueues",
            "the cuda-12 ABI has no workqueue resources; build with the cuda-13 feature",
        ))
    }

    #[cfg(not(feature = "cuda-12"))]
    fn workqueue_config_raw(&self) -> Result<CUdevResource> {
        let version = crate::driver_version()?;
        if version.0 < 13010 {
            return Err(Error::unsupported(
                "green-context workqueues",
                format!("they need a CUDA 13.1 driver; this one supports CUDA {version}"),
            ));
        }
        self.get(CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG)
    }
}

impl SmResource {
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
        let (major, _) = self.device.compute_capability()?;
        let by_architecture = PartitionRules::for_compute_capability(major);
        Ok(self.stated_rules().unwrap_or(by_architecture))
    }

    #[cfg(feature = "cuda-12")]
    fn stated_rules(&self) -> Option<PartitionRules> {
        None
    }

    #[cfg(not(feature = "cuda-12"))]
    fn stated_rules(&self) -> Option<PartitionRules> {
        // SAFETY: an SM resource stores its fields in the `sm` variant.
        let sm = unsafe { self.raw.__bindgen_anon_1.sm };
        (sm.minSmPartitionSize > 0 && sm.smCoscheduledAlignment > 0).then_some(PartitionRules {
            min_partition_size: sm.minSmPartitionSize,
            alignment: sm.smCoscheduledAlignment,
        })
    }

    /// A dry run: the split worked out from the partition rules and, for equal groups, the
    /// driver's own simulation (`cuDevSmResourceSplitByCount` with no output), which knows the
    /// hardware's topology (an H200 makes 15 groups of 8 SMs, not 16). Creates nothing; gives
    /// the error [`split`](Self::split) would give.
    pub fn plan(&self, request: &SplitRequest) -> Result<SplitPlan> {
        let arch = self.arch_name();
        let plan = plan_split(self.sm_count(), &self.rules()?, request, &arch)?;
        if let Some(size) = equal_size(&plan.counts) {
            let asked = plan.counts.len() as u32;
            let mut possible = asked;
            // SAFETY: a NULL result asks only for the number of groups; input is valid.
            check("cuDevSmResourceSplitByCount", unsafe {
                self.device.driver().cuDevSmResourceSplitByCount(
                    std::ptr::null_mut(),
                    &mut possible,
                    &self.raw,
                    std::ptr::null_mut(),
                    0,
                    size,
                )
            })?;
            if possible < asked {
                return Err(Error::invalid_argument(format!(
                    "asked {asked} x {size} of {} SMs on {arch}: the hardware's layout gives \
                     {possible} x {size} with {} left",
                    self.sm_count(),
                    self.sm_count()
                        .saturating_sub(possible.saturating_mul(size))
                )));
            }
        }
        Ok(plan)
    }

    fn arch_name(&self) -> String {
        self.device
            .arch()
            .map_or_else(|_| "this GPU".to_owned(), |arch| format!("sm_{arch}"))
    }

    /// Splits the SMs into disjoint groups, in one driver call: equal groups through
    /// `cuDevSmResourceSplitByCount`, unequal ones through `cuDevSmResourceSplit` (CUDA 13.1).
    #[doc(alias = "cuDevSmResourceSplitByCount")]
    #[doc(alias = "cuDevSmResourceSplit")]
    pub fn split(&self, request: &SplitRequest) -> Result<SmSplit> {
        let plan = self.plan(request)?;
        let groups = plan.counts.len();
        let mut result = vec![CUdevResource::default(); groups];
        let mut remainder = CUdevResource::default();
        if let Some(size) = equal_size(&plan.counts) {
            let mut produced = groups as u32;
            // SAFETY: `result` holds `produced` resources; input and remainder are valid.
            check("cuDevSmResourceSplitByCount", unsafe {
                self.device.driver().cuDevSmResourceSplitByCount(
                    result.as_mut_ptr(),
                    &mut produced,
                    &self.raw,
                    &mut remainder,
                    0,
                    size,
                )
            })?;
            if produced as usize != groups {
                return Err(Error::invalid_argument(format!(
                    "the driver made {produced} groups of {size} SMs, not the {groups} asked"
                )));
            }
        } else {
            self.split_unequal(&plan, &mut result, &mut remainder)?;
        }
        let groups: Vec<SmResource> = result
            .into_iter()
            .map(|raw| SmResource {
                raw,
                device: self.device,
            })
            .collect();
        for (group, &count) in groups.iter().zip(&plan.counts) {
            if group.sm_count() != count {
                return Err(Error::invalid_argument(format!(
                    "the driver gave a group of {} SMs where {count} were planned",
                    group.sm_count()
                )));
            }
        }
        Ok(SmSplit {
            groups,
            remainder: SmResource {
                raw: remainder,
                device: self.device,
            },
        })
    }

    #[cfg(feature = "cuda-12")]
    fn split_unequal(
        &self,
        _plan: &SplitPlan,
        _result: &mut [CUdevResource],
        _remainder: &mut CUdevResource,
    ) -> Result<()> {
        Err(Error::unsupported(
            "SM groups of different sizes",
            "they need cuDevSmResourceSplit (CUDA 13.1) and the cuda-13 ABI; equal groups work",
        ))
    }

    #[cfg(not(feature = "cuda-12"))]
    fn split_unequal(
        &self,
        plan: &SplitPlan,
        result: &mut [CUdevResource],
        remainder: &mut CUdevResource,
    ) -> Result<()> {
        let mut params: Vec<crate::sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS> = plan
            .counts
            .iter()
            .map(|&count| crate::sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS {
                smCount: count,
                ..Default::default()
            })
            .collect();
        // SAFETY: `result` and `params` hold one entry per group; input and remainder are
        // valid.
        let outcome = unsafe {
            self.device.driver().cuDevSmResourceSplit(
                result.as_mut_ptr(),
                result.len() as u32,
                &self.raw,
                remainder,
                0,
                params.as_mut_ptr(),
            )
        };
        match outcome {
            Err(missing) => Err(Error::unsupported(
                "SM groups of different sizes",
                format!("{missing}; equal groups work on this driver"),
            )),
            result => check("cuDevSmResourceSplit", result),
        }
    }
}

/// The size of every group, when all are the same.
fn equal_size(counts: &[u32]) -> Option<u32> {
    let first = *counts.first()?;
    counts.iter().all(|&count| count == first).then_some(first)
}

/// Checks `request` against `total` SMs and the rules; returns the sizes or an error saying
/// what the hardware can give.
fn plan_split(
    total: u32,
    rules: &PartitionRules,
    request: &SplitRequest,
    arch: &str,
) -> Result<SplitPlan> {
    if request.group_count() == 0 {
        return Err(Error::invalid_argument("a split needs at least one group"));
    }
    let Some(asked) = request.counts_within(total) else {
        return Err(Error::invalid_argument(format!(
            "asked {} groups of {total} SMs on {arch}: a group needs at least one SM",
            request.group_count()
        )));
    };
    let asked = &asked;
    let describe = |counts: &[u32]| {
        if counts.iter().all(|&count| count == counts[0]) {
            format!("{} x {}", counts.len(), counts[0])
        } else {
            format!("{counts:?}")
        }
    };
    let rounded: Option<Vec<u32>> = asked.iter().map(|&count| rules.round_down(count)).collect();
    let exact = asked.iter().all(|&count| rules.allows(count));
    let sum = |counts: &[u32]| counts.iter().map(|&count| u64::from(count)).sum::<u64>();
    let rules_text = format!(
        "groups of at least {} SMs in multiples of {}",
        rules.min_partition_size, rules.alignment
    );
    let counts = match rounded {
        Some(rounded) if exact || request.round => rounded,
        Some(rounded) if sum(&rounded) <= u64::from(total) => {
            return Err(Error::invalid_argument(format!(
                "asked {} of {total} SMs on {arch} ({rules_text}): can give {} with {} left; \
                 allow rounding to take that",
                describe(asked),
                describe(&rounded),
                u64::from(total) - sum(&rounded)
            )));
        }
        _ => {
            return Err(Error::invalid_argument(format!(
                "asked {} of {total} SMs on {arch}, which has {rules_text}",
                describe(asked)
            )));
        }
    };
    if sum(&counts) > u64::from(total) {
        return Err(Error::invalid_argument(format!(
            "asked {} SMs in {} of {total} on {arch}",
            sum(&counts),
            describe(&counts)
        )));
    }
    let used = u32::try_from(sum(&counts)).unwrap_or(total);
    Ok(SplitPlan {
        remainder: total.saturating_sub(used),
        counts,
    })
}

impl Context {
    /// Wraps a new green context (converted to a `CUcontext`), owning it.
    pub(crate) fn green(device: &Device, green: CUgreenCtx, sm_count: u32) -> Result<Context> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer and a green context just created.
        let converted = check("cuCtxFromGreenCtx", unsafe {
            device.driver().cuCtxFromGreenCtx(&mut raw, green)
        });
        if let Err(error) = converted {
            // SAFETY: the green context was created above and is destroyed once, here.
            let _ = unsafe { device.driver().cuGreenCtxDestroy(green) };
            return Err(error);
        }
        Ok(Context::from_green(raw, device, green, sm_count))
    }

    /// The resources of this context (for a green context, its own SMs).
    #[doc(alias = "cuCtxGetDevResource")]
    pub fn resources(&self) -> DeviceResources {
        DeviceResources::of_context(self)
    }
}

/// Destroys a green context, first unbinding it from the calling thread if it is current there
/// (so the thread is not left with a dangling current context).
pub(crate) fn destroy_green(
    driver: &'static crate::sys::Driver,
    raw: crate::sys::CUcontext,
    green: CUgreenCtx,
) -> Result<()> {
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    if let Ok(CUresult::CUDA_SUCCESS) = unsafe { driver.cuCtxGetCurrent(&mut current) } {
        if current == raw {
            // SAFETY: setting no context current is always valid.
            check("cuCtxSetCurrent", unsafe {
                driver.cuCtxSetCurrent(std::ptr::null_mut())
            })?;
        }
    }
    // SAFETY: the green context is owned by the caller and destroyed once.
    check("cuGreenCtxDestroy", unsafe {
        driver.cuGreenCtxDestroy(green)
    })
}

impl fmt::Debug for SmResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmResource")
            .field("sm_count", &self.sm_count())
            .field("device", &self.device.ordinal())
            .finish()
    }
}

impl fmt::Debug for WorkqueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueConfig").finish_non_exhaustive()
    }
}

// SAFETY: the raw resources are plain data describing SMs; no pointer in them is dereferenced
// by this crate (the `nextResource` link is left null).
unsafe impl Send for SmResource {}
// SAFETY: as above.
unsafe impl Sync for SmResource {}
// SAFETY: as above.
unsafe impl Send for WorkqueueConfig {}
// SAFETY: as above.
unsafe impl Sync for WorkqueueConfig {}

#[cfg(test)]
mod tests {
    use super::*;

    const HOPPER: PartitionRules = PartitionRules {
        min_partition_size: 8,
        alignment: 8,
    };

    #[test]
    fn rules_follow_the_architecture() {
        assert_eq!(
            PartitionRules::for_compute_capability(6),
            PartitionRules {
                min_partition_size: 1,
                alignment: 1
            }
        );
        assert_eq!(
            PartitionRules::for_compute_capability(7),
            PartitionRules {
                min_partition_size: 2,
                alignment: 2
            }
        );
        assert_eq!(
            PartitionRules::for_compute_capability(8),
            PartitionRules {
                min_partition_size: 4,
                alignment: 2
            }
        );
        assert_eq!(PartitionRules::for_compute_capability(9), HOPPER);
        assert_eq!(PartitionRules::for_compute_capability(12), HOPPER);
        assert_eq!(HOPPER.round_down(66), Some(64));
        assert_eq!(HOPPER.round_down(7), None);
        assert!(HOPPER.allows(64) && !HOPPER.allows(66));
    }

    #[test]
    fn exact_requests_plan_their_remainder() {
        let plan = plan_split(132, &HOPPER, &SplitRequest::equal(2, 64), "sm_90").unwrap();
        assert_eq!(
            plan,
            SplitPlan {
                counts: vec![64, 64],
                remainder: 4
            }
        );
        let plan = plan_split(132, &HOPPER, &SplitRequest::counts([96, 32]), "sm_90").unwrap();
        assert_eq!(plan.remainder, 4);
        let plan = plan_split(132, &HOPPER, &SplitRequest::equal(16, 8), "sm_90").unwrap();
        assert_eq!(plan.remainder, 4);
    }

    #[test]
    fn inexact_requests_say_what_fits_unless_rounding() {
        let error = plan_split(132, &HOPPER, &SplitRequest::equal(2, 66), "sm_90").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("asked 2 x 66 of 132 SMs on sm_90"), "{text}");
        assert!(text.contains("can give 2 x 64 with 4 left"), "{text}");
        let rounded = SplitRequest::equal(2, 66).rounding(true);
        let plan = plan_split(132, &HOPPER, &rounded, "sm_90").unwrap();
        assert_eq!(
            plan,
            SplitPlan {
                counts: vec![64, 64],
                remainder: 4
            }
        );
    }

    #[test]
    fn impossible_requests_are_refused() {
        for request in [
            SplitRequest::equal(3, 48),
            SplitRequest::equal(1, 4),
            SplitRequest::counts(Vec::new()),
            SplitRequest::equal(1, 136),
            SplitRequest::equal(u32::MAX, 8),
        ] {
            assert!(
                plan_split(132, &HOPPER, &request, "sm_90").is_err(),
                "{request:?}"
            );
        }
    }
}
