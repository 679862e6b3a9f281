//! [`Graph`]: a typed builder of cuDNN operation graphs (convolutions, pointwise operations,
//! matmuls, reductions), every shape checked as it is added.

use std::fmt;

use super::ops::{Convolution, Pointwise, Reduce};
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::{Error, Result};

/// One operation of a [`Graph`], on its tensors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// `y = conv(x, w)`.
    ConvForward {
        /// The input (N, C, spatial...).
        x: Tensor,
        /// The filter (K, C / groups, spatial...).
        w: Tensor,
        /// The output (N, K, spatial...).
        y: Tensor,
        /// The geometry.
        conv: Convolution,
    },
    /// `dx = conv_backward_data(dy, w)`.
    ConvBackwardData {
        /// The output's gradient.
        dy: Tensor,
        /// The filter.
        w: Tensor,
        /// The input's gradient.
        dx: Tensor,
        /// The geometry.
        conv: Convolution,
    },
    /// `dw = conv_backward_filter(x, dy)`.
    ConvBackwardFilter {
        /// The input.
        x: Tensor,
        /// The output's gradient.
        dy: Tensor,
        /// The filter's gradient.
        dw: Tensor,
        /// The geometry.
        conv: Convolution,
    },
    /// `y = mode(x[, b])`.
    Pointwise {
        /// The mode.
        mode: Pointwise,
        /// The first operand.
        x: Tensor,
        /// The second operand of a binary mode.
        b: Option<Tensor>,
        /// The result.
        y: Tensor,
    },
    /// `c = a b` (batch, rows, columns).
    Matmul {
        /// The left operand (B, M, K).
        a: Tensor,
        /// The right operand (B, K, N).
        b: Tensor,
        /// The result (B, M, N).
        c: Tensor,
        /// The compute type.
        compute: DataType,
    },
    /// `y = reduce(x)` over the dims where `y` is 1.
    Reduction {
        /// The operator.
        op: Reduce,
        /// The input.
        x: Tensor,
        /// The result.
        y: Tensor,
    },
}

impl Op {
    /// The tensor the operation writes.
    pub fn result(&self) -> Tensor {
        match self {
            Self::ConvForward { y, .. } | Self::Pointwise { y, .. } | Self::Reduction { y, .. } => {
                *y
            }
            Self::ConvBackwardData { dx, .. } => *dx,
            Self::ConvBackwardFilter { dw, .. } => *dw,
            Self::Matmul { c, .. } => *c,
        }
    }

    /// The operation's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ConvForward { .. } => "the convolution forward",
            Self::ConvBackwardData { .. } => "the convolution backward data",
            Self::ConvBackwardFilter { .. } => "the convolution backward filter",
            Self::Pointwise { .. } => "the pointwise operation",
            Self::Matmul { .. } => "the matmul",
            Self::Reduction { .. } => "the reduction",
        }
    }
}

/// A cuDNN operation graph, built operation by operation: [`tensor`](Self::tensor) adds an
/// input, each operation ([`conv_forward`](Self::conv_forward), [`pointwise`](Self::pointwise),
/// [`matmul`](Self::matmul), ...) checks its operands' shapes and returns its result as a
/// virtual tensor (computed in f32, living only inside the fused kernel), and
/// [`output`](Self::output) gives a result memory of a data type. The graph is `Hash + Eq`: it
/// is the key its plans are cached under ([`Dnn::execute`](super::Dnn::execute)).
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
    /// [`Error::InvalidArgument`] for a description [`TensorDesc::check`] refuses.
    pub fn tensor(&mut self, desc: TensorDesc) -> Result<Tensor> {
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
        self.ops.iter().any(|op| op.result() == tensor)
    }

    /// Makes `tensor` an output with memory of `data_type` (it was a virtual result).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a tensor of another graph, or one no operation writes
    /// (an input of the graph).
    pub fn output(&mut self, tensor: Tensor, data_type: DataType) -> Result<()> {
        self.desc(tensor)?;
        if !self.writes(tensor) {
            return Err(Error::invalid_argument(format!(
                "tensor {} is an input of the graph, not the result of an operation: it cannot \
                 be an output",
                tensor.uid()
            )));
        }
        let desc = &mut self.tensors[(tensor.0 - 1) as usize];
        *desc = desc.clone().set_virtual(false).with_data_type(data_type);
        Ok(())
    }

    /// The convolution forward of `x` (N, C, spatial...) by `w` (K, C / groups, spatial...):
    /// a virtual (N, K, out...) result in the input's layout.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for operands of other ranks than the geometry's, channels
    /// that do not match (with the groups), or an output dim below 1.
    pub fn conv_forward(&mut self, x: Tensor, w: Tensor, conv: &Convolution) -> Result<Tensor> {
        let (xd, wd) = (self.desc(x)?.clone(), self.desc(w)?.clone());
        let out = conv_output(&xd, &wd, conv)?;
        let y = self.result(&xd, &out, conv.compute_type())?;
        self.ops.push(Op::ConvForward {
            x,
            w,
            y,
            conv: conv.clone(),
        });
        Ok(y)
    }

    /// The convolution backward data: from the output's gradient `dy` and the filter `w`, the
    /// input's gradient, of `x_dims` (N, C, spatial...), a virtual result in `dy`'s layout.
    ///
    /// # Errors
    ///
    /// As [`conv_forward`](Self::conv_forward), and for `x_dims` whose forward output is not
    /// `dy`'s dims.
    pub fn conv_backward_data(
        &mut self,
        dy: Tensor,
        w: Tensor,
        conv: &Convolution,
        x_dims: &[i64],
    ) -> Result<Tensor> {
        let (dyd, wd) = (self.desc(dy)?.clone(), self.desc(w)?.clone());
        let xd = TensorDesc::packed(dyd.data_type(), x_dims);
        let out = conv_output(&xd, &wd, conv)?;
        same_dims("the convolution backward data", &out, dyd.dims())?;
        let dx = self.result(&dyd, x_dims, conv.compute_type())?;
        self.ops.push(Op::ConvBackwardData {
            dy,
            w,
            dx,
            conv: conv.clone(),
        });
        Ok(dx)
    }

    /// The convolution backward filter: from the input `x` and the output's gradient `dy`,
    /// the filter's gradient, of `w_dims` (K, C / groups, spatial...), a virtual result in
    /// `x`'s layout.
    ///
    /// # Errors
    ///
    /// As [`conv_backward_data`](Self::conv_backward_data).
    pub fn conv_backward_filter(
        &mut self,
        x: Tensor,
        dy: Tensor,
        conv: &Convolution,
        w_dims: &[i64],
    ) -> Result<Tensor> {
        let (xd, dyd) = (self.desc(x)?.clone(), self.desc(dy)?.clone());
        let wd = TensorDesc::packed(xd.data_type(), w_dims);
        let out = conv_output(&xd, &wd, conv)?;
        same_dims("the convolution backward filter", &out, dyd.dims())?;
        let dw = self.result(&xd, w_dims, conv.compute_type())?;
        self.ops.push(Op::ConvBackwardFilter {
            x,
            dy,
            dw,
            conv: conv.clone(),
        });
        Ok(dw)
    }

    /// The pointwise `mode` of `x` (and `b`, for a binary mode, broadcast over the dims where
    /// it is 1): a virtual result of `x`'s dims and layout.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a binary mode without `b` or a unary one with it, or a
    /// `b` whose rank differs or whose dims are neither `x`'s nor 1.
    pub fn pointwise(&mut self, mode: Pointwise, x: Tensor, b: Option<Tensor>) -> Result<Tensor> {
        let xd = self.desc(x)?.clone();
        if mode.is_binary() != b.is_some() {
            return Err(Error::invalid_argument(format!(
                "the pointwise {mode:?} takes {} operand(s)",
                if mode.is_binary() { 2 } else { 1 }
            )));
        }
        if let Some(b) = b {
            let bd = self.desc(b)?;
            let fits = bd.dims().len() == xd.dims().len()
                && bd
                    .dims()
                    .iter()
                    .zip(xd.dims())
                    .all(|(b, x)| b == x || *b == 1);
            if !fits {
                return Err(Error::invalid_argument(format!(
                    "the pointwise {mode:?}: the operand {bd} does not broadcast to {xd}"
                )));
            }
        }
        let y = self.result(&xd, xd.dims(), DataType::F32)?;
        self.ops.push(Op::Pointwise { mode, x, b, y });
        Ok(y)
    }

    /// The matmul of `a` (B, M, K) by `b` (B, K, N; either batch may be 1 and broadcast): a
    /// virtual packed (B, M, N) result.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for operands that are not 3-D or whose inner dims or batches
    /// do not match.
    pub fn matmul(&mut self, a: Tensor, b: Tensor, compute: DataType) -> Result<Tensor> {
        let (ad, bd) = (self.desc(a)?.clone(), self.desc(b)?.clone());
        let (da, db) = (ad.dims(), bd.dims());
        let batches =
            da.len() == 3 && db.len() == 3 && (da[0] == db[0] || da[0] == 1 || db[0] == 1);
        if !batches || da[2] != db[1] {
            return Err(Error::invalid_argument(format!(
                "the matmul of {ad} by {bd}: operands are (B, M, K) and (B, K, N)"
            )));
        }
        let dims = [da[0].max(db[0]), da[1], db[2]];
        let c = self.tensor(TensorDesc::packed(compute, &dims).set_virtual(true))?;
        self.ops.push(Op::Matmul { a, b, c, compute });
        Ok(c)
    }

    /// The reduction `op` of `x` to `dims` (each `x`'s or 1): a virtual packed result.
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
        let y = self.tensor(TensorDesc::packed(DataType::F32, dims).set_virtual(true))?;
        self.ops.push(Op::Reduction { op, x, y });
        Ok(y)
    }

    /// Refuses a graph that cannot make a plan: no operation, or no output.
    pub(crate) fn check(&self) -> Result<()> {
        if self.ops.is_empty() {
            return Err(Error::invalid_argument("a cuDNN graph needs an operation"));
        }
        if self.tensors.iter().all(TensorDesc::is_virtual) {
            return Err(Error::invalid_argument(
                "a cuDNN graph needs a tensor with memory (Graph::output)",
            ));
        }
        Ok(())
    }

    /// A virtual result of `dims` in the layout of `like`.
    fn result(&mut self, like: &TensorDesc, dims: &[i64], compute: DataType) -> Result<Tensor> {
        let desc = if like.is_channels_last() {
            TensorDesc::channels_last(compute, dims)
        } else {
            TensorDesc::packed(compute, dims)
        };
        self.tensor(desc.set_virtual(true))
    }
}

/// The forward output dims of `x` by `w` under `conv`, every shape checked.
fn conv_output(x: &TensorDesc, w: &TensorDesc, conv: &Convolution) -> Result<Vec<i64>> {
    conv.check()?;
    let (xd, wd) = (x.dims(), w.dims());
    let rank = conv.spatial() + 2;
    if xd.len() != rank || wd.len() != rank {
        return Err(Error::invalid_argument(format!(
            "a convolution over {} spatial dims takes {rank}-D input and filter; got {x} and {w}",
            conv.spatial()
        )));
    }
    let groups = conv.group_count();
    if wd[1] * groups != xd[1] || wd[0] % groups != 0 {
        return Err(Error::invalid_argument(format!(
            "a convolution of {groups} group(s): the input's C ({}) must be the filter's ({}) \
             times the groups, and the filter's K ({}) a multiple of them",
            xd[1], wd[1], wd[0]
        )));
    }
    let spatial = conv.output_dims(&xd[2..], &wd[2..]).ok_or_else(|| {
        Error::invalid_argument(format!(
            "a convolution of {x} by {w} under {conv:?} has an output dim below 1"
        ))
    })?;
    Ok([xd[0], wd[0]].into_iter().chain(spatial).collect())
}

fn same_dims(what: &str, want: &[i64], got: &[i64]) -> Result<()> {
    if want == got {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{what}: the output's gradient is {got:?}; the forward output of these dims is {want:?}"
    )))
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.ops.iter().map(Op::name).collect();
        write!(f, "the graph [{}]", names.join(", ").replace("the ", ""))?;
        if let Some((_, first)) = self.tensors().find(|(_, desc)| !desc.is_virtual()) {
            write!(f, " on {first}")?;
        }
        Ok(())
    }
}
