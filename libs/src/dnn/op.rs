//! [`Op`]: one operation of a [`Graph`](super::Graph) on its tensors, and the parameters only
//! some operations take ([`MatmulOverrides`], [`Probability`]).

use super::conv::Convolution;
use super::ops::{Pointwise, Reduce};
use super::tensor::{DataType, Tensor};

/// The tensors that override a matmul's M, N or K per batch (cuDNN's
/// `GEMM_{M,N,K}_OVERRIDE_DESC`): `i32` tensors of the matmul's rank, their first dim the batch
/// and every other 1, bound to the actual sizes (sequence lengths of a padded batch). Rows and
/// columns past an overridden M or N are the padding value (0); sums stop at an overridden K.
///
/// cuDNN's kernels use the values as loop bounds and do not check them: each must lie in
/// `0..=` the dim it overrides, so the buffers holding them are bound only through the unsafe
/// [`VariantPack::sizes`](super::VariantPack::sizes), whose caller promises it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MatmulOverrides {
    /// The rows of `a` (and of the result) that count.
    pub m: Option<Tensor>,
    /// The columns of `b` (and of the result) that count.
    pub n: Option<Tensor>,
    /// The inner dim's elements that count.
    pub k: Option<Tensor>,
}

impl MatmulOverrides {
    /// Every override tensor given.
    pub(crate) fn tensors(&self) -> impl Iterator<Item = Tensor> {
        [self.m, self.n, self.k].into_iter().flatten()
    }
}

/// A probability in [0, 1], kept as the bits of its `f64` so that a graph stays `Hash + Eq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Probability(u64);

impl Probability {
    /// `value`, or None outside [0, 1] (NaN included).
    pub fn new(value: f64) -> Option<Self> {
        (0.0..=1.0)
            .contains(&value)
            .then_some(Self(value.to_bits()))
    }

    /// The value.
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// One operation of a [`Graph`](super::Graph), on its tensors.
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
    /// `y = mode(x[, b[, t]])`.
    Pointwise {
        /// The mode.
        mode: Pointwise,
        /// The first operand.
        x: Tensor,
        /// The second operand of a binary or ternary mode.
        b: Option<Tensor>,
        /// The third operand (the mask of [`Pointwise::BinarySelect`]).
        t: Option<Tensor>,
        /// The result.
        y: Tensor,
    },
    /// `c = a b` over the last two dims, the others a batch.
    Matmul {
        /// The left operand (batch..., M, K).
        a: Tensor,
        /// The right operand (batch..., K, N).
        b: Tensor,
        /// The result (batch..., M, N).
        c: Tensor,
        /// The compute type.
        compute: DataType,
        /// The per-batch sizes, if any.
        overrides: MatmulOverrides,
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
    /// `y` is `x`'s memory seen through other dims and strides (a transposed view).
    Reshape {
        /// The input.
        x: Tensor,
        /// The view.
        y: Tensor,
    },
    /// `y` is a Bernoulli draw per element (1 with probability `keep`, else 0) of cuDNN's
    /// Philox generator, from a seed and an offset.
    Rng {
        /// The draws.
        y: Tensor,
        /// The seed (`i64`, one element).
        seed: Tensor,
        /// The offset into the generator's sequence (`i64`, one element).
        offset: Tensor,
        /// The probability of a 1.
        keep: Probability,
    },
    /// A layer normalization forward over every dim but the first:
    /// `y = (x - mean) * inv_variance * scale + bias`.
    NormForward {
        /// The input.
        x: Tensor,
        /// The scale (1, dims of `x` past the first).
        scale: Tensor,
        /// The bias, as the scale.
        bias: Tensor,
        /// The epsilon added to the variance (one element).
        epsilon: Tensor,
        /// The result.
        y: Tensor,
        /// The means (training: `x`'s first dim, then 1s), or None for inference.
        mean: Option<Tensor>,
        /// The inverses of the standard deviations, as the means.
        inv_variance: Option<Tensor>,
    },
    /// A layer normalization backward: from the output's gradient and the forward's saved
    /// statistics, the gradients of the input, the scale and the bias.
    NormBackward {
        /// The forward's input.
        x: Tensor,
        /// The output's gradient.
        dy: Tensor,
        /// The scale.
        scale: Tensor,
        /// The forward's means.
        mean: Tensor,
        /// The forward's inverse standard deviations.
        inv_variance: Tensor,
        /// The input's gradient.
        dx: Tensor,
        /// The scale's gradient.
        dscale: Tensor,
        /// The bias's gradient.
        dbias: Tensor,
    },
}

impl Op {
    /// The tensors the operation writes (one, or up to three for the normalizations).
    pub fn results(&self) -> [Option<Tensor>; 3] {
        match self {
            Self::ConvForward { y, .. }
            | Self::Pointwise { y, .. }
            | Self::Reduction { y, .. }
            | Self::Reshape { y, .. }
            | Self::Rng { y, .. } => [Some(*y), None, None],
            Self::ConvBackwardData { dx, .. } => [Some(*dx), None, None],
            Self::ConvBackwardFilter { dw, .. } => [Some(*dw), None, None],
            Self::Matmul { c, .. } => [Some(*c), None, None],
            Self::NormForward {
                y,
                mean,
                inv_variance,
                ..
            } => [Some(*y), *mean, *inv_variance],
            Self::NormBackward {
                dx, dscale, dbias, ..
            } => [Some(*dx), Some(*dscale), Some(*dbias)],
        }
    }

    /// Whether the operation writes `tensor`.
    pub fn writes(&self, tensor: Tensor) -> bool {
        self.results().contains(&Some(tensor))
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
            Self::Reshape { .. } => "the reshape",
            Self::Rng { .. } => "the random number generator",
            Self::NormForward { .. } => "the layer norm forward",
            Self::NormBackward { .. } => "the layer norm backward",
        }
    }
}
