//! The parameters of a graph's operations: a [`Convolution`]'s geometry, the [`Pointwise`]
//! modes and the [`Reduce`] operators.

use super::tensor::DataType;
use cuda_safe::{Error, Result};
use cudnn_sys::{cudnnPointwiseMode_t, cudnnReduceTensorOp_t};

/// A convolution's geometry: per spatial dim, the padding before and after, the stride and the
/// dilation; the number of groups; the compute type. Cross-correlation, as every framework's
/// "convolution".
///
/// ```
/// use cuda_safe_libs::dnn::Convolution;
///
/// let conv = Convolution::new(2).padding([1, 1]).stride([2, 2]).groups(4);
/// assert_eq!(conv.output_dims(&[56, 56], &[3, 3]), Some(vec![28, 28]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Convolution {
    pre_padding: Vec<i64>,
    post_padding: Vec<i64>,
    stride: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
    compute: DataType,
}

impl Convolution {
    /// A convolution over `spatial` dims (2 for images): no padding, stride 1, no dilation, one
    /// group, computed in f32 (TF32 tensor cores allowed where the inputs are f32).
    pub fn new(spatial: usize) -> Self {
        Self {
            pre_padding: vec![0; spatial],
            post_padding: vec![0; spatial],
            stride: vec![1; spatial],
            dilation: vec![1; spatial],
            groups: 1,
            compute: DataType::F32,
        }
    }

    /// The same padding before and after, per spatial dim.
    #[must_use]
    pub fn padding<const N: usize>(mut self, padding: [i64; N]) -> Self {
        self.pre_padding = padding.to_vec();
        self.post_padding = padding.to_vec();
        self
    }

    /// Different padding before and after, per spatial dim.
    #[must_use]
    pub fn padding_asymmetric(mut self, before: &[i64], after: &[i64]) -> Self {
        self.pre_padding = before.to_vec();
        self.post_padding = after.to_vec();
        self
    }

    /// The strides, per spatial dim.
    #[must_use]
    pub fn stride<const N: usize>(mut self, stride: [i64; N]) -> Self {
        self.stride = stride.to_vec();
        self
    }

    /// The dilations, per spatial dim.
    #[must_use]
    pub fn dilation<const N: usize>(mut self, dilation: [i64; N]) -> Self {
        self.dilation = dilation.to_vec();
        self
    }

    /// The number of groups (channels split in `groups` independent convolutions; the filter's
    /// C is the input's divided by it).
    #[must_use]
    pub fn groups(mut self, groups: i64) -> Self {
        self.groups = groups;
        self
    }

    /// The compute type (f32 by default; f64 for f64 data).
    #[must_use]
    pub fn compute(mut self, compute: DataType) -> Self {
        self.compute = compute;
        self
    }

    /// The number of groups.
    pub fn group_count(&self) -> i64 {
        self.groups
    }

    /// How many spatial dims.
    pub fn spatial(&self) -> usize {
        self.stride.len()
    }

    pub(crate) fn parts(&self) -> [&[i64]; 4] {
        [
            &self.pre_padding,
            &self.post_padding,
            &self.stride,
            &self.dilation,
        ]
    }

    pub(crate) fn compute_type(&self) -> DataType {
        self.compute
    }

    /// The output's spatial dims for an input's `input` and a filter's `filter` (None when
    /// the lengths differ from [`spatial`](Self::spatial) or an output dim would be below 1).
    pub fn output_dims(&self, input: &[i64], filter: &[i64]) -> Option<Vec<i64>> {
        let n = self.spatial();
        if input.len() != n || filter.len() != n || self.pre_padding.len() != n {
            return None;
        }
        if self.post_padding.len() != n || self.dilation.len() != n {
            return None;
        }
        (0..n)
            .map(|i| {
                let reach = self.dilation[i] * (filter[i] - 1) + 1;
                let room = input[i] + self.pre_padding[i] + self.post_padding[i] - reach;
                (self.stride[i] >= 1 && room >= 0).then(|| room / self.stride[i] + 1)
            })
            .collect()
    }

    pub(crate) fn check(&self) -> Result<()> {
        let n = self.spatial();
        let lengths = self.parts().iter().all(|part| part.len() == n);
        let positive = self.stride.iter().chain(&self.dilation).all(|&v| v >= 1);
        let padding = self
            .pre_padding
            .iter()
            .chain(&self.post_padding)
            .all(|&v| v >= 0);
        if n == 0 || !lengths || !positive || !padding || self.groups < 1 {
            return Err(Error::invalid_argument(format!(
                "the convolution {self:?} needs one padding, stride (>= 1) and dilation (>= 1) \
                 per spatial dim and at least one group"
            )));
        }
        Ok(())
    }
}

/// A pointwise operation: unary (activations, math) or binary (`x op b`, `b` broadcast over
/// the dims where it is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pointwise {
    /// `x + b`.
    Add,
    /// `x - b`.
    Sub,
    /// `x * b`.
    Mul,
    /// `x / b`.
    Div,
    /// `max(x, b)`.
    Max,
    /// `min(x, b)`.
    Min,
    /// `max(x, 0)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// GELU (erf form).
    Gelu,
    /// GELU (tanh approximation).
    GeluTanh,
    /// `x * sigmoid(x)` (swish with beta 1).
    Silu,
    /// `e^x`.
    Exp,
    /// `ln x`.
    Log,
    /// `-x`.
    Neg,
    /// `sqrt(x)`.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `x`.
    Identity,
}

impl Pointwise {
    /// Whether it takes a second operand.
    pub fn is_binary(self) -> bool {
        matches!(
            self,
            Self::Add | Self::Sub | Self::Mul | Self::Div | Self::Max | Self::Min
        )
    }

    /// cuDNN's mode.
    pub fn as_raw(self) -> cudnnPointwiseMode_t {
        match self {
            Self::Add => cudnnPointwiseMode_t::CUDNN_POINTWISE_ADD,
            Self::Sub => cudnnPointwiseMode_t::CUDNN_POINTWISE_SUB,
            Self::Mul => cudnnPointwiseMode_t::CUDNN_POINTWISE_MUL,
            Self::Div => cudnnPointwiseMode_t::CUDNN_POINTWISE_DIV,
            Self::Max => cudnnPointwiseMode_t::CUDNN_POINTWISE_MAX,
            Self::Min => cudnnPointwiseMode_t::CUDNN_POINTWISE_MIN,
            Self::Relu => cudnnPointwiseMode_t::CUDNN_POINTWISE_RELU_FWD,
            Self::Tanh => cudnnPointwiseMode_t::CUDNN_POINTWISE_TANH_FWD,
            Self::Sigmoid => cudnnPointwiseMode_t::CUDNN_POINTWISE_SIGMOID_FWD,
            Self::Gelu => cudnnPointwiseMode_t::CUDNN_POINTWISE_GELU_FWD,
            Self::GeluTanh => cudnnPointwiseMode_t::CUDNN_POINTWISE_GELU_APPROX_TANH_FWD,
            Self::Silu => cudnnPointwiseMode_t::CUDNN_POINTWISE_SWISH_FWD,
            Self::Exp => cudnnPointwiseMode_t::CUDNN_POINTWISE_EXP,
            Self::Log => cudnnPointwiseMode_t::CUDNN_POINTWISE_LOG,
            Self::Neg => cudnnPointwiseMode_t::CUDNN_POINTWISE_NEG,
            Self::Sqrt => cudnnPointwiseMode_t::CUDNN_POINTWISE_SQRT,
            Self::Rsqrt => cudnnPointwiseMode_t::CUDNN_POINTWISE_RSQRT,
            Self::Identity => cudnnPointwiseMode_t::CUDNN_POINTWISE_IDENTITY,
        }
    }
}

/// A reduction over the dims where the output is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reduce {
    /// The sum.
    Add,
    /// The maximum.
    Max,
    /// The minimum.
    Min,
    /// The mean.
    Avg,
}

impl Reduce {
    /// cuDNN's operator.
    pub fn as_raw(self) -> cudnnReduceTensorOp_t {
        match self {
            Self::Add => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
            Self::Max => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX,
            Self::Min => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MIN,
            Self::Avg => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AVG,
        }
    }
}
