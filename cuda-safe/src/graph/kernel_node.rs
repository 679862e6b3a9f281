//! Kernel nodes beyond a plain launch: clusters, cooperative launches and launch attributes
//! (priority, memory synchronisation domains, an access-policy window, cluster scheduling, a
//! preferred cluster shape) written onto the node with `cuGraphKernelNodeSetAttribute`, and
//! programmatic dependent launch between kernel nodes as an edge with a port
//! ([`Graph::add_kernel_edge`]).
//!
//! Programmatic dependent launch is a property of an edge in a graph, not of a node: the
//! attributes that ask for it on a stream launch (`programmatic_stream_serialization`,
//! `programmatic_event`) are refused on nodes, with the edge to use instead. A captured launch
//! that asks for it becomes such an edge (the driver turns it into one).

use super::build::{array_ptr, function_in, kernel_params};
use super::{Graph, KernelNode, Node};
use crate::context::Context;
use crate::error::{Error, Result, cu};
use crate::kernel::Kernel;
use crate::launch::{
    ATTRIBUTE_SLOTS, AttributeSupport, Keep, KernelArgs, LaunchAttributes, LaunchConfig,
    check_args, write_shape,
};
use cuda_sys::{
    CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER, CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
    CUdevice_attribute, CUgraphDependencyType, CUgraphEdgeData, CUgraphNode, CUlaunchAttribute,
    Driver,
};

/// How a kernel node depends on another kernel node when the dependency is not the default
/// one (all of the first, its memory visible, before any of the second): programmatic
/// dependent launch between graph nodes (compute capability 9.0 on, CUDA 12.3 drivers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KernelEdge {
    /// The second kernel may start once every block of the first has called
    /// `cudaTriggerProgrammaticLaunchCompletion()` (or ended); it must call
    /// `cudaGridDependencySynchronize()` before reading what the first writes
    /// (`CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC`, a programmatic dependency), as a stream
    /// launch with `programmatic_stream_serialization` does.
    Programmatic,
    /// The second kernel may start once every block of the first has started
    /// (`CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER`, a programmatic dependency); it waits for the
    /// first in `cudaGridDependencySynchronize()`.
    ProgrammaticAtLaunch,
    /// The second kernel is launched once every block of the first has started, and sees none
    /// of its memory (`CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER`, a default dependency).
    LaunchOrder,
}

impl KernelEdge {
    /// The driver's description of the edge.
    pub(super) fn data(self) -> CUgraphEdgeData {
        let (port, kind) = match self {
            Self::Programmatic => (
                CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
                CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC,
            ),
            Self::ProgrammaticAtLaunch => (
                CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER,
                CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC,
            ),
            Self::LaunchOrder => (
                CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER,
                CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_DEFAULT,
            ),
        };
        CUgraphEdgeData {
            from_port: port as u8,
            to_port: 0,
            type_: kind.0 as u8,
            reserved: [0; 5],
        }
    }
}

/// Refuses attributes a graph node cannot hold (programmatic dependent launch is an edge),
/// then checks the others against `config` and `context`'s device and driver.
pub(super) fn check_attributes(
    attributes: &LaunchAttributes<'_>,
    config: &LaunchConfig,
    context: &Context,
) -> Result<()> {
    if attributes.count() == 0 {
        return Ok(());
    }
    if attributes.programmatic_stream_serialization || attributes.programmatic_event.is_some() {
        return Err(Error::invalid_argument(
            "programmatic dependent launch between graph nodes is an edge, not a node \
             attribute: add both kernel nodes, then Graph::add_kernel_edge with \
             KernelEdge::Programmatic (a captured launch_with becomes that edge)",
        ));
    }
    attributes.validate(config, &AttributeSupport::of_context(context)?)
}

/// Refuses a cooperative `config` whose grid is larger than the blocks of `kernel` that can
/// be resident on `context`'s device at once (which a grid-wide synchronization needs).
pub(super) fn check_co_residency(
    kernel: &Kernel,
    config: &LaunchConfig,
    context: &Context,
) -> Result<()> {
    if !config.cooperative {
        return Ok(());
    }
    let device = context.device();
    let threads = u32::try_from(config.block.volume()).unwrap_or(u32::MAX);
    let per_sm = kernel
        .occupancy(device)
        .max_active_blocks_per_multiprocessor(threads, config.shared_mem as usize)?;
    let sms = device.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let resident = u64::from(per_sm) * u64::from(sms.max(0) as u32);
    if config.grid.volume() > resident {
        return Err(Error::invalid_argument(format!(
            "a cooperative grid of {} blocks is more than the {resident} blocks of kernel `{}` \
             that can be resident at once ({per_sm} per SM x {sms} SMs, for blocks of {threads} \
             threads and {} bytes of dynamic shared memory)",
            config.grid.volume(),
            kernel.name(),
            config.shared_mem
        )));
    }
    Ok(())
}

/// Writes `config`'s cluster shape and cooperation and `attributes` onto the kernel node `raw`
/// (one `cuGraphKernelNodeSetAttribute` each); nothing for a plain launch without attributes.
///
/// # Safety
///
/// `raw` must be a live kernel node; `attributes` checked ([`check_attributes`]).
pub(super) unsafe fn write_attributes(
    driver: &'static Driver,
    raw: CUgraphNode,
    config: &LaunchConfig,
    attributes: &LaunchAttributes<'_>,
) -> Result<()> {
    let mut slots = [CUlaunchAttribute::default(); ATTRIBUTE_SLOTS];
    let mut count = write_shape(config, &mut slots);
    count += attributes.write(&mut slots[count..]);
    for slot in &slots[..count] {
        // SAFETY: a live kernel node (the caller's promise); the value is the one the
        // attribute's id names, on this stack frame (the driver copies it).
        unsafe {
            cu!(
                driver,
                cuGraphKernelNodeSetAttribute(raw, slot.id, &slot.value)
            )
        }?;
    }
    Ok(())
}

impl Graph {
    /// Adds a kernel node, as [`add_kernel`](Self::add_kernel) does, with launch `attributes`
    /// beyond the configuration's cluster and cooperation: a priority (which the executable
    /// follows when instantiated with
    /// [`InstantiateOptions::use_node_priority`](super::InstantiateOptions::use_node_priority)),
    /// memory synchronisation domains, an access-policy window, cluster scheduling or a
    /// preferred cluster shape, each written onto the node (`cuGraphKernelNodeSetAttribute`).
    /// Programmatic dependent launch is an edge between kernel nodes instead
    /// ([`add_kernel_edge`](Self::add_kernel_edge)).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddKernelNode)]
    #[doc = cuda_sys::api_doc!(cuGraphKernelNodeSetAttribute)]
    /// # Errors
    ///
    /// As [`add_kernel`](Self::add_kernel); before anything is added,
    /// [`Error::InvalidArgument`] for a programmatic attribute and as
    /// [`LaunchAttributes::validate`] against the graph's device and driver. When writing an
    /// attribute fails, the node is removed again and the driver's error returned.
    ///
    /// # Safety
    ///
    /// As [`add_kernel`](Self::add_kernel).
    #[doc(
        alias = "cuGraphAddKernelNode",
        alias = "cuGraphKernelNodeSetAttribute"
    )]
    pub unsafe fn add_kernel_with<A: KernelArgs>(
        &mut self,
        dependencies: &[Node],
        config: &LaunchConfig,
        attributes: &LaunchAttributes<'_>,
        kernel: &Kernel,
        args: A,
    ) -> Result<KernelNode> {
        let deps = self.raw_nodes(dependencies)?;
        config.validate_in(&self.context)?;
        check_attributes(attributes, config, &self.context)?;
        let context = &self.context;
        args.with_params(|_, sizes, names| check_args(kernel, context, sizes, names))?;
        check_co_residency(kernel, config, context)?;
        let function = function_in(kernel, context)?;
        let mut keep: Vec<Keep> = vec![Box::new(kernel.clone())];
        args.keep_alive(&mut keep);
        self.keep(keep)?;
        let (graph, driver) = (self.as_raw(), self.driver());
        let raw = args.with_params(|pointers, _, _| -> Result<CUgraphNode> {
            let params = kernel_params(function, config, pointers);
            let mut node: CUgraphNode = std::ptr::null_mut();
            // SAFETY: the description and the argument values it points to live on this
            // stack frame (the driver copies them); the dependencies are nodes of this graph;
            // the kernel and every shared buffer are kept by the graph.
            unsafe {
                cu!(
                    driver,
                    cuGraphAddKernelNode_v2(
                        &mut node,
                        graph,
                        array_ptr(&deps),
                        deps.len(),
                        &params
                    )
                )
            }?;
            Ok(node)
        })?;
        // SAFETY: the kernel node just added; the attributes were checked above.
        if let Err(error) = unsafe { write_attributes(driver, raw, config, attributes) } {
            // SAFETY: the node was just added to this graph and nothing refers to it.
            if let Err(removal) = unsafe { cu!(driver, cuGraphDestroyNode(raw)) } {
                let defect = format!(
                    "kernel node {raw:?} lacks the launch attributes that failed ({error}) and \
                     could not be removed ({removal})"
                );
                log::error!("cuda-safe: {defect}");
                self.defect = Some(defect);
            }
            return Err(error);
        }
        Ok(KernelNode {
            node: self.node(raw),
            kernel: kernel.clone(),
            config: *config,
            function,
        })
    }

    /// Sets launch `attributes` on a kernel node of this graph, added or captured, for the
    /// executables instantiated from now on (`cuGraphKernelNodeSetAttribute`, one call per
    /// attribute set; those not set are left as they are).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphKernelNodeSetAttribute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or a removed one, a
    /// programmatic attribute, or as [`LaunchAttributes::validate`] against the node's
    /// configuration and the graph's device and driver; the driver's error.
    #[doc(alias = "cuGraphKernelNodeSetAttribute")]
    pub fn set_kernel_attributes(
        &mut self,
        node: &KernelNode,
        attributes: &LaunchAttributes<'_>,
    ) -> Result<()> {
        let raw = self.raw_node(node.node)?;
        check_attributes(attributes, &node.config, &self.context)?;
        let plain = LaunchConfig {
            cluster: None,
            cooperative: false,
            ..node.config
        };
        // SAFETY: a live kernel node of this graph (it was named as one); checked attributes.
        unsafe { write_attributes(self.driver(), raw, &plain, attributes) }
    }

    /// Adds the edge `from -> to` between two kernel nodes of this graph with `edge`'s port
    /// and type (`cuGraphAddDependencies_v2` with edge data): programmatic dependent launch in
    /// a graph. Add `to` without `from` among its dependencies (two edges between the same
    /// nodes are refused by the driver).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddDependencies_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or a removed one, or the same
    /// node twice; [`Error::Unsupported`] before compute capability 9.0 and (a missing
    /// symbol) before a CUDA 12.3 driver; the driver's error (an edge that exists already).
    #[doc(alias = "cuGraphAddDependencies_v2")]
    pub fn add_kernel_edge(
        &mut self,
        from: &KernelNode,
        to: &KernelNode,
        edge: KernelEdge,
    ) -> Result<()> {
        let (source, target) = (self.raw_node(from.node)?, self.raw_node(to.node)?);
        if source == target {
            return Err(Error::invalid_argument(
                "a kernel edge joins two different nodes",
            ));
        }
        let (major, minor) = self.context.device().compute_capability()?;
        if major < 9 {
            return Err(Error::unsupported(
                "programmatic dependent launch in graphs",
                format!("it needs compute capability 9.0, the device has {major}.{minor}"),
            ));
        }
        let data = edge.data();
        // SAFETY: two live nodes of this live graph and one edge's data, on this stack frame.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddDependencies_v2(self.as_raw(), &source, &target, &data, 1)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_edges_name_the_drivers_ports_and_types() {
        let programmatic = KernelEdge::Programmatic.data();
        assert_eq!((programmatic.from_port, programmatic.type_), (1, 1));
        let at_launch = KernelEdge::ProgrammaticAtLaunch.data();
        assert_eq!((at_launch.from_port, at_launch.type_), (2, 1));
        let order = KernelEdge::LaunchOrder.data();
        assert_eq!((order.from_port, order.type_), (2, 0));
        for edge in [programmatic, at_launch, order] {
            assert_eq!((edge.to_port, edge.reserved), (0, [0; 5]));
        }
    }

    #[test]
    fn shapes_become_the_cluster_and_cooperative_attributes() {
        use crate::launch::Dim3;
        use cuda_sys::CUlaunchAttributeID as Id;
        let mut slots = [CUlaunchAttribute::default(); ATTRIBUTE_SLOTS];
        assert_eq!(write_shape(&LaunchConfig::new(4, 32), &mut slots), 0);
        let config = LaunchConfig {
            cooperative: true,
            ..LaunchConfig::clusters(2, (2, 1, 1), 32).unwrap()
        };
        assert_eq!(write_shape(&config, &mut slots), 2);
        assert_eq!(slots[0].id, Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
        // SAFETY: the cluster variant is the one written for that id.
        let cluster = unsafe { slots[0].value.clusterDim };
        assert_eq!(Dim3::from((cluster.x, cluster.y, cluster.z)), Dim3::from(2));
        assert_eq!(slots[1].id, Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
        // SAFETY: as above, for cooperation.
        assert_eq!(unsafe { slots[1].value.cooperative }, 1);
        assert_eq!(
            write_shape(&config, &mut slots[..1]),
            1,
            "no room: no overrun"
        );
    }
}
