//! Convolutions: a [`Convolution`]'s geometry and the [`Graph`] builders of the forward, backward
//! data and backward filter passes, every shape checked as they are added.

use super::graph::Graph;
use super::op::Op;
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::{Error, Result};

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

impl Graph {
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
        self.push(Op::ConvForward {
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
        self.push(Op::ConvBackwardData {
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
        self.push(Op::ConvBackwardFilter {
            x,
            dy,
            dw,
            conv: conv.clone(),
        });
        Ok(dw)
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
