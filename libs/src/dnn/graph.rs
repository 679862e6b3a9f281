//! [`Graph`]: a typed builder of cuDNN operation graphs (pointwise operations, masks, matmuls,
//! reductions, views, random draws; convolutions, normalizations and attention in their own
//! modules), every shape checked as it is added.

use std::fmt;

use super::needs::Needs;
use super::op::{MatmulOverrides, Op, Probability};
use super::ops::{Pointwise, Reduce};
use super::scalar::{Scalar, Storage};
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::{Error, Result};

/// A cuDNN operation graph, built operation by operation: [`tensor`](Self::tensor) adds an
/// input, each operation ([`conv_forward`](Self::conv_forward), [`pointwise`](Self::pointwise),
/// [`matmul`](Self::matmul), ...) checks its operands' shapes and returns its result as a
/// virtual tensor (computed in f32, living only inside the fused kernel), and
/// [`output`](Self::output) gives a result memory of a data type. The graph is `Hash + Eq`: it
/// is the key its plans are cached under ([`Dnn::execute`](super::Dnn::execute)). The fused
/// patterns have builders of their own: [`Attention::forward`](super::Attention::forward) and
/// [`backward`](super::Attention::backward) make whole graphs; [`layer_norm`](Self::layer_norm),
/// [`layer_norm_backward`](Self::layer_norm_backward) and [`softmax`](Self::softmax) add theirs.
///
/// ```
/// use cuda_safe_libs::dnn::{Convolution, DataType, Graph, Pointwise, TensorDesc};
///
/// // y = relu(conv(x, w) + bias), NHWC bf16.
/// let mut graph = Graph::new();
/// let x = graph.tensor(TensorDesc::nhwc(DataType::BF16, [8, 64, 56, 56]))?;
/// let w = graph.tensor(TensorDesc::nhwc(DataType::BF16, [64, 64, 3, 3]))?;
/// let bias = graph.tensor(TensorDesc::nhwc(DataType::BF16, [1, 64, 1, 1]))?;
/// let conv = graph.conv_forward(x, w, &Convolution::new(2).padding([1, 1]))?;
/// let biased = graph.pointwise(Pointwise::Add, conv, Some(bias))?;
/// let y = graph.pointwise(Pointwise::Relu, biased, None)?;
/// graph.output(y, DataType::BF16)?;
/// assert_eq!(graph.desc(y)?.dims(), [8, 64, 56, 56]);
/// assert!(graph.tensor(TensorDesc::nhwc(DataType::BF16, [0, 1, 1, 1])).is_err());
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Graph {
    tensors: Vec<TensorDesc>,
    ops: Vec<Op>,
    needs: Needs,
    /// The fused pattern a builder made, named in messages instead of the operations.
    label: Option<&'static str>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tensor the graph reads (or, virtual, an intermediate), returning its handle.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a description [`TensorDesc::check`] refuses, or one in the
    /// handle's workspace (only the fused patterns' builders place tensors there).
    pub fn tensor(&mut self, desc: TensorDesc) -> Result<Tensor> {
        if desc.storage() == Storage::Workspace {
            return Err(Error::invalid_argument(format!(
                "the tensor {desc} cannot be added in the workspace: bind a buffer to it"
            )));
        }
        self.add(desc)
    }

    /// Adds a constant passed by value, of `rank` dims all 1 (it broadcasts to any tensor of
    /// that rank): a scale, a fill value, an epsilon.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a rank of 0 or past [`MAX_DIMS`](super::MAX_DIMS).
    pub fn scalar(&mut self, value: Scalar, rank: usize) -> Result<Tensor> {
        self.add(TensorDesc::scalar(value, rank))
    }

    fn add(&mut self, desc: TensorDesc) -> Result<Tensor> {
        desc.check()?;
        self.tensors.push(desc);
        Ok(Tensor(self.tensors.len() as i64))
    }

    /// The description of `tensor`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a tensor of another graph.
    pub fn desc(&self, tensor: Tensor) -> Result<&TensorDesc> {
        usize::try_from(tensor.0 - 1)
            .ok()
            .and_then(|index| self.tensors.get(index))
            .ok_or_else(|| {
                Error::invalid_argument(format!("tensor {} is not of this graph", tensor.0))
            })
    }

    /// Every tensor, with its handle.
    pub fn tensors(&self) -> impl Iterator<Item = (Tensor, &TensorDesc)> {
        (1..).map(Tensor).zip(&self.tensors)
    }

    /// The operations, in the order added.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Whether an operation of the graph writes `tensor` (a result, not an input).
    pub fn writes(&self, tensor: Tensor) -> bool {
        self.ops.iter().any(|op| op.writes(tensor))
    }

    /// Whether a matmul of the graph takes `tensor` as a size override ([`MatmulOverrides`]):
    /// its values are loop bounds of cuDNN's kernels, bound only through
    /// [`VariantPack::sizes`](super::VariantPack::sizes).
    pub fn is_size_override(&self, tensor: Tensor) -> bool {
        self.size_overrides().any(|t| t == tensor)
    }

    /// Every matmul's size overrides ([`MatmulOverrides`]), in the order of the operations.
    pub(crate) fn size_overrides(&self) -> impl Iterator<Item = Tensor> + '_ {
        self.ops.iter().flat_map(|op| {
            match op {
                Op::Matmul { overrides, .. } => Some(overrides.tensors()),
                _ => None,
            }
            .into_iter()
            .flatten()
        })
    }

    /// Makes `tensor` an output with memory of `data_type` (it was a virtual result).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a tensor of another graph, or one no operation writes
    /// (an input of the graph).
    pub fn output(&mut self, tensor: Tensor, data_type: DataType) -> Result<()> {
        self.retype(tensor, data_type, Storage::Bound)
    }

    /// Keeps the result `tensor` in the handle's workspace, as `data_type`.
    pub(crate) fn in_workspace(&mut self, tensor: Tensor, data_type: DataType) -> Result<()> {
        self.retype(tensor, data_type, Storage::Workspace)
    }

    /// Gives the virtual result `tensor` another data type (a fused pattern's operand in the
    /// inputs' type).
    pub(crate) fn set_virtual_type(&mut self, tensor: Tensor, data_type: DataType) -> Result<()> {
        self.retype(tensor, data_type, Storage::Virtual)
    }

    fn retype(&mut self, tensor: Tensor, data_type: DataType, storage: Storage) -> Result<()> {
        self.desc(tensor)?;
        if !self.writes(tensor) {
            return Err(Error::invalid_argument(format!(
                "tensor {} is an input of the graph, not the result of an operation: it cannot \
                 be an output",
                tensor.uid()
            )));
        }
        let desc = &mut self.tensors[(tensor.0 - 1) as usize];
        let retyped = desc.clone().with_data_type(data_type);
        *desc = match storage {
            Storage::Workspace => retyped.in_workspace(),
            _ => retyped.set_virtual(storage == Storage::Virtual),
        };
        Ok(())
    }

    /// Gives the tensor `tensor` other strides (an output in the caller's layout).
    pub(crate) fn restride(&mut self, tensor: Tensor, strides: &[i64]) -> Result<()> {
        let desc = self.desc(tensor)?;
        let made = TensorDesc::new(desc.data_type(), desc.dims(), strides);
        let made = match desc.storage() {
            Storage::Workspace => made.in_workspace(),
            storage => made.set_virtual(storage == Storage::Virtual),
        };
        made.check()?;
        self.tensors[(tensor.0 - 1) as usize] = made;
        Ok(())
    }

    /// What the graph needs of cuDNN and the GPU, for the builders to add to.
    pub(crate) fn needs_mut(&mut self) -> &mut Needs {
        &mut self.needs
    }

    /// What the graph needs of cuDNN and the GPU.
    pub(crate) fn needs(&self) -> &Needs {
        &self.needs
    }

    /// Names the graph in messages by the fused pattern it is (`the attention forward`).
    pub(crate) fn set_label(&mut self, label: &'static str) {
        self.label = Some(label);
    }

    /// Adds an operation the caller checked.
    pub(crate) fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// The pointwise `mode` of `x` (and `b`, for a binary mode, broadcast over the dims where
    /// it is 1): a virtual result of `x`'s dims and layout, of the mode's
    /// [`result_type`](Pointwise::result_type).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a binary mode without `b` or a unary one with it,
    /// [`Pointwise::BinarySelect`] (it is [`select`](Self::select)), a `b` whose rank differs or
    /// whose dims are neither `x`'s nor 1, or a [`Pointwise::GenIndex`] axis past `x`'s dims.
    pub fn pointwise(&mut self, mode: Pointwise, x: Tensor, b: Option<Tensor>) -> Result<Tensor> {
        let xd = self.desc(x)?.clone();
        if mode.operands() == 3 || mode.is_binary() != b.is_some() {
            return Err(Error::invalid_argument(format!(
                "the pointwise {mode:?} takes {} operand(s){}",
                mode.operands(),
                if mode.operands() == 3 {
                    ": use Graph::select"
                } else {
                    ""
                }
            )));
        }
        if let Pointwise::GenIndex(axis) = mode
            && axis as usize >= xd.dims().len()
        {
            return Err(Error::invalid_argument(format!(
                "the pointwise {mode:?}: {xd} has no dim {axis}"
            )));
        }
        if let Some(b) = b {
            self.broadcasts(mode, b, &xd)?;
        }
        let y = self.result(&xd, xd.dims(), mode.result_type())?;
        self.push(Op::Pointwise {
            mode,
            x,
            b,
            t: None,
            y,
        });
        Ok(y)
    }

    /// `mask ? x : b` ([`Pointwise::BinarySelect`]), `b` and the [`DataType::Boolean`] `mask`
    /// broadcast to `x`: a virtual `f32` result of `x`'s dims.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `b` or `mask` that does not broadcast to `x`, or a mask
    /// that is not boolean.
    pub fn select(&mut self, x: Tensor, b: Tensor, mask: Tensor) -> Result<Tensor> {
        let mode = Pointwise::BinarySelect;
        let xd = self.desc(x)?.clone();
        self.broadcasts(mode, b, &xd)?;
        self.broadcasts(mode, mask, &xd)?;
        if self.desc(mask)?.data_type() != DataType::Boolean {
            return Err(Error::invalid_argument(format!(
                "the pointwise {mode:?}: the mask {} is not boolean",
                self.desc(mask)?
            )));
        }
        let y = self.result(&xd, xd.dims(), DataType::F32)?;
        self.push(Op::Pointwise {
            mode,
            x,
            b: Some(b),
            t: Some(mask),
            y,
        });
        Ok(y)
    }

    fn broadcasts(&self, mode: Pointwise, b: Tensor, xd: &TensorDesc) -> Result<()> {
        let bd = self.desc(b)?;
        let fits = bd.dims().len() == xd.dims().len()
            && bd
                .dims()
                .iter()
                .zip(xd.dims())
                .all(|(b, x)| b == x || *b == 1);
        if fits {
            return Ok(());
        }
        Err(Error::invalid_argument(format!(
            "the pointwise {mode:?}: the operand {bd} does not broadcast to {xd}"
        )))
    }

    /// The matmul of `a` (batch..., M, K) by `b` (batch..., K, N; any batch dim may be 1 in one
    /// of them and broadcast): a virtual packed (batch..., M, N) result of type `compute`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for operands of other ranks or below 3 dims, or whose inner
    /// dims or batches do not match.
    pub fn matmul(&mut self, a: Tensor, b: Tensor, compute: DataType) -> Result<Tensor> {
        self.matmul_with(a, b, compute, MatmulOverrides::default())
    }

    /// [`matmul`](Self::matmul) with per-batch sizes ([`MatmulOverrides`]). Each override is
    /// an input of the graph whose memory the caller binds, through the unsafe
    /// [`VariantPack::sizes`](super::VariantPack::sizes) only: cuDNN takes its values as loop
    /// bounds, unchecked.
    ///
    /// # Errors
    ///
    /// As [`matmul`](Self::matmul), and for an override that is not an integer tensor of the
    /// matmul's rank whose first dim is the batch's and every other 1, or that is not an input
    /// the caller binds: a constant passed by value ([`scalar`](Self::scalar)), a virtual
    /// tensor, or an operation's result.
    pub fn matmul_with(
        &mut self,
        a: Tensor,
        b: Tensor,
        compute: DataType,
        overrides: MatmulOverrides,
    ) -> Result<Tensor> {
        let (ad, bd) = (self.desc(a)?.clone(), self.desc(b)?.clone());
        let (da, db) = (ad.dims(), bd.dims());
        let rank = da.len();
        let batches = rank >= 3
            && db.len() == rank
            && da[..rank - 2]
                .iter()
                .zip(&db[..rank - 2])
                .all(|(x, y)| x == y || *x == 1 || *y == 1);
        if !batches || da[rank - 1] != db[rank - 2] {
            return Err(Error::invalid_argument(format!(
                "the matmul of {ad} by {bd}: operands are (batch..., M, K) and (batch..., K, N)"
            )));
        }
        let mut dims: Vec<i64> = da[..rank - 2]
            .iter()
            .zip(&db[..rank - 2])
            .map(|(x, y)| *x.max(y))
            .collect();
        dims.extend([da[rank - 2], db[rank - 1]]);
        for tensor in overrides.tensors() {
            self.bound_input(tensor, "the size override of a matmul")?;
            let od = self.desc(tensor)?;
            let fits = od.dims().len() == rank
                && od.dims()[0] == dims[0]
                && od.dims()[1..].iter().all(|&dim| dim == 1)
                && matches!(od.data_type(), DataType::I32 | DataType::I64);
            if !fits {
                return Err(Error::invalid_argument(format!(
                    "the matmul of {ad} by {bd}: the size override {od} is not an integer \
                     tensor of {} dims, the batch's ({}) then 1s",
                    rank, dims[0]
                )));
            }
        }
        let c = self.add(TensorDesc::packed(compute, &dims).set_virtual(true))?;
        self.push(Op::Matmul {
            a,
            b,
            c,
            compute,
            overrides,
        });
        Ok(c)
    }

    /// The reduction `op` of `x` to `dims` (each `x`'s or 1): a virtual packed `f32` result.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `dims` of another rank or not `x`'s or 1.
    pub fn reduction(&mut self, op: Reduce, x: Tensor, dims: &[i64]) -> Result<Tensor> {
        let xd = self.desc(x)?.clone();
        let fits = dims.len() == xd.dims().len()
            && dims.iter().zip(xd.dims()).all(|(d, x)| d == x || *d == 1);
        if !fits {
            return Err(Error::invalid_argument(format!(
                "the reduction of {xd} to {dims:?}: each dim is the input's or 1"
            )));
        }
        let y = self.add(TensorDesc::packed(DataType::F32, dims).set_virtual(true))?;
        self.push(Op::Reduction { op, x, y });
        Ok(y)
    }

    /// `x` seen with its last two dims swapped (a transposed view of the same values, no copy):
    /// a virtual result of type `data_type`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an `x` of fewer than 2 dims.
    pub fn transpose(&mut self, x: Tensor, data_type: DataType) -> Result<Tensor> {
        let xd = self.desc(x)?.clone();
        let rank = xd.dims().len();
        if rank < 2 {
            return Err(Error::invalid_argument(format!(
                "the transpose of {xd}: it has fewer than 2 dims"
            )));
        }
        let (mut dims, mut strides) = (xd.dims().to_vec(), xd.strides().to_vec());
        dims.swap(rank - 2, rank - 1);
        strides.swap(rank - 2, rank - 1);
        let view = TensorDesc::new(data_type, &dims, &strides).set_virtual(true);
        let y = self.add(view)?;
        self.push(Op::Reshape { x, y });
        Ok(y)
    }

    /// Bernoulli draws of cuDNN's Philox generator, one per element of `dims`: 1 with
    /// probability `keep`, else 0 (a dropout mask), from a `seed` and an `offset` (one-element
    /// `i64` tensors bound to buffers, so that a captured graph draws anew when they change):
    /// a virtual packed `f32` result.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `keep` outside [0, 1], or a seed or offset that is not
    /// one `i64`.
    pub fn bernoulli(
        &mut self,
        dims: &[i64],
        keep: f64,
        seed: Tensor,
        offset: Tensor,
    ) -> Result<Tensor> {
        let keep = Probability::new(keep).ok_or_else(|| {
            Error::invalid_argument(format!(
                "a Bernoulli probability of {keep} is not in [0, 1]"
            ))
        })?;
        for tensor in [seed, offset] {
            let desc = self.desc(tensor)?;
            if desc.data_type() != DataType::I64 || desc.dims().iter().any(|&dim| dim != 1) {
                return Err(Error::invalid_argument(format!(
                    "a random number generator's seed and offset are one i64 each; got {desc}"
                )));
            }
        }
        let y = self.add(TensorDesc::packed(DataType::F32, dims).set_virtual(true))?;
        self.push(Op::Rng {
            y,
            seed,
            offset,
            keep,
        });
        Ok(y)
    }

    /// Refuses `tensor` (`what`) unless it is an input of the graph whose memory the caller
    /// binds: not passed by value, virtual or in the workspace, and written by no operation.
    fn bound_input(&self, tensor: Tensor, what: &str) -> Result<()> {
        let desc = self.desc(tensor)?;
        if desc.is_bound() && !self.writes(tensor) {
            return Ok(());
        }
        Err(Error::invalid_argument(format!(
            "{what} is tensor {} ({desc}), which is not an input the caller binds: its values \
             reach cuDNN unchecked, so only memory bound through the unsafe \
             VariantPack::sizes may hold them",
            tensor.uid()
        )))
    }

    /// Refuses a graph that cannot make a plan: no operation, no output, or a matmul size
    /// override that is not an input the caller binds.
    pub(crate) fn check(&self) -> Result<()> {
        if self.ops.is_empty() {
            return Err(Error::invalid_argument("a cuDNN graph needs an operation"));
        }
        for tensor in self.size_overrides() {
            self.bound_input(tensor, "the size override of a matmul")?;
        }
        if !self.tensors.iter().any(TensorDesc::is_bound) {
            return Err(Error::invalid_argument(
                "a cuDNN graph needs a tensor with memory (Graph::output)",
            ));
        }
        Ok(())
    }

    /// A virtual result of `dims` in the layout of `like`.
    pub(crate) fn result(
        &mut self,
        like: &TensorDesc,
        dims: &[i64],
        data_type: DataType,
    ) -> Result<Tensor> {
        let desc = if like.is_channels_last() {
            TensorDesc::channels_last(data_type, dims)
        } else {
            TensorDesc::packed(data_type, dims)
        };
        self.add(desc.set_virtual(true))
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(label) = self.label {
            f.write_str(label)?;
        } else {
            let names: Vec<&str> = self.ops.iter().map(Op::name).collect();
            write!(f, "the graph [{}]", names.join(", ").replace("the ", ""))?;
        }
        if let Some((_, first)) = self.tensors().find(|(_, desc)| desc.is_bound()) {
            write!(f, " on {first}")?;
        }
        Ok(())
    }
}
