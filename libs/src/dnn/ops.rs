//! The modes of a graph's elementwise operations: [`Pointwise`] and the [`Reduce`] operators.

use super::tensor::DataType;
use cudnn_sys::{cudnnPointwiseMode_t, cudnnReduceTensorOp_t};

/// A pointwise operation: unary (activations, math), binary (`x op b`, `b` broadcast over the
/// dims where it is 1) or, for [`BinarySelect`](Self::BinarySelect), ternary. Comparisons and
/// logical operations give [`DataType::Boolean`] masks, [`GenIndex`](Self::GenIndex) `i32`
/// indices, every other mode `f32`.
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
    /// `x == b`.
    CmpEq,
    /// `x != b`.
    CmpNe,
    /// `x > b`.
    CmpGt,
    /// `x >= b`.
    CmpGe,
    /// `x < b`.
    CmpLt,
    /// `x <= b`.
    CmpLe,
    /// `x && b` (masks).
    LogicalAnd,
    /// `x || b` (masks).
    LogicalOr,
    /// `!x` (a mask).
    LogicalNot,
    /// `t ? x : b`: the ternary mode of [`Graph::select`](super::Graph::select).
    BinarySelect,
    /// Each element's index along dim `axis` of `x` (`x`'s values are not read).
    GenIndex(u32),
}

impl Pointwise {
    /// Whether it takes a second operand (and no third).
    pub fn is_binary(self) -> bool {
        self.operands() == 2
    }

    /// How many operands it takes: 1, 2, or 3 for [`BinarySelect`](Self::BinarySelect).
    pub fn operands(self) -> usize {
        match self {
            Self::Add | Self::Sub | Self::Mul | Self::Div | Self::Max | Self::Min => 2,
            Self::CmpEq | Self::CmpNe | Self::CmpGt | Self::CmpGe | Self::CmpLt | Self::CmpLe => 2,
            Self::LogicalAnd | Self::LogicalOr => 2,
            Self::BinarySelect => 3,
            _ => 1,
        }
    }

    /// The type of its result and of its computation: `i32` for [`GenIndex`](Self::GenIndex),
    /// [`DataType::Boolean`] for comparisons and logical operations, `f32` otherwise.
    pub fn result_type(self) -> DataType {
        match self {
            Self::GenIndex(_) => DataType::I32,
            Self::CmpEq | Self::CmpNe | Self::CmpGt | Self::CmpGe | Self::CmpLt | Self::CmpLe => {
                DataType::Boolean
            }
            Self::LogicalAnd | Self::LogicalOr | Self::LogicalNot => DataType::Boolean,
            _ => DataType::F32,
        }
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
            Self::CmpEq => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_EQ,
            Self::CmpNe => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_NEQ,
            Self::CmpGt => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_GT,
            Self::CmpGe => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_GE,
            Self::CmpLt => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_LT,
            Self::CmpLe => cudnnPointwiseMode_t::CUDNN_POINTWISE_CMP_LE,
            Self::LogicalAnd => cudnnPointwiseMode_t::CUDNN_POINTWISE_LOGICAL_AND,
            Self::LogicalOr => cudnnPointwiseMode_t::CUDNN_POINTWISE_LOGICAL_OR,
            Self::LogicalNot => cudnnPointwiseMode_t::CUDNN_POINTWISE_LOGICAL_NOT,
            Self::BinarySelect => cudnnPointwiseMode_t::CUDNN_POINTWISE_BINARY_SELECT,
            Self::GenIndex(_) => cudnnPointwiseMode_t::CUDNN_POINTWISE_GEN_INDEX,
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
    /// The largest absolute value (an FP8 graph's amax).
    AbsMax,
}

impl Reduce {
    /// cuDNN's operator.
    pub fn as_raw(self) -> cudnnReduceTensorOp_t {
        match self {
            Self::Add => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
            Self::Max => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX,
            Self::Min => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MIN,
            Self::Avg => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AVG,
            Self::AbsMax => cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AMAX,
        }
    }
}
