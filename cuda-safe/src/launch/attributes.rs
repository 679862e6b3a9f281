//! The launch attributes of `cuLaunchKernelEx` beyond clusters and cooperation:
//! [`LaunchAttributes`], checked against what the device and driver support
//! ([`AttributeSupport`]) before the launch, and written into the attribute array on the stack.

use super::config::{Dim3, LaunchConfig};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::Buffer;
use crate::stream::Stream;
use cuda_sys::{
    CUaccessPolicyWindow, CUaccessProperty, CUclusterSchedulingPolicy, CUdevice_attribute,
    CUlaunchAttribute, CUlaunchAttributeID, CUlaunchMemSyncDomain,
};

/// The attributes of one launch through [`launch_with`](crate::launch_with), each off by
/// default. The configuration's cluster shape and cooperation go with them.
///
/// ```
/// use cuda_safe::{ClusterScheduling, Dim3, LaunchAttributes};
///
/// let attributes = LaunchAttributes::default()
///     .programmatic_stream_serialization(true)
///     .preferred_cluster(Dim3::from(4))
///     .cluster_scheduling(ClusterScheduling::Spread)
///     .priority(-1);
/// assert_eq!(attributes.count(), 4);
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct LaunchAttributes<'a> {
    /// Programmatic dependent launch: the next kernel on the stream may start before this one
    /// ends (it waits in `cudaGridDependencySynchronize`, this one lets it go with
    /// `cudaTriggerProgrammaticLaunchCompletion`). Compute capability 9.0 on.
    pub programmatic_stream_serialization: bool,
    /// Records an event when every block of this kernel has triggered (or started, with
    /// `trigger_at_block_start`), for another stream to wait on. Compute capability 9.0 on.
    pub programmatic_event: Option<ProgrammaticEvent<'a>>,
    /// A preferred cluster shape the scheduler uses where it fits, falling back to the
    /// configuration's cluster (a multiple of it along x and y, equal along z, dividing the
    /// grid; CUDA 12.8 drivers on). A driver that refuses it on the device is reported as
    /// [`Error::Unsupported`].
    pub preferred_cluster: Option<Dim3>,
    /// How clusters are spread over the GPU (needs a cluster launch).
    pub cluster_scheduling: Option<ClusterScheduling>,
    /// The launch's priority, within the context's stream priority range.
    pub priority: Option<i32>,
    /// The memory synchronisation domain of the kernel's fences.
    pub mem_sync_domain: Option<MemSyncDomain>,
    /// Which hardware domain each logical domain maps to.
    pub mem_sync_domain_map: Option<MemSyncDomainMap>,
    /// An L2 access-policy window over the kernel's hot data.
    pub access_policy_window: Option<AccessPolicyWindow>,
}

crate::setters::setters! {
    impl LaunchAttributes<'a> {
        programmatic_stream_serialization: value bool,
        programmatic_event: some ProgrammaticEvent<'a>,
        preferred_cluster: some_into Dim3,
        cluster_scheduling: some ClusterScheduling,
        priority: some i32,
        mem_sync_domain: some MemSyncDomain,
        mem_sync_domain_map: some MemSyncDomainMap,
        access_policy_window: some AccessPolicyWindow,
    }
}

/// An event recorded when every block of a kernel has triggered its dependents.
#[derive(Debug, Clone, Copy)]
pub struct ProgrammaticEvent<'a> {
    /// The event: of the launch's context, created without timing and not for IPC.
    pub event: &'a Event,
    /// Record it when each block has started, instead of when each has triggered.
    pub trigger_at_block_start: bool,
}

/// How clusters are placed on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClusterScheduling {
    /// The driver's choice.
    Default,
    /// Spread over as many GPCs as possible.
    Spread,
    /// Balance the load, which may pack clusters.
    LoadBalancing,
}

/// A logical memory synchronisation domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemSyncDomain {
    /// The default domain.
    Default,
    /// The remote domain (for kernels talking to other GPUs).
    Remote,
}

/// The hardware domain each logical domain maps to (below the device's domain count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemSyncDomainMap {
    /// The default domain's hardware domain.
    pub default: u8,
    /// The remote domain's hardware domain.
    pub remote: u8,
}

/// How L2 treats accesses inside or outside an access-policy window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AccessProperty {
    /// Normal caching.
    Normal,
    /// Streaming: likely to be evicted first.
    Streaming,
    /// Persisting: kept in the set-aside L2.
    Persisting,
}

/// An L2 access-policy window: `hit_ratio` of the accesses to `num_bytes` from `base` get
/// `hit`, the others `miss`. It is a hint: the address is never dereferenced by the crate.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AccessPolicyWindow {
    /// The window's first device address.
    pub base: u64,
    /// Its size in bytes (up to the device's maximum window).
    pub num_bytes: usize,
    /// The fraction of accesses in the window that get `hit` (0 to 1).
    pub hit_ratio: f32,
    /// The property of those accesses.
    pub hit: AccessProperty,
    /// The property of the others.
    pub miss: AccessProperty,
}

crate::setters::setters! {
    impl AccessPolicyWindow {
        base: value u64,
        num_bytes: value usize,
        hit_ratio: value f32,
        hit: value AccessProperty,
        miss: value AccessProperty,
    }
}

impl AccessPolicyWindow {
    /// A window of `num_bytes` from `base`, persisting `hit_ratio` of its accesses and
    /// streaming the rest (`hit` and `miss` change that).
    pub fn new(base: u64, num_bytes: usize, hit_ratio: f32) -> Self {
        Self {
            base,
            num_bytes,
            hit_ratio,
            hit: AccessProperty::Persisting,
            miss: AccessProperty::Streaming,
        }
    }

    /// A window over the whole of `buffer`, persisting `hit_ratio` of its accesses and
    /// streaming the rest.
    pub fn persisting(buffer: &Buffer, hit_ratio: f32) -> Self {
        Self {
            base: buffer.as_raw(),
            num_bytes: buffer.len(),
            hit_ratio,
            hit: AccessProperty::Persisting,
            miss: AccessProperty::Streaming,
        }
    }
}

/// What the launch's device and driver support, as the checks need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttributeSupport {
    /// Compute capability, `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// The driver's CUDA version (`12080` for 12.8).
    pub driver_version: u32,
    /// The context's stream priorities, `(least, greatest)` (numerically lower is higher).
    pub priority_range: (i32, i32),
    /// Memory synchronisation domains of the device.
    pub mem_sync_domains: u32,
    /// The largest access-policy window in bytes (0: none).
    pub max_access_policy_window: usize,
}

impl AttributeSupport {
    /// What `stream`'s device, context and driver support.
    pub fn of(stream: &Stream) -> Result<Self> {
        Self::of_context(stream.context())
    }

    /// What `context`, its device and the driver support (a graph's kernel nodes run there).
    pub(crate) fn of_context(context: &Context) -> Result<Self> {
        let device = context.device();
        let attribute = |which| device.attribute(which).map(|value| value.max(0) as u32);
        Ok(Self {
            compute_capability: device.compute_capability()?,
            driver_version: crate::driver::cuda_driver_version()?.0,
            priority_range: context.stream_priority_range()?,
            mem_sync_domains: attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
            )?,
            max_access_policy_window: attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
            )? as usize,
        })
    }
}

impl LaunchAttributes<'_> {
    /// How many attributes are set.
    pub fn count(&self) -> usize {
        [
            self.programmatic_stream_serialization,
            self.programmatic_event.is_some(),
            self.preferred_cluster.is_some(),
            self.cluster_scheduling.is_some(),
            self.priority.is_some(),
            self.mem_sync_domain.is_some(),
            self.mem_sync_domain_map.is_some(),
            self.access_policy_window.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// Checks every attribute against `config` and `support`, naming the rule broken.
    ///
    /// # Errors
    ///
    /// - [`Error::Unsupported`]: programmatic launches, cluster scheduling or memory
    ///   synchronisation domains before compute capability 9.0, a preferred cluster shape
    ///   before a CUDA 12.8 driver, an access-policy window on a device without one;
    /// - [`Error::InvalidArgument`]: a preferred cluster or cluster scheduling without a
    ///   cluster in `config`, a preferred cluster that is not a multiple of the cluster or does
    ///   not divide the grid, a priority outside the range, a domain map past the device's
    ///   domains, an empty or oversized window or a hit ratio outside 0 to 1.
    pub fn validate(&self, config: &LaunchConfig, support: &AttributeSupport) -> Result<()> {
        let hopper = support.compute_capability.0 >= 9;
        let needs_hopper = |feature: &'static str| {
            Err(Error::unsupported(
                feature,
                format!(
                    "it needs compute capability 9.0, the device has {}.{}",
                    support.compute_capability.0, support.compute_capability.1
                ),
            ))
        };
        if (self.programmatic_stream_serialization || self.programmatic_event.is_some()) && !hopper
        {
            return needs_hopper("programmatic dependent launch");
        }
        if let Some(preferred) = self.preferred_cluster {
            if support.driver_version < 12_080 {
                return Err(Error::unsupported(
                    "preferred cluster dimensions",
                    format!(
                        "they need a CUDA 12.8 driver, this one is {}.{}",
                        support.driver_version / 1000,
                        support.driver_version % 1000 / 10
                    ),
                ));
            }
            let Some(cluster) = config.cluster else {
                return invalid(
                    "a preferred cluster shape needs LaunchConfig::cluster (the fallback shape)",
                );
            };
            if preferred.z != cluster.z {
                return invalid(format!(
                    "the preferred cluster {preferred:?} must equal the cluster {cluster:?} \
                     along z"
                ));
            }
            let axes = [
                (preferred.x, cluster.x, config.grid.x),
                (preferred.y, cluster.y, config.grid.y),
                (preferred.z, cluster.z, config.grid.z),
            ];
            for (preferred_axis, cluster_axis, grid_axis) in axes {
                if preferred_axis == 0 || !preferred_axis.is_multiple_of(cluster_axis.max(1)) {
                    return invalid(format!(
                        "the preferred cluster {preferred:?} must be a multiple of the cluster \
                         {cluster:?} along every axis"
                    ));
                }
                if !grid_axis.is_multiple_of(preferred_axis) {
                    return invalid(format!(
                        "the grid {:?} must be a multiple of the preferred cluster {preferred:?}",
                        config.grid
                    ));
                }
            }
        }
        if self.cluster_scheduling.is_some() {
            if !hopper {
                return needs_hopper("cluster scheduling policies");
            }
            if config.cluster.is_none() {
                return invalid("a cluster scheduling policy needs LaunchConfig::cluster");
            }
        }
        if let Some(priority) = self.priority {
            let (least, greatest) = support.priority_range;
            if priority > least || priority < greatest {
                return invalid(format!(
                    "priority {priority} is outside the context's range {greatest} (highest) to \
                     {least} (lowest)"
                ));
            }
        }
        if self.mem_sync_domain.is_some() || self.mem_sync_domain_map.is_some() {
            if !hopper {
                return needs_hopper("memory synchronisation domains");
            }
            if let Some(map) = self.mem_sync_domain_map {
                let domains = support.mem_sync_domains;
                if u32::from(map.default) >= domains || u32::from(map.remote) >= domains {
                    return invalid(format!(
                        "the domain map {map:?} names a domain past the device's {domains}"
                    ));
                }
            }
        }
        if let Some(window) = self.access_policy_window {
            if support.max_access_policy_window == 0 {
                return Err(Error::unsupported(
                    "access-policy windows",
                    "the device has no L2 set-aside (its largest window is 0 bytes)",
                ));
            }
            if window.num_bytes == 0 || window.num_bytes > support.max_access_policy_window {
                return invalid(format!(
                    "an access-policy window of {} bytes (1 to the device's {})",
                    window.num_bytes, support.max_access_policy_window
                ));
            }
            if !(0.0..=1.0).contains(&window.hit_ratio) {
                return invalid(format!(
                    "the hit ratio {} is outside 0 to 1",
                    window.hit_ratio
                ));
            }
            if window.miss == AccessProperty::Persisting {
                return invalid(
                    "an access-policy window's miss property must be Normal or Streaming \
                     (cuda.h's missProp), not Persisting",
                );
            }
        }
        Ok(())
    }

    /// Checks what only the launch's stream can tell: a programmatic event of its context,
    /// without timing or IPC.
    pub(crate) fn validate_event(&self, stream: &Stream) -> Result<()> {
        let Some(programmatic) = self.programmatic_event else {
            return Ok(());
        };
        let options = programmatic.event.options();
        if options.timing || options.ipc {
            return invalid("a programmatic event must be created without timing and IPC");
        }
        if !programmatic.event.context().same_as(stream.context()) {
            return invalid("the programmatic event belongs to another context than the stream");
        }
        Ok(())
    }

    /// Writes the set attributes into `slots` (which must have room for [`count`](Self::count)
    /// of them) and returns how many.
    pub(crate) fn write(&self, slots: &mut [CUlaunchAttribute]) -> usize {
        use CUlaunchAttributeID as Id;
        let mut count = 0;
        let mut push = |slot: CUlaunchAttribute| {
            if let Some(place) = slots.get_mut(count) {
                *place = slot;
                count += 1;
            }
        };
        let attribute = |id: Id| CUlaunchAttribute {
            id,
            ..Default::default()
        };
        if self.programmatic_stream_serialization {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
            slot.value.programmaticStreamSerializationAllowed = 1;
            push(slot);
        }
        if let Some(programmatic) = self.programmatic_event {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT);
            slot.value.programmaticEvent.event = programmatic.event.as_raw();
            slot.value.programmaticEvent.flags = 0;
            slot.value.programmaticEvent.triggerAtBlockStart =
                i32::from(programmatic.trigger_at_block_start);
            push(slot);
        }
        if let Some(preferred) = self.preferred_cluster {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION);
            slot.value.preferredClusterDim.x = preferred.x;
            slot.value.preferredClusterDim.y = preferred.y;
            slot.value.preferredClusterDim.z = preferred.z;
            push(slot);
        }
        if let Some(policy) = self.cluster_scheduling {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
            slot.value.clusterSchedulingPolicyPreference = match policy {
                ClusterScheduling::Default => {
                    CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_DEFAULT
                }
                ClusterScheduling::Spread => {
                    CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_SPREAD
                }
                ClusterScheduling::LoadBalancing => {
                    CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING
                }
            };
            push(slot);
        }
        if let Some(priority) = self.priority {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_PRIORITY);
            slot.value.priority = priority;
            push(slot);
        }
        if let Some(domain) = self.mem_sync_domain {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
            slot.value.memSyncDomain = match domain {
                MemSyncDomain::Default => CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT,
                MemSyncDomain::Remote => CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE,
            };
            push(slot);
        }
        if let Some(map) = self.mem_sync_domain_map {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP);
            slot.value.memSyncDomainMap.default_ = map.default;
            slot.value.memSyncDomainMap.remote = map.remote;
            push(slot);
        }
        if let Some(window) = self.access_policy_window {
            let mut slot = attribute(Id::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
            slot.value.accessPolicyWindow = CUaccessPolicyWindow {
                base_ptr: window.base as usize as *mut std::ffi::c_void,
                num_bytes: window.num_bytes,
                hitRatio: window.hit_ratio,
                hitProp: access_property(window.hit),
                missProp: access_property(window.miss),
            };
            push(slot);
        }
        count
    }
}

fn access_property(property: AccessProperty) -> CUaccessProperty {
    match property {
        AccessProperty::Normal => CUaccessProperty::CU_ACCESS_PROPERTY_NORMAL,
        AccessProperty::Streaming => CUaccessProperty::CU_ACCESS_PROPERTY_STREAMING,
        AccessProperty::Persisting => CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING,
    }
}

fn invalid(what: impl Into<String>) -> Result<()> {
    Err(Error::invalid_argument(format!(
        "launch attributes: {}",
        what.into()
    )))
}

#[cfg(test)]
mod tests;
