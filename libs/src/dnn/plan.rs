//! [`ExecutionPlan`]: a [`Graph`] lowered to cuDNN's backend descriptors (tensors, operations,
//! the operation graph), finalized through the engine heuristics into an execution plan.

use std::fmt;

use super::backend::BackendDescriptor;
use super::error::{CudnnError, CudnnRefusal, within};
use super::graph::{Graph, Op};
use super::tensor::{DataType, Tensor};
use cuda_safe::{Error, Result};
use cudnn_sys::{
    cudnnBackendAttributeName_t as A, cudnnBackendAttributeType_t as T,
    cudnnBackendDescriptorType_t as K, cudnnBackendHeurMode_t, cudnnConvolutionMode_t,
    cudnnHandle_t, cudnnStatus_t,
};

/// Which engine configuration a plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EngineChoice {
    /// The first configuration of cuDNN's heuristics (`CUDNN_HEUR_MODE_A`, then
    /// `CUDNN_HEUR_MODE_FALLBACK`) that finalizes and fits the workspace limit.
    #[default]
    Heuristics,
    /// The configuration at this index of `CUDNN_HEUR_MODE_A`'s list (0 is what the
    /// heuristics rank first), and no other.
    Config(usize),
}

/// An execution plan for one [`Graph`]: its backend descriptors, finalized with an engine
/// configuration cuDNN's heuristics proposed, and the workspace it needs. Made by
/// [`Dnn::plan`](super::Dnn::plan) (cached) or [`Dnn::make_plan`](super::Dnn::make_plan).
///
#[doc = cudnn_sys::api_doc!(cudnnBackendFinalize)]
pub struct ExecutionPlan {
    plan: BackendDescriptor,
    /// The descriptors the plan was made of, kept while it lives.
    _parts: Vec<BackendDescriptor>,
    graph: Graph,
    /// The identity of the `Dnn` that made it.
    owner: u64,
    workspace: usize,
    config: usize,
    fallback: bool,
}

// SAFETY: the descriptors are cuDNN's host objects, used one thread at a time (the plan is not
// `Sync`); only the `Dnn` that made it (by its identity) runs it.
unsafe impl Send for ExecutionPlan {}

impl ExecutionPlan {
    /// Lowers `graph`, asks the heuristics and finalizes the plan `choice` names, needing at
    /// most `limit` bytes of workspace.
    pub(crate) fn make(
        handle: cudnnHandle_t,
        owner: u64,
        graph: &Graph,
        choice: EngineChoice,
        limit: Option<usize>,
    ) -> Result<Self> {
        graph.check()?;
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
            let configs = heuristics(&op_graph, mode).map_err(|e| within(e, name))?;
            let count = configs.len();
            for (config, engine) in configs.into_iter().enumerate() {
                if let EngineChoice::Config(index) = choice
                    && index != config
                {
                    continue;
                }
                tried += 1;
                match finalize_plan(handle, &engine) {
                    Ok((plan, workspace)) => match limit {
                        Some(limit) if workspace > limit => {
                            last = Some(too_small(workspace, limit, name()));
                        }
                        _ => {
                            parts.push(op_graph);
                            parts.push(engine);
                            return Ok(Self {
                                plan,
                                _parts: parts,
                                graph: graph.clone(),
                                owner,
                                workspace,
                                config,
                                fallback,
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

    /// The bytes of workspace an execution needs.
    pub fn workspace_size(&self) -> usize {
        self.workspace
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

    /// The identity of the `Dnn` that made it.
    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }
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

/// Sets attribute `name` of `made` to `values`.
fn link(made: &mut BackendDescriptor, name: A, values: &[&BackendDescriptor]) -> Result<()> {
    // SAFETY: every descriptor linked here lives as long as what links to it: the tensors,
    // operations and their descriptors, the operation graph and the engine configuration are
    // kept in the plan's parts (or are the plan), and a heuristics query's descriptor is
    // dropped before the operation graph it reads.
    unsafe { made.set_descriptors(name, values) }
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

/// Lowers `graph` to backend descriptors (kept in `parts`) and returns its finalized
/// operation graph.
fn lower(
    handle: cudnnHandle_t,
    graph: &Graph,
    parts: &mut Vec<BackendDescriptor>,
) -> Result<BackendDescriptor> {
    let mut tensors = Vec::new();
    for (tensor, desc) in graph.tensors() {
        let made = tensor_descriptor(tensor, desc)
            .map_err(|e| within(e, || format!("the tensor {} {desc}", tensor.uid())))?;
        tensors.push(made);
    }
    let at = |tensor: Tensor| &tensors[(tensor.uid() - 1) as usize];
    let mut ops = Vec::new();
    for op in graph.ops() {
        let made = operation(op, &at, parts).map_err(|e| within(e, || op.name().to_owned()))?;
        ops.push(made);
    }
    let mut op_graph = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
    op_graph.set_handle(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle)?;
    let refs: Vec<&BackendDescriptor> = ops.iter().collect();
    link(&mut op_graph, A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &refs)?;
    op_graph
        .finalize()
        .map_err(|e| within(e, || graph.to_string()))?;
    parts.extend(tensors);
    parts.extend(ops);
    Ok(op_graph)
}

fn tensor_descriptor(tensor: Tensor, desc: &super::TensorDesc) -> Result<BackendDescriptor> {
    let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    made.set(A::CUDNN_ATTR_TENSOR_DATA_TYPE, &[desc.data_type().as_raw()])?;
    made.set(A::CUDNN_ATTR_TENSOR_DIMENSIONS, desc.dims())?;
    made.set(A::CUDNN_ATTR_TENSOR_STRIDES, desc.strides())?;
    made.set(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[tensor.uid()])?;
    let alignment = i64::from(desc.byte_alignment());
    made.set(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[alignment])?;
    made.set(A::CUDNN_ATTR_TENSOR_IS_VIRTUAL, &[desc.is_virtual()])?;
    made.finalize()?;
    Ok(made)
}

/// One operation's descriptor (its own parameter descriptor kept in `parts`).
fn operation<'t>(
    op: &Op,
    at: &impl Fn(Tensor) -> &'t BackendDescriptor,
    parts: &mut Vec<BackendDescriptor>,
) -> Result<BackendDescriptor> {
    let made = match op {
        Op::ConvForward { x, w, y, conv } => convolution(
            K::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            [
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, at(*x)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, at(*w)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, at(*y)),
            ],
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
            ],
            conv,
            parts,
        )?,
        Op::ConvBackwardData { dy, w, dx, conv } => convolution(
            K::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            [
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, at(*dy)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, at(*w)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, at(*dx)),
            ],
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
            ],
            conv,
            parts,
        )?,
        Op::ConvBackwardFilter { x, dy, dw, conv } => convolution(
            K::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            [
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, at(*x)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, at(*dy)),
                (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, at(*dw)),
            ],
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
            ],
            conv,
            parts,
        )?,
        Op::Pointwise { mode, x, b, y } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
            desc.set(A::CUDNN_ATTR_POINTWISE_MODE, &[mode.as_raw()])?;
            desc.set(A::CUDNN_ATTR_POINTWISE_MATH_PREC, &[DataType::F32.as_raw()])?;
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                &[&desc],
            )?;
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                &[at(*x)],
            )?;
            if let Some(b) = b {
                link(
                    &mut made,
                    A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                    &[at(*b)],
                )?;
            }
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                &[at(*y)],
            )?;
            parts.push(desc);
            made
        }
        Op::Matmul { a, b, c, compute } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
            desc.set(A::CUDNN_ATTR_MATMUL_COMP_TYPE, &[compute.as_raw()])?;
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, &[at(*a)])?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, &[at(*b)])?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, &[at(*c)])?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_MATMUL_DESC, &[&desc])?;
            parts.push(desc);
            made
        }
        Op::Reduction { op, x, y } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_REDUCTION_DESCRIPTOR)?;
            desc.set(A::CUDNN_ATTR_REDUCTION_OPERATOR, &[op.as_raw()])?;
            desc.set(A::CUDNN_ATTR_REDUCTION_COMP_TYPE, &[DataType::F32.as_raw()])?;
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)?;
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                &[at(*x)],
            )?;
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                &[at(*y)],
            )?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&desc])?;
            parts.push(desc);
            made
        }
    };
    let mut made = made;
    made.finalize()?;
    Ok(made)
}

/// A convolution operation of `kind` on its three tensors, with its convolution descriptor
/// (kept in `parts`), alpha 1 and beta 0 (in the compute type's precision).
fn convolution(
    kind: K,
    tensors: [(A, &BackendDescriptor); 3],
    [conv_desc, alpha, beta]: [A; 3],
    conv: &super::ops::Convolution,
    parts: &mut Vec<BackendDescriptor>,
) -> Result<BackendDescriptor> {
    let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    let compute = conv.compute_type();
    desc.set(A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE, &[compute.as_raw()])?;
    let mode = cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION;
    desc.set(A::CUDNN_ATTR_CONVOLUTION_CONV_MODE, &[mode])?;
    desc.set(
        A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
        &[conv.spatial() as i64],
    )?;
    let [pre, post, stride, dilation] = conv.parts();
    desc.set(A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, pre)?;
    desc.set(A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, post)?;
    desc.set(A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, stride)?;
    desc.set(A::CUDNN_ATTR_CONVOLUTION_DILATIONS, dilation)?;
    desc.finalize()?;
    let mut made = BackendDescriptor::new(kind)?;
    for (name, tensor) in tensors {
        link(&mut made, name, &[tensor])?;
    }
    link(&mut made, conv_desc, &[&desc])?;
    if compute == DataType::F64 {
        made.set(alpha, &[1.0f64])?;
        made.set(beta, &[0.0f64])?;
    } else {
        made.set(alpha, &[1.0f32])?;
        made.set(beta, &[0.0f32])?;
    }
    parts.push(desc);
    Ok(made)
}

impl fmt::Debug for ExecutionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutionPlan")
            .field("graph", &self.graph.to_string())
            .field("config", &self.config)
            .field("fallback", &self.fallback)
            .field("workspace", &self.workspace)
            .finish()
    }
}
