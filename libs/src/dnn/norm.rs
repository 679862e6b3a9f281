//! Normalizations: the [`Graph`] builders of a layer norm forward (training, with its
//! statistics, or inference) and backward on cuDNN's normalization operations, and of a softmax
//! over the last dim as the reduction and pointwise chain cuDNN's fused patterns use.

use super::graph::Graph;
use super::op::Op;
use super::ops::{Pointwise, Reduce};
use super::scalar::Scalar;
use super::tensor::{DataType, Tensor};
use cuda_safe::{Error, Result};

/// A layer norm's options: the epsilon added to the variance, and whether the forward is
/// training (it writes the means and inverse standard deviations the backward reads) or
/// inference.
///
/// ```
/// use cuda_safe_libs::dnn::{DataType, Graph, LayerNorm, TensorDesc};
///
/// // 64 tokens of 1024 features, bf16, scale and bias in f32.
/// let mut graph = Graph::new();
/// let x = graph.tensor(TensorDesc::packed(DataType::BF16, &[64, 1024, 1, 1]))?;
/// let scale = graph.tensor(TensorDesc::packed(DataType::F32, &[1, 1024, 1, 1]))?;
/// let bias = graph.tensor(TensorDesc::packed(DataType::F32, &[1, 1024, 1, 1]))?;
/// let out = graph.layer_norm(x, scale, bias, &LayerNorm::new(1e-5))?;
/// assert_eq!(graph.desc(out.mean.unwrap())?.dims(), [64, 1, 1, 1]);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerNorm {
    epsilon: f32,
    training: bool,
}

impl LayerNorm {
    /// A training forward with `epsilon`.
    pub fn new(epsilon: f32) -> Self {
        Self {
            epsilon,
            training: true,
        }
    }

    /// The same as an inference forward (no statistics written).
    #[must_use]
    pub fn inference(mut self) -> Self {
        self.training = false;
        self
    }

    /// The epsilon.
    pub fn epsilon(&self) -> f32 {
        self.epsilon
    }

    /// Whether the forward is training.
    pub fn is_training(&self) -> bool {
        self.training
    }
}

/// The outputs of [`Graph::layer_norm`], each with memory (bound in the variant pack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerNormForward {
    /// The result, of `x`'s dims and type.
    pub y: Tensor,
    /// The means, `f32` (training only).
    pub mean: Option<Tensor>,
    /// The inverse standard deviations, `f32` (training only).
    pub inv_variance: Option<Tensor>,
}

/// The outputs of [`Graph::layer_norm_backward`], each with memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerNormBackward {
    /// The input's gradient, of `x`'s dims and type.
    pub dx: Tensor,
    /// The scale's gradient, of the scale's dims and type.
    pub dscale: Tensor,
    /// The bias's gradient, as the scale's.
    pub dbias: Tensor,
}

/// The outputs of [`Graph::softmax`], each with memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Softmax {
    /// The softmax, of `x`'s dims and type.
    pub y: Tensor,
    /// The log of each row's sum of exponentials (`max + ln(sum(exp(x - max)))`), `f32`, of
    /// `x`'s dims with the last 1, if asked for.
    pub stats: Option<Tensor>,
}

impl Graph {
    /// A layer norm forward of `x` (N, features...) over every dim but the first, with `scale`
    /// and `bias` of dims (1, features...): `y` of `x`'s type, and in training the `f32` means
    /// and inverse standard deviations of dims (N, 1...). cuDNN's
    /// `CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR` in `CUDNN_LAYER_NORM` mode; the epsilon
    /// is passed by value.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an `x` of fewer than 2 dims, a scale or bias of other dims
    /// or not floating-point, or an epsilon that is not finite and positive.
    pub fn layer_norm(
        &mut self,
        x: Tensor,
        scale: Tensor,
        bias: Tensor,
        norm: &LayerNorm,
    ) -> Result<LayerNormForward> {
        let xd = self.desc(x)?.clone();
        self.affine(&xd, &[scale, bias], "layer norm")?;
        if !(norm.epsilon.is_finite() && norm.epsilon > 0.0) {
            return Err(Error::invalid_argument(format!(
                "a layer norm's epsilon is finite and positive; got {}",
                norm.epsilon
            )));
        }
        let rank = xd.dims().len();
        let epsilon = self.scalar(Scalar::f32(norm.epsilon), rank)?;
        let y = self.result(&xd, xd.dims(), xd.data_type())?;
        let (mean, inv_variance) = if norm.training {
            let stats = stats_dims(xd.dims());
            let mean = self.result(&xd, &stats, DataType::F32)?;
            let inv = self.result(&xd, &stats, DataType::F32)?;
            (Some(mean), Some(inv))
        } else {
            (None, None)
        };
        self.push(Op::NormForward {
            x,
            scale,
            bias,
            epsilon,
            y,
            mean,
            inv_variance,
        });
        self.output(y, xd.data_type())?;
        for stat in [mean, inv_variance].into_iter().flatten() {
            self.output(stat, DataType::F32)?;
        }
        Ok(LayerNormForward {
            y,
            mean,
            inv_variance,
        })
    }

    /// A layer norm backward: from the output's gradient `dy` (of `x`'s dims), the forward's
    /// input `x`, its `scale` and the training forward's `mean` and `inv_variance`, the
    /// gradients of the input (`x`'s type), the scale and the bias (the scale's type). cuDNN's
    /// `CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `dy` of other dims than `x`, or a scale or statistics
    /// of other dims than the forward's.
    pub fn layer_norm_backward(
        &mut self,
        dy: Tensor,
        x: Tensor,
        scale: Tensor,
        mean: Tensor,
        inv_variance: Tensor,
    ) -> Result<LayerNormBackward> {
        let xd = self.desc(x)?.clone();
        self.affine(&xd, &[scale], "layer norm backward")?;
        let stats = stats_dims(xd.dims());
        let fits = self.desc(dy)?.dims() == xd.dims()
            && self.desc(mean)?.dims() == stats
            && self.desc(inv_variance)?.dims() == stats;
        if !fits {
            return Err(Error::invalid_argument(format!(
                "a layer norm backward of {xd}: the output's gradient has its dims and the \
                 statistics {stats:?}"
            )));
        }
        let sd = self.desc(scale)?.clone();
        let dx = self.result(&xd, xd.dims(), xd.data_type())?;
        let dscale = self.result(&sd, sd.dims(), sd.data_type())?;
        let dbias = self.result(&sd, sd.dims(), sd.data_type())?;
        self.push(Op::NormBackward {
            x,
            dy,
            scale,
            mean,
            inv_variance,
            dx,
            dscale,
            dbias,
        });
        self.output(dx, xd.data_type())?;
        self.output(dscale, sd.data_type())?;
        self.output(dbias, sd.data_type())?;
        Ok(LayerNormBackward { dx, dscale, dbias })
    }

    /// Refuses scale or bias tensors that are not (1, features...) of `x` in a float type.
    fn affine(&self, xd: &super::TensorDesc, tensors: &[Tensor], what: &str) -> Result<()> {
        if xd.dims().len() < 2 {
            return Err(Error::invalid_argument(format!(
                "a {what} of {xd}: the input has a batch dim and at least one more"
            )));
        }
        let want: Vec<i64> = [1].iter().chain(&xd.dims()[1..]).copied().collect();
        for &tensor in tensors {
            let desc = self.desc(tensor)?;
            if desc.dims() != want || !desc.data_type().is_float() {
                return Err(Error::invalid_argument(format!(
                    "a {what} of {xd}: the scale and bias are floating-point {want:?}; got \
                     {desc}"
                )));
            }
        }
        Ok(())
    }

    /// The softmax of `x` over its last dim, as cuDNN's fused patterns compute it: the row
    /// maximum (a reduction), `exp(x - max)`, the row sum (a reduction), the quotient; and, if
    /// `stats`, `max + ln(sum)` (the statistics an attention backward reads). `y` has `x`'s type.
    ///
    /// cuDNN runs a reduction followed by pointwise operations of the full tensor only in some
    /// engines: where none of the loaded cuDNN's runs this graph, making its plan is refused
    /// ([`CudnnRefusal::NoEngine`](super::CudnnRefusal::NoEngine)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an `x` that is not floating-point.
    pub fn softmax(&mut self, x: Tensor, stats: bool) -> Result<Softmax> {
        let xd = self.desc(x)?.clone();
        if !xd.data_type().is_float() {
            return Err(Error::invalid_argument(format!(
                "the softmax of {xd}: the input is floating-point"
            )));
        }
        let (y, stats) = self.softmax_chain(x, stats)?;
        self.output(y, xd.data_type())?;
        if let Some(stats) = stats {
            self.output(stats, DataType::F32)?;
        }
        self.set_label("the softmax");
        Ok(Softmax { y, stats })
    }

    /// The softmax chain over the last dim of `x`: the virtual result, and the virtual
    /// statistics if asked for.
    pub(crate) fn softmax_chain(
        &mut self,
        x: Tensor,
        stats: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let mut rows = self.desc(x)?.dims().to_vec();
        if let Some(last) = rows.last_mut() {
            *last = 1;
        }
        let max = self.reduction(Reduce::Max, x, &rows)?;
        let shifted = self.pointwise(Pointwise::Sub, x, Some(max))?;
        let exp = self.pointwise(Pointwise::Exp, shifted, None)?;
        let sum = self.reduction(Reduce::Add, exp, &rows)?;
        let stats = if stats {
            let log = self.pointwise(Pointwise::Log, sum, None)?;
            Some(self.pointwise(Pointwise::Add, max, Some(log))?)
        } else {
            None
        };
        let y = self.pointwise(Pointwise::Div, exp, Some(sum))?;
        Ok((y, stats))
    }
}

/// The dims of a layer norm's statistics: `x`'s first, then 1s.
fn stats_dims(dims: &[i64]) -> Vec<i64> {
    dims.iter()
        .enumerate()
        .map(|(index, &dim)| if index == 0 { dim } else { 1 })
        .collect()
}
