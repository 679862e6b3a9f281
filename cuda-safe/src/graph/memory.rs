//! Memory nodes: memsets and copies of buffers the graph keeps alive (or of raw addresses,
//! `unsafe`), and graph allocations, valid between their allocation and free nodes.

use std::sync::Arc;

use bytemuck::Pod;

use super::build::array_ptr;
use super::{Graph, GraphAllocation, Node};
use crate::error::{Error, Result, cu};
use crate::memory::copies::linear_description;
use crate::memory::{Buffer, memset_description, pool_props};
use cuda_sys::{CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEMCPY3D, CUdeviceptr, CUgraphNode};

impl Graph {
    /// Adds a memset node, after `dependencies`, that sets every element of `dst` to `value`
    /// (`cuGraphAddMemsetNode`); the graph keeps `dst` alive. `value`'s bytes must repeat every
    /// 1, 2 or 4 bytes (any integer or float of up to 32 bits, or zero of any type), and `dst`
    /// hold a whole number of them.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemsetNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph, an empty buffer, a size
    /// that is not a whole number of `T`s or a value the driver cannot set in one node; the
    /// driver's error.
    #[doc(alias = "cuGraphAddMemsetNode")]
    pub fn add_memset<T: Pod>(
        &mut self,
        dependencies: &[Node],
        dst: &Arc<Buffer>,
        value: T,
    ) -> Result<Node> {
        let count = dst.as_slice::<T>()?.len();
        // SAFETY: `count` values of `T` fit `dst` (checked), which the graph keeps alive.
        unsafe { self.memset_node(dependencies, dst.as_raw(), value, count, &[dst]) }
    }

    /// Adds a memset node that sets `count` values at the address `dst` to `value`, as
    /// [`add_memset`](Self::add_memset) does for a buffer.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemsetNode)]
    /// # Errors
    ///
    /// As [`add_memset`](Self::add_memset).
    ///
    /// # Safety
    ///
    /// `dst` must start `count` values of `T` in the graph's context (aligned for the word
    /// written), allocated whenever the node runs: for as long as this graph or an executable
    /// made from it may run, or, for a [`GraphAllocation`], between its allocation and free.
    #[doc(alias = "cuGraphAddMemsetNode")]
    pub unsafe fn add_memset_raw<T: Pod>(
        &mut self,
        dependencies: &[Node],
        dst: CUdeviceptr,
        value: T,
        count: usize,
    ) -> Result<Node> {
        // SAFETY: the caller's promise.
        unsafe { self.memset_node(dependencies, dst, value, count, &[]) }
    }

    /// # Safety
    ///
    /// As [`add_memset_raw`](Self::add_memset_raw), `keep` holding what keeps `dst` alive.
    unsafe fn memset_node<T: Pod>(
        &mut self,
        dependencies: &[Node],
        dst: CUdeviceptr,
        value: T,
        count: usize,
        keep: &[&Arc<Buffer>],
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        let params = memset_description(
            dst,
            bytemuck::bytes_of(&value),
            count,
            std::any::type_name::<T>(),
        )?;
        self.keep_buffers(keep, Vec::new())?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: a valid description of memory the caller vouches for; the dependencies are
        // nodes of this graph.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddMemsetNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(&deps),
                    deps.len(),
                    &params,
                    self.context.as_raw(),
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a copy node, after `dependencies`, that copies `src` into `dst`, which must be the
    /// same size (`cuGraphAddMemcpyNode`); the graph keeps both alive. Either may be device,
    /// pinned or managed memory.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemcpyNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph, sizes that differ or
    /// empty buffers; the driver's error.
    #[doc(alias = "cuGraphAddMemcpyNode")]
    pub fn add_memcpy(
        &mut self,
        dependencies: &[Node],
        dst: &Arc<Buffer>,
        src: &Arc<Buffer>,
    ) -> Result<Node> {
        if dst.len() != src.len() {
            return Err(Error::invalid_argument(format!(
                "a copy node copies between buffers of one size, not {} into {} bytes",
                src.len(),
                dst.len()
            )));
        }
        // SAFETY: both buffers hold `len` bytes and the graph keeps them alive.
        unsafe {
            self.memcpy_node(
                dependencies,
                dst.as_raw(),
                src.as_raw(),
                dst.len(),
                &[dst, src],
            )
        }
    }

    /// Adds a copy node that copies `bytes` bytes from the address `src` to `dst`, as
    /// [`add_memcpy`](Self::add_memcpy) does for buffers.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemcpyNode)]
    /// # Errors
    ///
    /// As [`add_memcpy`](Self::add_memcpy).
    ///
    /// # Safety
    ///
    /// Both addresses must start `bytes` bytes that the graph's context can reach (device,
    /// pinned or managed memory), allocated whenever the node runs (see
    /// [`add_memset_raw`](Self::add_memset_raw)), and not overlap.
    #[doc(alias = "cuGraphAddMemcpyNode")]
    pub unsafe fn add_memcpy_raw(
        &mut self,
        dependencies: &[Node],
        dst: CUdeviceptr,
        src: CUdeviceptr,
        bytes: usize,
    ) -> Result<Node> {
        // SAFETY: the caller's promise.
        unsafe { self.memcpy_node(dependencies, dst, src, bytes, &[]) }
    }

    /// # Safety
    ///
    /// As [`add_memcpy_raw`](Self::add_memcpy_raw), `keep` holding what keeps both alive.
    unsafe fn memcpy_node(
        &mut self,
        dependencies: &[Node],
        dst: CUdeviceptr,
        src: CUdeviceptr,
        bytes: usize,
        keep: &[&Arc<Buffer>],
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        if bytes == 0 {
            return Err(Error::invalid_argument(
                "a copy node needs at least one byte to copy",
            ));
        }
        let params = linear_description(dst, src, bytes);
        self.keep_buffers(keep, Vec::new())?;
        // SAFETY: a valid 1-D copy of memory the caller vouches for.
        unsafe { self.memcpy_node_of(&deps, &params) }
    }

    /// Adds the copy node `params` describes after `deps` (nodes of this graph).
    ///
    /// # Safety
    ///
    /// `params` describes a copy of memory that stays allocated whenever the node runs (kept by
    /// the graph, or the caller's promise).
    pub(super) unsafe fn memcpy_node_of(
        &mut self,
        deps: &[CUgraphNode],
        params: &CUDA_MEMCPY3D,
    ) -> Result<Node> {
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: the description is the caller's promise; the dependencies are nodes of this
        // graph; valid out-pointer.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddMemcpyNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(deps),
                    deps.len(),
                    params,
                    self.context.as_raw(),
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a node, after `dependencies`, that allocates `bytes` bytes of device memory on the
    /// graph's device at every replay (`cuGraphAddMemAllocNode`). The memory is valid for the
    /// nodes that run after this one and before a free node ([`add_mem_free`](Self::add_mem_free));
    /// an allocation not freed in the graph stays allocated after a replay, and the graph
    /// cannot be launched again until it is freed (unless instantiated with
    /// [`InstantiateOptions::auto_free_on_launch`](super::InstantiateOptions::auto_free_on_launch)).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemAllocNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph or zero bytes; the
    /// driver's error (a graph holding allocation nodes cannot be a child or be cloned).
    #[doc(alias = "cuGraphAddMemAllocNode")]
    pub fn add_mem_alloc(
        &mut self,
        dependencies: &[Node],
        bytes: usize,
    ) -> Result<GraphAllocation> {
        let deps = self.raw_nodes(dependencies)?;
        if bytes == 0 {
            return Err(Error::invalid_argument(
                "a graph allocation needs at least one byte",
            ));
        }
        let ordinal = i32::try_from(self.context.device().ordinal())
            .map_err(|_| Error::invalid_argument("the device ordinal is over i32::MAX"))?;
        let mut params = CUDA_MEM_ALLOC_NODE_PARAMS {
            poolProps: pool_props(ordinal, None),
            bytesize: bytes,
            ..Default::default()
        };
        let mut node: CUgraphNode = std::ptr::null_mut();
        {
            let _current = self.context.scoped()?;
            // SAFETY: a valid description (no access descriptors: the device's own access);
            // dependencies of this graph; the driver writes the address into `params.dptr`.
            unsafe {
                cu!(
                    self.driver(),
                    cuGraphAddMemAllocNode(
                        &mut node,
                        self.as_raw(),
                        array_ptr(&deps),
                        deps.len(),
                        &mut params,
                    )
                )
            }?;
        }
        Ok(GraphAllocation {
            node: self.node(node),
            ptr: params.dptr,
            size: bytes,
        })
    }

    /// Adds a node, after `dependencies`, that frees `allocation` at every replay
    /// (`cuGraphAddMemFreeNode`). Name as dependencies every node that uses the memory.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemFreeNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency or an allocation of another graph; the
    /// driver's error.
    #[doc(alias = "cuGraphAddMemFreeNode")]
    pub fn add_mem_free(
        &mut self,
        dependencies: &[Node],
        allocation: &GraphAllocation,
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        self.raw_node(allocation.node)?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        {
            let _current = self.context.scoped()?;
            // SAFETY: the address of an allocation node of this graph; dependencies of this
            // graph.
            unsafe {
                cu!(
                    self.driver(),
                    cuGraphAddMemFreeNode(
                        &mut node,
                        self.as_raw(),
                        array_ptr(&deps),
                        deps.len(),
                        allocation.ptr,
                    )
                )
            }?;
        }
        Ok(self.node(node))
    }
}
