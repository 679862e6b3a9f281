//! 3-D copy nodes (`CUDA_MEMCPY3D`): `depth` slices of `height` rows between memory seen as
//! rows (a shared [`Buffer`] with a chosen pitch, a [`PitchedBuffer`] with the driver's) and
//! CUDA arrays, each extent checked against both sides before the driver sees it, as
//! [`Copy3d`] copies on a stream are. The graph (or the executable) keeps both sides alive.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;

use super::{Graph, GraphExec, Node};
use crate::error::{Result, cu};
use crate::launch::Keep;
use crate::memory::Buffer;
use crate::memory::copies::{Copy3d, CudaArray, NodeSide, PitchedBuffer, node_description};
use cuda_sys::CUgraphNodeType;

/// One side of a 3-D copy node, and what keeps its memory alive: a shared buffer (device,
/// pinned or managed memory) seen as rows, a pitched buffer, or a CUDA array.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_safe::{Copy3d, CopyNodeSide, Device, Graph, PitchedBuffer};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(Default::default())?;
/// let pool = device.default_memory_resource()?;
/// // 4 slices of 8 rows of 64 bytes, tightly packed, into a pitched buffer of that shape.
/// let packed = Arc::new(pool.allocate_zeroed::<u8>(64 * 8 * 4, &stream)?);
/// let image = Arc::new(PitchedBuffer::allocate(&stream, 64, 8, 4, 4)?);
/// let mut graph = Graph::new(stream.context())?;
/// graph.add_memcpy_3d(
///     &[],
///     &CopyNodeSide::pitched::<u8>(&image)?,
///     &CopyNodeSide::buffer::<u8>(&packed, 64, 8)?,
///     &Copy3d::boxed(64, 8, 4),
/// )?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone)]
pub struct CopyNodeSide {
    side: NodeSide,
    owner: Owner,
}

/// What keeps a side's memory alive.
#[derive(Clone)]
enum Owner {
    Buffer(Arc<Buffer>),
    Pitched(Arc<PitchedBuffer>),
    /// A share of the array's handle (the array is destroyed with the last one).
    Array(Arc<dyn Send + Sync>),
}

// SAFETY: a side holds a device address or an array handle, identifiers the driver accepts
// from any thread, and `Send + Sync` owners.
unsafe impl Send for CopyNodeSide {}
// SAFETY: as above; nothing in a side changes after it is made.
unsafe impl Sync for CopyNodeSide {}

impl CopyNodeSide {
    /// `buffer` as rows `pitch` bytes apart, `rows` rows per slice, of elements of `T` (offsets
    /// and widths must be whole `T`s).
    ///
    /// # Errors
    ///
    /// As [`Buffer::pitched`].
    pub fn buffer<T: Pod>(buffer: &Arc<Buffer>, pitch: usize, rows: usize) -> Result<Self> {
        let view = buffer.pitched::<T>(pitch, rows)?;
        Ok(Self {
            side: NodeSide::rows(&view),
            owner: Owner::Buffer(Arc::clone(buffer)),
        })
    }

    /// `buffer` with the driver's pitch and its rows per slice, of elements of `T`.
    ///
    /// # Errors
    ///
    /// As [`PitchedBuffer::view`].
    pub fn pitched<T: Pod>(buffer: &Arc<PitchedBuffer>) -> Result<Self> {
        let view = buffer.view::<T>()?;
        Ok(Self {
            side: NodeSide::rows(&view),
            owner: Owner::Pitched(Arc::clone(buffer)),
        })
    }

    /// The whole of `array` (offsets and widths in bytes, whole elements); the node keeps the
    /// array alive.
    pub fn array(array: &CudaArray) -> Self {
        Self {
            side: NodeSide::array(array),
            owner: Owner::Array(array.keep()),
        }
    }
}

impl fmt::Debug for CopyNodeSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.owner {
            Owner::Buffer(buffer) => format!("buffer {:#x}", buffer.as_raw()),
            Owner::Pitched(buffer) => format!("pitched buffer {:#x}", buffer.as_raw()),
            Owner::Array(_) => "array".to_owned(),
        };
        f.debug_struct("CopyNodeSide")
            .field("memory", &kind)
            .finish()
    }
}

impl Graph {
    /// Makes the graph keep both sides' memory alive.
    fn keep_sides(&mut self, sides: [&CopyNodeSide; 2]) -> Result<()> {
        let mut buffers = Vec::new();
        let mut items: Vec<Keep> = Vec::new();
        for side in sides {
            match &side.owner {
                Owner::Buffer(buffer) => buffers.push(buffer),
                Owner::Pitched(buffer) => items.push(Box::new(Arc::clone(buffer))),
                Owner::Array(array) => items.push(Box::new(Arc::clone(array))),
            }
        }
        self.keep_buffers(&buffers, items)
    }

    /// Adds a 3-D copy node, after `dependencies`, that copies `copy`'s box from `src` into
    /// `dst` (`cuGraphAddMemcpyNode`); the graph keeps both sides alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddMemcpyNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a dependency of another
    /// graph or a removed one, an extent that does not fit a side (the error names the side
    /// and the extent) or a copy of nothing; the driver's error.
    #[doc(alias = "cuGraphAddMemcpyNode")]
    pub fn add_memcpy_3d(
        &mut self,
        dependencies: &[Node],
        dst: &CopyNodeSide,
        src: &CopyNodeSide,
        copy: &Copy3d,
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        let params = node_description(copy, &src.side, &dst.side)?;
        self.keep_sides([dst, src])?;
        // SAFETY: a copy checked against both sides, which the graph keeps alive.
        unsafe { self.memcpy_node_of(&deps, &params) }
    }

    /// Makes a copy node of this graph copy `copy`'s box from `src` into `dst`
    /// (`cuGraphMemcpyNodeSetParams`), for the executables instantiated from now on; the graph
    /// keeps both sides alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphMemcpyNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not a copy node, and as
    /// [`add_memcpy_3d`](Self::add_memcpy_3d); the driver's error.
    #[doc(alias = "cuGraphMemcpyNodeSetParams")]
    pub fn set_memcpy_3d(
        &mut self,
        node: Node,
        dst: &CopyNodeSide,
        src: &CopyNodeSide,
        copy: &Copy3d,
    ) -> Result<()> {
        let raw = self.raw_node(node)?;
        self.expect_type(raw, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY, "a copy")?;
        let params = node_description(copy, &src.side, &dst.side)?;
        self.keep_sides([dst, src])?;
        // SAFETY: a live copy node of this graph; a copy checked against both sides, which the
        // graph keeps alive.
        unsafe { cu!(self.driver(), cuGraphMemcpyNodeSetParams(raw, &params)) }
    }
}

impl GraphExec {
    /// Makes a copy node copy `copy`'s box from `src` into `dst` from the next launch on
    /// (`cuGraphExecMemcpyNodeSetParams`); the executable keeps both sides alive for as long as
    /// a launch may use them. The driver allows only memory of the same kinds (linear or
    /// array) on the same devices as the node's, and documents updates of 1-D copies only: a
    /// 3-D box it may refuse (then change the graph's node, [`Graph::set_memcpy_3d`], and
    /// instantiate again, or [`update`](Self::update) from a graph that has it).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecMemcpyNodeSetParams)]
    /// # Errors
    ///
    /// As [`Graph::set_memcpy_3d`]; the driver's error (an update it cannot apply).
    #[doc(alias = "cuGraphExecMemcpyNodeSetParams")]
    pub fn set_memcpy_3d(
        &mut self,
        node: Node,
        dst: &CopyNodeSide,
        src: &CopyNodeSide,
        copy: &Copy3d,
    ) -> Result<()> {
        let raw = self.raw_node_of(node, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY, "a copy")?;
        let params = node_description(copy, &src.side, &dst.side)?;
        self.graph.keep_sides([dst, src])?;
        // SAFETY: a live copy node (just checked); a copy checked against both sides, which
        // the graph now keeps alive.
        unsafe { self.set_copy_params(raw, &params) }
    }
}
