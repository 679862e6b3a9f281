//! Deep-learning primitives on NVIDIA's cuDNN through its graph (backend) API (feature `dnn`;
//! `libcudnn.so.9` is loaded at run time): operation graphs built with a typed builder,
//! finalized into execution plans by cuDNN's heuristics, cached by graph, executed on
//! `cuda-safe`'s buffers and streams, capturable into its graphs.
//!
//! - [`TensorDesc`]: a tensor's dims, strides, [`DataType`], alignment and whether it is
//!   virtual, checked before any call.
//! - [`Graph`]: the builder. Convolutions forward, backward data and backward filter (any
//!   number of spatial dims, NCHW or channels-last, groups, dilation, padding, strides),
//!   pointwise operations (bias, activations, arithmetic, comparisons, selects) that cuDNN
//!   fuses after them, matmuls, reductions, layer norms forward and backward, the softmax;
//!   each checks its operands' shapes as it is added. `Hash + Eq`.
//! - [`Attention`]: scaled-dot-product attention (causal and padding masks, dropout, f16, bf16
//!   and FP8 forward) whose [`forward`](Attention::forward) and
//!   [`backward`](Attention::backward) build cuDNN's fused flash attention graphs.
//! - [`Dnn`]: a cuDNN handle bound to a stream, its workspace from a memory pool, its plans
//!   ([`ExecutionPlan`]) cached by graph; [`Dnn::execute`] runs a graph on a
//!   [`VariantPack`] of buffers, each checked against its tensor.
//! - [`BackendDescriptor`]: one owned backend descriptor with typed attribute setters, for
//!   graphs past what the builder knows.
//!
//! ```no_run
//! # #[cfg(feature = "half")] {
//! use cuda_safe::Device;
//! use cuda_safe_libs::dnn::{Convolution, DataType, Dnn, Graph, Pointwise, TensorDesc, VariantPack};
//! use half::bf16;
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let mut dnn = Dnn::new(&stream)?;
//! // y = relu(conv3x3(x, w) + bias), NHWC bf16, computed in f32.
//! let mut graph = Graph::new();
//! let x = graph.tensor(TensorDesc::nhwc(DataType::BF16, [8, 64, 56, 56]))?;
//! let w = graph.tensor(TensorDesc::nhwc(DataType::BF16, [64, 64, 3, 3]))?;
//! let b = graph.tensor(TensorDesc::nhwc(DataType::BF16, [1, 64, 1, 1]))?;
//! let conv = graph.conv_forward(x, w, &Convolution::new(2).padding([1, 1]))?;
//! let biased = graph.pointwise(Pointwise::Add, conv, Some(b))?;
//! let y = graph.pointwise(Pointwise::Relu, biased, None)?;
//! graph.output(y, DataType::BF16)?;
//! let xs = pool.allocate_zeroed::<bf16>(8 * 64 * 56 * 56, &stream)?;
//! let ws = pool.allocate_zeroed::<bf16>(64 * 64 * 9, &stream)?;
//! let bs = pool.allocate_zeroed::<bf16>(64, &stream)?;
//! let mut ys = pool.allocate_zeroed::<bf16>(8 * 64 * 56 * 56, &stream)?;
//! let mut pack = VariantPack::new();
//! pack.input::<bf16>(x, &xs)?.input::<bf16>(w, &ws)?.input::<bf16>(b, &bs)?;
//! pack.output::<bf16>(y, &mut ys)?;
//! dnn.execute(&graph, &pack)?; // planned here, cached for the next time
//! # }
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! cuDNN's refusals are [`CudnnError`] inside [`Error::Library`](cuda_safe::Error::Library),
//! naming the operation or graph and why ([`CudnnRefusal`]: a status, no engine for the
//! graph, a workspace too small); a missing `libcudnn` or entry point is
//! [`Error::Load`](cuda_safe::Error::Load). `docs/dnn.md` in the repository has the recipes.
//! NVIDIA's documentation: <https://docs.nvidia.com/deeplearning/cudnn/>.

mod attention;
mod attention_backward;
mod backend;
mod conv;
pub(crate) mod error;
mod graph;
mod handle;
mod lower;
mod needs;
mod norm;
mod op;
mod ops;
mod pack;
mod plan;
mod scalar;
mod shared;
mod tensor;

pub use attention::{Attention, AttentionForward, AttentionLayout, Fp8Scaling};
pub use attention_backward::AttentionBackward;
pub use backend::{AttributeValue, BackendDescriptor};
pub use conv::Convolution;
pub use error::{CudnnError, CudnnRefusal};
pub use graph::Graph;
pub use handle::{DEFAULT_PLAN_CACHE, Dnn};
pub use norm::{LayerNorm, LayerNormBackward, LayerNormForward, Softmax};
pub use op::{MatmulOverrides, Op, Probability};
pub use ops::{Pointwise, Reduce};
pub use pack::{MAX_BINDINGS, VariantPack};
pub use plan::{EngineChoice, ExecutionPlan};
pub use scalar::{Scalar, Storage};
pub use tensor::{DataType, DnnElement, MAX_DIMS, Tensor, TensorDesc};

pub use crate::operand::{Input, Operand, Output};
pub use cudnn_sys;

use cuda_safe::Result;

/// The loaded cuDNN's version (`CUDNN_VERSION`'s encoding: 91000 is 9.10.0).
///
#[doc = cudnn_sys::api_doc!(cudnnGetVersion)]
/// # Errors
///
/// [`Error::Load`](cuda_safe::Error::Load) when cuDNN cannot be loaded.
#[doc(alias = "cudnnGetVersion")]
pub fn version() -> Result<usize> {
    let cudnn = cudnn_sys::cudnn()?;
    // SAFETY: cudnnGetVersion takes no argument.
    Ok(unsafe { cudnn.cudnnGetVersion() }?)
}
