//! Cloning a graph (`cuGraphClone`) and finding a node's copy in the clone
//! (`cuGraphNodeFindInClone`), and removing nodes (`cuGraphDestroyNode`).
//!
//! A clone keeps alive what the original keeps (it retains the same user objects) and reports
//! its host nodes' panics like its own. A removed node's handle is refused by every call that
//! takes one.

use super::{Graph, KernelNode, Node, next_id};
use crate::error::{Error, Result, cu};
use cuda_sys::{CUgraph, CUgraphNode};

impl Graph {
    /// A copy of this graph, with every node, edge and parameter (`cuGraphClone`): built on,
    /// changed and instantiated on its own. It keeps alive what this graph keeps; its nodes
    /// are found from this graph's by [`node_in_clone`](Self::node_in_clone).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphClone)]
    /// # Errors
    ///
    /// The driver's error (a graph holding allocation nodes cannot be cloned).
    #[doc(alias = "cuGraphClone")]
    pub fn try_clone(&self) -> Result<Graph> {
        let mut raw: CUgraph = std::ptr::null_mut();
        // SAFETY: a valid graph and out-pointer.
        unsafe { cu!(self.driver(), cuGraphClone(&mut raw, self.as_raw())) }?;
        let mut clone = Graph::from_parts(raw, next_id(), self.context.clone(), Vec::new());
        clone.cloned_from = Some(self.id);
        // Dropped (destroying the clone) if a retain fails.
        clone.adopt(self)?;
        clone.kept_buffers = self.kept_buffers.clone();
        Ok(clone)
    }

    /// The copy in `clone` (made from this graph by [`try_clone`](Self::try_clone)) of `node`,
    /// a node of this graph (`cuGraphNodeFindInClone`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphNodeFindInClone)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `clone` is not a clone of this graph, for a node of
    /// another graph, or one removed from this graph or from the clone; the driver's error (a
    /// node added after the clone was made).
    #[doc(alias = "cuGraphNodeFindInClone")]
    pub fn node_in_clone(&self, clone: &Graph, node: Node) -> Result<Node> {
        let original = self.raw_node(node)?;
        if clone.cloned_from != Some(self.id) {
            return Err(Error::invalid_argument(
                "the graph given is not a clone of this one (made by its try_clone)",
            ));
        }
        let mut found: CUgraphNode = std::ptr::null_mut();
        // SAFETY: a live node of this graph and the live clone made from it; valid out-pointer.
        unsafe {
            cu!(
                self.driver(),
                cuGraphNodeFindInClone(&mut found, original, clone.as_raw())
            )
        }?;
        if clone.removals.contains_key(&found) {
            return Err(Error::invalid_argument(format!(
                "node {found:?}, the clone's copy of {original:?}, was removed from the clone"
            )));
        }
        Ok(clone.node(found))
    }

    /// The copy in `clone` of a kernel node of this graph, as
    /// [`node_in_clone`](Self::node_in_clone) finds it, running the same kernel with the same
    /// shape.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphNodeFindInClone)]
    /// # Errors
    ///
    /// As [`node_in_clone`](Self::node_in_clone).
    #[doc(alias = "cuGraphNodeFindInClone")]
    pub fn kernel_node_in_clone(&self, clone: &Graph, node: &KernelNode) -> Result<KernelNode> {
        let found = self.node_in_clone(clone, node.node)?;
        Ok(KernelNode {
            node: found,
            ..node.clone()
        })
    }

    /// Removes `node` and its edges from the graph (`cuGraphDestroyNode`); its handle (and
    /// every copy of it) is refused from now on. What it used stays alive with the graph.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphDestroyNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or one removed already; the
    /// driver's error.
    #[doc(alias = "cuGraphDestroyNode")]
    pub fn remove_node(&mut self, node: Node) -> Result<()> {
        let raw = self.raw_node(node)?;
        // SAFETY: a live node of this graph; its handle is refused from now on (below).
        unsafe { cu!(self.driver(), cuGraphDestroyNode(raw)) }?;
        *self.removals.entry(raw).or_insert(0) += 1;
        Ok(())
    }
}
