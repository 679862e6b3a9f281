//! [`Dnn`]: a cuDNN handle bound to a stream, its workspace from a memory resource, and the
//! execution plans of its graphs, cached by graph.

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use super::backend::BackendDescriptor;
use super::graph::Graph;
use super::pack::VariantPack;
use super::plan::{EngineChoice, ExecutionPlan, WORKSPACE_ALIGNMENT};
use super::shared::{CudnnHandle, SharedHandle};
use crate::dnn::error::{cudnn, within};
use crate::operand::workspace_resource;
use cuda_safe::ordering::ordered;
use cuda_safe::{Buffer, MemoryResource, Stream};
use cuda_safe::{Error, Result};
use cudnn_sys::{
    cudnnBackendAttributeName_t as A, cudnnBackendDescriptorType_t as K, cudnnHandle_t,
};

/// How many plans [`Dnn::new`] keeps.
pub const DEFAULT_PLAN_CACHE: usize = 256;

/// A cuDNN handle (`cudnnHandle_t`) bound to a [`Stream`]: every execution is queued there, on
/// a workspace the handle holds (device memory from its memory resource, the device's default
/// pool unless [`with_memory_resource`](Self::with_memory_resource) chose another, grown in
/// order on the stream when a plan needs more, kept for the handle's life).
///
/// [`execute`](Self::execute) runs a [`Graph`] on the buffers of a [`VariantPack`]: the first
/// time a graph is seen its plan is made (lowered to backend descriptors, finalized through the
/// heuristics) and cached by the graph (at most [`capacity`](Self::capacity) plans, least
/// recently used out first); later executions of an equal graph reuse it. An execution is the
/// one `cudnnBackendExecute` call, so it can be captured into a graph: make its plan and grow
/// the workspace before the capture ([`plan`](Self::plan) does both), and keep the handle while
/// the graph lives (a workspace replaced by a larger one is kept until the handle drops, so the
/// graph's stays valid). A cached plan the cache evicts is destroyed: a graph that captured it
/// must not be replayed after; for a plan a graph keeps, make it with
/// [`make_plan`](Self::make_plan) (owned by the caller) and run it with [`run`](Self::run).
/// Such a plan keeps the cuDNN handle (and its stream) alive: dropped after the `Dnn`, it is
/// destroyed first, then the handle.
///
/// cuDNN runs its kernels in the CUDA context current on the calling thread: each call makes
/// the stream's context current for its duration, so a `Dnn` works on any device from any
/// thread. `Send`, not `Sync`, as cuDNN allows.
///
#[doc = cudnn_sys::api_doc!(cudnnCreate)]
#[must_use = "a cuDNN handle is destroyed when dropped"]
pub struct Dnn {
    /// Dropped before the handle they were made with (each holds it too).
    plans: HashMap<Graph, (ExecutionPlan, u64)>,
    inner: Handle,
    capacity: usize,
    clock: u64,
    limit: Option<usize>,
}

/// What a [`Dnn`] owns: its share of the cuDNN handle, then the workspace (freed after the
/// handle is destroyed, when no plan outlives the `Dnn`).
struct Handle {
    shared: SharedHandle,
    resource: Arc<dyn MemoryResource>,
    workspace: Option<Buffer>,
    /// Workspaces replaced by larger ones, kept until the handle drops: a graph captured with
    /// one still uses it at each replay.
    retired: Vec<Buffer>,
}

impl Dnn {
    /// A handle on `stream`, its workspace from the device's default memory pool.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnCreate)]
    #[doc = cudnn_sys::api_doc!(cudnnSetStream)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuDNN cannot be loaded; cuDNN's and the driver's errors.
    #[doc(alias = "cudnnCreate", alias = "cudnnSetStream")]
    pub fn new(stream: &Stream) -> Result<Self> {
        let pool = stream.device().default_memory_resource()?;
        Self::with_memory_resource(stream, Arc::new(pool))
    }

    /// A handle on `stream` whose workspace comes from `resource`: memory of the stream's
    /// device, or pinned or managed host memory.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnCreate)]
    #[doc = cudnn_sys::api_doc!(cudnnSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a resource whose memory the GPU cannot reach, or that
    /// allocates another device's memory; as [`new`](Self::new).
    #[doc(alias = "cudnnCreate", alias = "cudnnSetStream")]
    pub fn with_memory_resource(
        stream: &Stream,
        resource: Arc<dyn MemoryResource>,
    ) -> Result<Self> {
        workspace_resource(&*resource, stream, "a cuDNN workspace")?;
        let inner = Handle {
            shared: CudnnHandle::create(stream)?,
            resource,
            workspace: None,
            retired: Vec::new(),
        };
        Ok(Self {
            inner,
            plans: HashMap::new(),
            capacity: DEFAULT_PLAN_CACHE,
            clock: 0,
            limit: None,
        })
    }

    /// The stream every execution is queued on.
    pub fn stream(&self) -> &Stream {
        &self.inner.shared.stream
    }

    /// The raw handle, valid while this `Dnn` lives. Calls made on it directly must leave its
    /// stream as it was.
    pub fn as_raw(&self) -> cudnnHandle_t {
        self.inner.shared.raw
    }

    /// The bytes of workspace the handle holds.
    pub fn workspace_bytes(&self) -> usize {
        self.inner.workspace.as_ref().map_or(0, Buffer::len)
    }

    /// Plans made from now on may need at most `bytes` of workspace (`None`: no limit, the
    /// default): the heuristics' configurations needing more are passed over, and a graph
    /// none of whose configurations fits is refused with
    /// [`CudnnRefusal::WorkspaceTooSmall`](super::CudnnRefusal::WorkspaceTooSmall).
    pub fn set_workspace_limit(&mut self, bytes: Option<usize>) {
        self.limit = bytes;
    }

    /// The plan for `graph`: the cached one, or a new one (cuDNN's heuristics' first choice
    /// that runs), cached, with the workspace grown to what it needs.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendFinalize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a graph with no operation or output, or, when the plan is
    /// not cached, a stream being captured; a [`CudnnError`](super::CudnnError) naming the
    /// graph when no engine can run it, or when the loaded cuDNN or the GPU cannot run its
    /// pattern ([`CudnnRefusal::Version`](super::CudnnRefusal::Version),
    /// [`CudnnRefusal::Device`](super::CudnnRefusal::Device)); the memory resource's errors,
    /// and [`Error::InvalidArgument`] for a workspace it places off a 256-byte boundary.
    #[doc(alias = "cudnnBackendFinalize")]
    pub fn plan(&mut self, graph: &Graph) -> Result<&ExecutionPlan> {
        self.clock += 1;
        let now = self.clock;
        if !self.plans.contains_key(graph) {
            let plan = self.make_plan(graph, EngineChoice::Heuristics)?;
            self.insert(plan, now)?;
        }
        let (plan, used) = self
            .plans
            .get_mut(graph)
            .ok_or_else(|| Error::unexpected("Dnn::plan", "a cached plan vanished"))?;
        *used = now;
        Ok(plan)
    }

    /// Replaces the cached plan of `graph` by one of `choice` (an engine configuration by
    /// index in the heuristics' list, or the heuristics' choice again).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an index past the heuristics' list; as
    /// [`plan`](Self::plan).
    pub fn set_engine(&mut self, graph: &Graph, choice: EngineChoice) -> Result<&ExecutionPlan> {
        let plan = self.make_plan(graph, choice)?;
        self.plans.remove(graph);
        self.clock += 1;
        self.insert(plan, self.clock)?;
        self.plan(graph)
    }

    /// A plan for `graph` of `choice`, not cached (run it with [`run`](Self::run)). It keeps
    /// the cuDNN handle alive: dropped after this `Dnn`, it is destroyed before the handle.
    ///
    /// # Errors
    ///
    /// As [`set_engine`](Self::set_engine).
    pub fn make_plan(&self, graph: &Graph, choice: EngineChoice) -> Result<ExecutionPlan> {
        let stream = &self.inner.shared.stream;
        if stream.is_capturing()? {
            return Err(Error::invalid_argument(format!(
                "{graph} has no plan and the handle's stream is being captured: make the plan \
                 (Dnn::plan) before the capture"
            )));
        }
        if !graph.needs().is_empty() {
            let version = super::version()?;
            let capability = if graph.needs().asks_capability() {
                stream.device().compute_capability()?
            } else {
                (u32::MAX, u32::MAX)
            };
            graph
                .needs()
                .check(version, capability, || graph.to_string())?;
        }
        let _current = stream.context().scoped()?;
        ExecutionPlan::make(&self.inner.shared, graph, choice, self.limit)
    }

    /// Runs `graph` on `pack`'s buffers with its cached plan (made now if it is not cached).
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendExecute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pack that does not fit the graph (a tensor with memory
    /// left unbound or bound twice, a virtual one bound, a size override not bound through
    /// [`VariantPack::sizes`], a buffer of another type, too short, misaligned, or of another
    /// device that the handle's cannot reach), checked before cuDNN is called; as
    /// [`plan`](Self::plan); the driver's error asking whether another device's memory is
    /// reachable; cuDNN's error.
    #[doc(alias = "cudnnBackendExecute")]
    pub fn execute(&mut self, graph: &Graph, pack: &VariantPack<'_>) -> Result<()> {
        self.plan(graph)?;
        let (plan, _) = self
            .plans
            .get(graph)
            .ok_or_else(|| Error::unexpected("Dnn::execute", "a cached plan vanished"))?;
        launch(&self.inner, plan, pack)
    }

    /// Runs `plan` (made by this handle) on `pack`'s buffers, growing the workspace first when
    /// it is smaller than the plan needs.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendExecute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plan of another handle, or the workspace needing to grow
    /// while the stream is captured; as [`execute`](Self::execute).
    #[doc(alias = "cudnnBackendExecute")]
    pub fn run(&mut self, plan: &ExecutionPlan, pack: &VariantPack<'_>) -> Result<()> {
        if !plan.made_by(&self.inner.shared) {
            return Err(Error::invalid_argument(
                "this execution plan was made by another cuDNN handle",
            ));
        }
        grow(&mut self.inner, plan.workspace_size())?;
        launch(&self.inner, plan, pack)
    }

    /// Caches `plan`, growing the workspace for it and evicting the least recently used plan
    /// past the capacity.
    fn insert(&mut self, plan: ExecutionPlan, now: u64) -> Result<()> {
        grow(&mut self.inner, plan.workspace_size())?;
        while self.plans.len() >= self.capacity {
            let oldest = self
                .plans
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(graph, _)| graph.clone());
            match oldest {
                Some(graph) => drop(self.plans.remove(&graph)),
                None => break,
            }
        }
        self.plans.insert(plan.graph().clone(), (plan, now));
        Ok(())
    }

    /// Whether a plan for `graph` is cached (asking does not count as a use).
    pub fn contains(&self, graph: &Graph) -> bool {
        self.plans.contains_key(graph)
    }

    /// How many plans are cached.
    pub fn cached(&self) -> usize {
        self.plans.len()
    }

    /// The most plans kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps at most `capacity` plans from now on, destroying the least recently used ones
    /// past it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a capacity of 0.
    pub fn set_capacity(&mut self, capacity: usize) -> Result<()> {
        if capacity == 0 {
            return Err(Error::invalid_argument(
                "a cuDNN plan cache holds at least one plan",
            ));
        }
        self.capacity = capacity;
        while self.plans.len() > capacity {
            let oldest = self
                .plans
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(graph, _)| graph.clone());
            if let Some(graph) = oldest {
                self.plans.remove(&graph);
            }
        }
        Ok(())
    }

    /// Destroys every cached plan.
    pub fn clear(&mut self) {
        self.plans.clear();
    }

    /// Destroys the plans, then the handle, returning cuDNN's error, then frees the workspace.
    /// While a plan of [`make_plan`](Self::make_plan) lives, the handle is left to it: it is
    /// destroyed with the last such plan (its error logged).
    pub fn close(mut self) -> Result<()> {
        self.plans.clear();
        let Self { inner, .. } = self;
        let Handle {
            shared,
            workspace,
            retired,
            ..
        } = inner;
        let closed = Arc::into_inner(shared).map_or(Ok(()), |handle| handle.close());
        drop((workspace, retired));
        closed
    }
}

/// Grows the workspace to `bytes`, refusing during a capture.
fn grow(inner: &mut Handle, bytes: usize) -> Result<()> {
    let have = inner.workspace.as_ref().map_or(0, Buffer::len);
    if bytes <= have {
        return Ok(());
    }
    let stream = &inner.shared.stream;
    if stream.is_capturing()? {
        return Err(Error::invalid_argument(format!(
            "this cuDNN plan needs {bytes} bytes of workspace, more than the handle holds, and \
             its stream is being captured: make the plan (Dnn::plan) before the capture"
        )));
    }
    // At least doubled, so the retired workspaces add up to less than the current one.
    let bytes = bytes.max(have.saturating_mul(2));
    let ptr = inner.resource.allocate_raw(bytes, stream)?;
    // SAFETY: `ptr` came from the resource with `bytes` bytes, owned by nobody else.
    let grown = unsafe { Buffer::from_raw_parts(ptr, bytes, inner.resource.clone(), stream) };
    // The plan places its pieces at multiples of the alignment from the base.
    if !ptr.is_multiple_of(WORKSPACE_ALIGNMENT as u64) {
        drop(grown);
        return Err(Error::invalid_argument(format!(
            "the memory resource gave the cuDNN workspace at {ptr:#x}, not aligned to \
             {WORKSPACE_ALIGNMENT} bytes as its pieces need"
        )));
    }
    if let Some(old) = inner.workspace.replace(grown) {
        inner.retired.push(old);
    }
    Ok(())
}

/// One execution: the variant pack's descriptor, then `cudnnBackendExecute` ordered with the
/// buffers' streams, the stream's context current.
fn launch(inner: &Handle, plan: &ExecutionPlan, pack: &VariantPack<'_>) -> Result<()> {
    let handle = &*inner.shared;
    let mut resolved = pack.resolve(plan.graph(), &handle.stream)?;
    if plan.workspace_size() > inner.workspace.as_ref().map_or(0, Buffer::len) {
        return Err(Error::unexpected(
            "Dnn::run",
            "the workspace is smaller than the plan's",
        ));
    }
    let base = match &inner.workspace {
        Some(area) if plan.workspace_size() > 0 => area.as_raw() as *mut c_void,
        _ => std::ptr::null_mut(),
    };
    resolved.bind_internal(plan.graph(), base, plan.scratch());
    let engine = if base.is_null() || plan.workspace_size() == plan.engine_offset() {
        std::ptr::null_mut()
    } else {
        base.wrapping_byte_add(plan.engine_offset())
    };
    let _current = handle.stream.context().scoped()?;
    let mut variant = BackendDescriptor::new(K::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    variant.set(A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, &resolved.uids)?;
    variant.set_pointers(A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, &resolved.pointers)?;
    variant.set_pointers(A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &[engine])?;
    variant.finalize()?;
    ordered(&handle.stream, resolved.streams, || {
        // SAFETY: a live handle bound to the stream, a plan it made, and a variant pack whose
        // every caller's pointer is device memory holding its tensor's span, aligned as the
        // tensor says, of its data type (checked); each constant's pointer is into the plan's
        // graph, alive through the call; the workspace holds the plan's workspace tensors and
        // cuDNN's workspace; the buffers' streams are ordered with the handle's.
        unsafe {
            cudnn!(
                handle.cudnn,
                cudnnBackendExecute(handle.raw, plan.as_raw(), variant.as_raw())
            )
        }
    })
    .map_err(|error| within(error, || plan.graph().to_string()))
}

impl fmt::Debug for Dnn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dnn")
            .field("handle", &self.inner.shared.raw)
            .field("stream", &self.inner.shared.stream)
            .field("plans", &self.plans.len())
            .field("workspace", &self.workspace_bytes())
            .finish()
    }
}

/// Asserts at compile time that a `Dnn` moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Dnn>();
};
