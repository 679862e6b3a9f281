//! The driver's ids of graphs, executables and nodes (CUDA 13.1 drivers, the CUDA 13 ABI):
//! what tools and logs name them by. Under the CUDA 12 ABI each is [`Error::Unsupported`]
//! (the bindings lack the calls); on an older driver, a missing symbol (also
//! `is_not_supported()`).
//!
//! [`Error::Unsupported`]: crate::Error::Unsupported

use super::{Graph, GraphExec, Node};
use crate::abi;
use crate::error::Result;

impl Graph {
    /// The driver's id of this graph, unique in the process and fixed for its life
    /// (`cuGraphGetId`).
    ///
    /// Calls [`cuGraphGetId`][cuGraphGetId] (in the CUDA 13 bindings only). Needs a CUDA 13.1
    /// driver.
    ///
    /// [cuGraphGetId]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html#group__CUDA__GRAPH_1g0f05ae29d14198ff57d722156d60aa41
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`](crate::Error::Unsupported) under the CUDA 12 ABI; a missing
    /// symbol before a CUDA 13.1 driver; the driver's error.
    #[doc(alias = "cuGraphGetId")]
    pub fn driver_id(&self) -> Result<u32> {
        // SAFETY: a valid graph.
        unsafe { abi::graph_id(self.driver(), self.as_raw()) }
    }

    /// The id of `node` among the nodes of this graph, fixed for the node's life
    /// (`cuGraphNodeGetLocalId`).
    ///
    /// Calls [`cuGraphNodeGetLocalId`][cuGraphNodeGetLocalId] (in the CUDA 13 bindings only). Needs a CUDA 13.1
    /// driver.
    ///
    /// [cuGraphNodeGetLocalId]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html#group__CUDA__GRAPH_1g18fd5107a28aaae1e396efcb0edaa70d
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph
    /// or a removed one; as [`driver_id`](Self::driver_id).
    #[doc(alias = "cuGraphNodeGetLocalId")]
    pub fn node_local_id(&self, node: Node) -> Result<u32> {
        let raw = self.raw_node(node)?;
        // SAFETY: a live node of this graph.
        unsafe { abi::node_local_id(self.driver(), raw) }
    }

    /// The id tools (CUPTI, Nsight Systems) give `node`, unique in the process
    /// (`cuGraphNodeGetToolsId`).
    ///
    /// Calls [`cuGraphNodeGetToolsId`][cuGraphNodeGetToolsId] (in the CUDA 13 bindings only). Needs a CUDA 13.1
    /// driver.
    ///
    /// [cuGraphNodeGetToolsId]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html#group__CUDA__GRAPH_1g10d4cf58921a26acce90ed1a03fcd4c1
    ///
    /// # Errors
    ///
    /// As [`node_local_id`](Self::node_local_id).
    #[doc(alias = "cuGraphNodeGetToolsId")]
    pub fn node_tools_id(&self, node: Node) -> Result<u64> {
        let raw = self.raw_node(node)?;
        // SAFETY: a live node of this graph.
        unsafe { abi::node_tools_id(self.driver(), raw) }
    }
}

impl GraphExec {
    /// The driver's id of this executable, unique in the process and fixed for its life
    /// (`cuGraphExecGetId`).
    ///
    /// Calls [`cuGraphExecGetId`][cuGraphExecGetId] (in the CUDA 13 bindings only). Needs a CUDA 13.1
    /// driver.
    ///
    /// [cuGraphExecGetId]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html#group__CUDA__GRAPH_1g7a561a95ac508d0a99bccbf89aa01509
    ///
    /// # Errors
    ///
    /// As [`Graph::driver_id`].
    #[doc(alias = "cuGraphExecGetId")]
    pub fn driver_id(&self) -> Result<u32> {
        // SAFETY: a valid executable.
        unsafe { abi::exec_id(self.handle.driver, self.handle.raw) }
    }
}
