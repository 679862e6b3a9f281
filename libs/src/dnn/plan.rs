//! [`ExecutionPlan`]: a [`Graph`] lowered to cuDNN's backend descriptors (tensors, operations,
//! the operation graph), finalized through the engine heuristics into an execution plan.

use std::fmt;

use super::backend::BackendDescriptor;
use super::error::{CudnnError, CudnnRefusal, within};
use super::graph::Graph;
use super::lower::{link, lower};
use super::scalar::Storage;
use super::shared::SharedHandle;
use cuda_safe::{Error, Result};
use cudnn_sys::{
    cudnnBackendAttributeName_t as A, cudnnBackendAttributeType_t as T,
    cudnnBackendDescriptorType_t as K, cudnnBackendHeurMode_t, cudnnHandle_t, cudnnStatus_t,
};

/// The alignment of each piece of a plan's workspace (its workspace tensors, then cuDNN's),
/// and so of the workspace's base.
pub(crate) const WORKSPACE_ALIGNMENT: usize = 256;

/// Which engine configuration a plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EngineChoice {
    /// The first configuration of cuDNN's heuristics (`CUDNN_HEUR_MODE_A`, then
    /// `CUDNN_HEUR_MODE_FALLBACK`, also when mode A's query itself fails) that finalizes and
    /// fits the workspace limit.
    #[default]
    Heuristics,
    /// The configuration at this index of `CUDNN_HEUR_MODE_A`'s list (0 is what the
    /// heuristics rank first), and no other.
    Config(usize),
}

/// An execution plan for one [`Graph`]: its backend descriptors, finalized with an engine
/// configuration cuDNN's heuristics proposed, and the workspace it needs (cuDNN's, after the
/// graph's workspace tensors, if any). Made by
/// [`Dnn::plan`](super::Dnn::plan) (cached) or [`Dnn::make_plan`](super::Dnn::make_plan). It
/// holds the cuDNN handle it was made with, which is destroyed after the last of its plans and
/// its `Dnn`.
///
#[doc = cudnn_sys::api_doc!(cudnnBackendFinalize)]
pub struct ExecutionPlan {
    plan: BackendDescriptor,
    /// The descriptors the plan was made of, kept while it lives.
    _parts: Vec<BackendDescriptor>,
    graph: Graph,
    workspace: usize,
    /// The graph's workspace tensors: (uid, byte offset in the workspace).
    scratch: Vec<(i64, usize)>,
    /// Where cuDNN's own workspace starts.
    engine_offset: usize,
    config: usize,
    fallback: bool,
    /// The handle it was made with, destroyed after the descriptors above (a field dropped
    /// last) when no other owner is left.
    handle: SharedHandle,
}

// SAFETY: the descriptors are cuDNN's host objects, used one thread at a time (the plan is not
// `Sync`); only the `Dnn` that made it (holding the same handle) runs it; the handle is `Send`.
unsafe impl Send for ExecutionPlan {}

impl ExecutionPlan {
    /// Lowers `graph`, asks the heuristics and finalizes the plan `choice` names, needing at
    /// most `limit` bytes of workspace.
    pub(crate) fn make(
        shared: &SharedHandle,
        graph: &Graph,
        choice: EngineChoice,
        limit: Option<usize>,
    ) -> Result<Self> {
        let handle = shared.raw;
        graph.check()?;
        let (scratch, engine_offset) = scratch_layout(graph)?;
        let mut parts = Vec::new();
        let op_graph = lower(handle, graph, &mut parts)?;
        let name = || graph.to_string();
        let modes: &[(cudnnBackendHeurMode_t, bool)] = match choice {
            EngineChoice::Heuristics => &[
                (cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A, false),
                (cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK, true),
            ],
            EngineChoice::Config(_) => &[(cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A, false)],
        };
        let (mut tried, mut last): (usize, Option<Error>) = (0, None);
        for &(mode, fallback) in modes {
            // A mode whose heuristics fail is passed over as a configuration that does not
            // finalize is: the next mode may still propose one.
            let configs = match heuristics(&op_graph, mode) {
                Ok(configs) => configs,
                Err(error) => {
                    last = Some(within(error, name));
                    continue;
                }
            };
            let count = configs.len();
            for (config, engine) in configs.into_iter().enumerate() {
                if let EngineChoice::Config(index) = choice
                    && index != config
                {
                    continue;
                }
                tried += 1;
                match finalize_plan(handle, &engine) {
                    Ok((plan, engine_bytes)) => match limit {
                        Some(limit) if engine_offset + engine_bytes > limit => {
                            last = Some(too_small(engine_offset + engine_bytes, limit, name()));
                        }
                        _ => {
                            parts.push(op_graph);
                            parts.push(engine);
                            return Ok(Self {
                                plan,
                                _parts: parts,
                                graph: graph.clone(),
                                workspace: engine_offset + engine_bytes,
                                scratch,
                                engine_offset,
                                config,
                                fallback,
                                handle: SharedHandle::clone(shared),
                            });
                        }
                    },
                    Err(error) => last = Some(error),
                }
            }
            if let EngineChoice::Config(index) = choice
                && index >= count
            {
                return Err(Error::invalid_argument(format!(
                    "{}: the heuristics proposed {count} engine configuration(s); there is no \
                     configuration {index}",
                    name()
                )));
            }
        }
        Err(no_engine(last, tried, name()))
    }

    /// The bytes of workspace an execution needs (the graph's workspace tensors' and cuDNN's).
    pub fn workspace_size(&self) -> usize {
        self.workspace
    }

    /// The graph's workspace tensors: (uid, byte offset in the workspace).
    pub(crate) fn scratch(&self) -> &[(i64, usize)] {
        &self.scratch
    }

    /// The byte offset of cuDNN's own workspace in the workspace.
    pub(crate) fn engine_offset(&self) -> usize {
        self.engine_offset
    }

    /// The index of the engine configuration it runs in its heuristics' list.
    pub fn config_index(&self) -> usize {
        self.config
    }

    /// Whether the configuration came from `CUDNN_HEUR_MODE_FALLBACK` (`CUDNN_HEUR_MODE_A`
    /// proposed none that could run).
    pub fn is_fallback(&self) -> bool {
        self.fallback
    }

    /// The graph it runs.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The raw execution plan descriptor, valid while this plan lives.
    pub fn as_raw(&self) -> cudnn_sys::cudnnBackendDescriptor_t {
        self.plan.as_raw()
    }

    /// Whether it was made with `handle` (its `Dnn`'s).
    pub(crate) fn made_by(&self, handle: &SharedHandle) -> bool {
        std::sync::Arc::ptr_eq(&self.handle, handle)
    }
}

/// Places the graph's workspace tensors one after the other, each aligned: their (uid, offset)
/// and the bytes they take (where cuDNN's own workspace starts).
fn scratch_layout(graph: &Graph) -> Result<(Vec<(i64, usize)>, usize)> {
    let mut scratch = Vec::new();
    let mut offset = 0usize;
    for (tensor, desc) in graph.tensors() {
        if desc.storage() != Storage::Workspace {
            continue;
        }
        scratch.push((tensor.uid(), offset));
        let bytes = desc
            .span()?
            .checked_mul(desc.data_type().size())
            .and_then(|bytes| bytes.checked_next_multiple_of(WORKSPACE_ALIGNMENT))
            .and_then(|bytes| bytes.checked_add(offset));
        offset = bytes.ok_or_else(|| {
            Error::invalid_argument(format!("{graph}: its workspace tensors overflow memory"))
        })?;
    }
    Ok((scratch, offset))
}

/// The refusal when no configuration finalized or fitted.
#[cold]
fn no_engine(last: Option<Error>, tried: usize, name: String) -> Error {
    match last {
        Some(error) => match error.library_error::<CudnnError>() {
            Some(failure) if failure.refusal == CudnnRefusal::Status => failure
                .clone()
                .with_refusal(CudnnRefusal::NoEngine { tried })
                .in_operation(name)
                .into(),
            _ => error,
        },
        None => CudnnError::new(
            "cudnnBackendGetAttribute",
            cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED,
        )
        .with_refusal(CudnnRefusal::NoEngine { tried })
        .in_operation(name)
        .into(),
    }
}

#[cold]
fn too_small(needed: usize, limit: usize, name: String) -> Error {
    let mut error = CudnnError::new("cudnnBackendFinalize", cudnnStatus_t::CUDNN_STATUS_SUCCESS);
    error.message.clear();
    error
        .with_refusal(CudnnRefusal::WorkspaceTooSmall { needed, limit })
        .in_operation(name)
        .into()
}

/// The engine configurations the heuristics propose in `mode`, best first.
fn heuristics(
    op_graph: &BackendDescriptor,
    mode: cudnnBackendHeurMode_t,
) -> Result<Vec<BackendDescriptor>> {
    let mut heur = BackendDescriptor::new(K::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    link(
        &mut heur,
        A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
        &[op_graph],
    )?;
    heur.set(A::CUDNN_ATTR_ENGINEHEUR_MODE, &[mode])?;
    heur.finalize()?;
    let name = A::CUDNN_ATTR_ENGINEHEUR_RESULTS;
    let count = heur.count(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR)?;
    heur.get_descriptors(name, K::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count)
}

/// An execution plan of `engine`, finalized, and its workspace size.
fn finalize_plan(
    handle: cudnnHandle_t,
    engine: &BackendDescriptor,
) -> Result<(BackendDescriptor, usize)> {
    let mut plan = BackendDescriptor::new(K::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
    plan.set_handle(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle)?;
    link(
        &mut plan,
        A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
        &[engine],
    )?;
    plan.finalize()?;
    let size = plan.get::<i64>(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 1)?;
    let bytes = size.first().copied().unwrap_or(0);
    let bytes = usize::try_from(bytes)
        .map_err(|_| Error::unexpected("cudnnBackendGetAttribute", "a negative workspace size"))?;
    Ok((plan, bytes))
}

impl fmt::Debug for ExecutionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutionPlan")
            .field("graph", &self.graph.to_string())
            .field("config", &self.config)
            .field("fallback", &self.fallback)
            .field("workspace", &self.workspace)
            .field("scratch", &self.scratch.len())
            .finish()
    }
}
