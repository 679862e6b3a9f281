//! A [`Graph`] lowered to cuDNN's backend descriptors: one tensor descriptor per tensor, one
//! operation descriptor (with its parameter descriptor) per operation, the operation graph.

use super::backend::BackendDescriptor;
use super::conv::Convolution;
use super::error::within;
use super::graph::Graph;
use super::op::Op;
use super::ops::Pointwise;
use super::scalar::Storage;
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::Result;
use cudnn_sys::{
    cudnnBackendAttributeName_t as A, cudnnBackendDescriptorType_t as K,
    cudnnBackendNormFwdPhase_t, cudnnBackendNormMode_t, cudnnConvolutionMode_t, cudnnHandle_t,
    cudnnRngDistribution_t,
};

/// Sets attribute `name` of `made` to `values`.
pub(crate) fn link(
    made: &mut BackendDescriptor,
    name: A,
    values: &[&BackendDescriptor],
) -> Result<()> {
    // SAFETY: every descriptor linked here lives as long as what links to it: the tensors,
    // operations and their descriptors, the operation graph and the engine configuration are
    // kept in the plan's parts (or are the plan), and a heuristics query's descriptor is
    // dropped before the operation graph it reads.
    unsafe { made.set_descriptors(name, values) }
}

/// Lowers `graph` to backend descriptors (kept in `parts`) and returns its finalized
/// operation graph.
pub(crate) fn lower(
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

fn tensor_descriptor(tensor: Tensor, desc: &TensorDesc) -> Result<BackendDescriptor> {
    let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    made.set(A::CUDNN_ATTR_TENSOR_DATA_TYPE, &[desc.data_type().as_raw()])?;
    made.set(A::CUDNN_ATTR_TENSOR_DIMENSIONS, desc.dims())?;
    made.set(A::CUDNN_ATTR_TENSOR_STRIDES, desc.strides())?;
    made.set(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[tensor.uid()])?;
    let alignment = i64::from(desc.byte_alignment());
    made.set(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[alignment])?;
    made.set(A::CUDNN_ATTR_TENSOR_IS_VIRTUAL, &[desc.is_virtual()])?;
    if let Storage::ByValue(_) = desc.storage() {
        made.set(A::CUDNN_ATTR_TENSOR_IS_BY_VALUE, &[true])?;
    }
    made.finalize()?;
    Ok(made)
}

/// Links each `(attribute, tensor)` of `pairs` whose tensor is given.
fn tensors<'t>(
    made: &mut BackendDescriptor,
    at: &impl Fn(Tensor) -> &'t BackendDescriptor,
    pairs: &[(A, Option<Tensor>)],
) -> Result<()> {
    for &(name, tensor) in pairs {
        if let Some(tensor) = tensor {
            link(made, name, &[at(tensor)])?;
        }
    }
    Ok(())
}

/// One operation's descriptor (its own parameter descriptor kept in `parts`).
fn operation<'t>(
    op: &Op,
    at: &impl Fn(Tensor) -> &'t BackendDescriptor,
    parts: &mut Vec<BackendDescriptor>,
) -> Result<BackendDescriptor> {
    let mut made = match op {
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
        Op::Pointwise { mode, x, b, t, y } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
            desc.set(A::CUDNN_ATTR_POINTWISE_MODE, &[mode.as_raw()])?;
            let precision = mode.result_type().as_raw();
            desc.set(A::CUDNN_ATTR_POINTWISE_MATH_PREC, &[precision])?;
            if let Pointwise::GenIndex(axis) = mode {
                desc.set(A::CUDNN_ATTR_POINTWISE_AXIS, &[i64::from(*axis)])?;
            }
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
            link(
                &mut made,
                A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                &[&desc],
            )?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC, Some(*x)),
                    (A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b),
                    (A::CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t),
                    (A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Some(*y)),
                ],
            )?;
            parts.push(desc);
            made
        }
        Op::Matmul {
            a,
            b,
            c,
            compute,
            overrides,
        } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
            desc.set(A::CUDNN_ATTR_MATMUL_COMP_TYPE, &[compute.as_raw()])?;
            // Rows and columns past an overridden M or N hold the padding value: 0, as cuDNN's
            // frontend sets it for the attention engines' first matmul.
            if overrides.tensors().next().is_some() {
                desc.set(A::CUDNN_ATTR_MATMUL_PADDING_VALUE, &[0.0f64])?;
            }
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, Some(*a)),
                    (A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, Some(*b)),
                    (A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, Some(*c)),
                    (
                        A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
                        overrides.m,
                    ),
                    (
                        A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
                        overrides.n,
                    ),
                    (
                        A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC,
                        overrides.k,
                    ),
                ],
            )?;
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
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_REDUCTION_XDESC, Some(*x)),
                    (A::CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Some(*y)),
                ],
            )?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&desc])?;
            parts.push(desc);
            made
        }
        Op::Reshape { x, y } => {
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR)?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_RESHAPE_XDESC, Some(*x)),
                    (A::CUDNN_ATTR_OPERATION_RESHAPE_YDESC, Some(*y)),
                ],
            )?;
            made
        }
        Op::Rng {
            y,
            seed,
            offset,
            keep,
        } => {
            let mut desc = BackendDescriptor::new(K::CUDNN_BACKEND_RNG_DESCRIPTOR)?;
            let bernoulli = cudnnRngDistribution_t::CUDNN_RNG_DISTRIBUTION_BERNOULLI;
            desc.set(A::CUDNN_ATTR_RNG_DISTRIBUTION, &[bernoulli])?;
            desc.set(A::CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, &[keep.get()])?;
            desc.finalize()?;
            let mut made = BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR)?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_RNG_YDESC, Some(*y)),
                    (A::CUDNN_ATTR_OPERATION_RNG_SEED, Some(*seed)),
                    (A::CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, Some(*offset)),
                ],
            )?;
            link(&mut made, A::CUDNN_ATTR_OPERATION_RNG_DESC, &[&desc])?;
            parts.push(desc);
            made
        }
        Op::NormForward {
            x,
            scale,
            bias,
            epsilon,
            y,
            mean,
            inv_variance,
        } => {
            let mut made =
                BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR)?;
            let mode = cudnnBackendNormMode_t::CUDNN_LAYER_NORM;
            made.set(A::CUDNN_ATTR_OPERATION_NORM_FWD_MODE, &[mode])?;
            let phase = if mean.is_some() {
                cudnnBackendNormFwdPhase_t::CUDNN_NORM_FWD_TRAINING
            } else {
                cudnnBackendNormFwdPhase_t::CUDNN_NORM_FWD_INFERENCE
            };
            made.set(A::CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, &[phase])?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, Some(*x)),
                    (A::CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, Some(*scale)),
                    (A::CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, Some(*bias)),
                    (
                        A::CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC,
                        Some(*epsilon),
                    ),
                    (A::CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, Some(*y)),
                    (A::CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, *mean),
                    (
                        A::CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
                        *inv_variance,
                    ),
                ],
            )?;
            made
        }
        Op::NormBackward {
            x,
            dy,
            scale,
            mean,
            inv_variance,
            dx,
            dscale,
            dbias,
        } => {
            let mut made =
                BackendDescriptor::new(K::CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR)?;
            let mode = cudnnBackendNormMode_t::CUDNN_LAYER_NORM;
            made.set(A::CUDNN_ATTR_OPERATION_NORM_BWD_MODE, &[mode])?;
            tensors(
                &mut made,
                at,
                &[
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, Some(*x)),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, Some(*dy)),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, Some(*scale)),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, Some(*mean)),
                    (
                        A::CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC,
                        Some(*inv_variance),
                    ),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, Some(*dx)),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, Some(*dscale)),
                    (A::CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, Some(*dbias)),
                ],
            )?;
            made
        }
    };
    made.finalize()?;
    Ok(made)
}

/// A convolution operation of `kind` on its three tensors, with its convolution descriptor
/// (kept in `parts`), alpha 1 and beta 0 (in the compute type's precision).
fn convolution(
    kind: K,
    tensors: [(A, &BackendDescriptor); 3],
    [conv_desc, alpha, beta]: [A; 3],
    conv: &Convolution,
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
