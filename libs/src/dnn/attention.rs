//! Scaled-dot-product attention on cuDNN's fused flash attention engines: [`Attention`] (the
//! shapes, masks, dropout and scale) builds the forward graph, node for node the one cuDNN's
//! C++ frontend builds for these engines (they run only a graph of that pattern):
//!
//! ```text
//! S = Q·Kᵀ (Kᵀ a transposed view of K)  ->  S·scale  ->  padding mask  ->  causal mask
//!   -> softmax (max, sub, exp, sum, div; stats = max + ln sum)  ->  dropout (Philox mask,
//!   1/(1-p))  ->  O = P·V (P in the inputs' type)
//! ```
//!
//! The masks are generated indices compared with the sequence lengths or with each other and a
//! select of the lowest `f32`. The backward graph ([`Attention::backward`]) is in
//! `attention_backward.rs`.

use super::graph::Graph;
use super::op::MatmulOverrides;
use super::ops::{Pointwise, Reduce};
use super::scalar::Scalar;
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::{Error, Result};

/// How Q, K, V, O and their gradients lie in memory. cuDNN's dims are (B, H, S, D) for every
/// layout; only the strides differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum AttentionLayout {
    /// Packed (B, H, S, D): each head's tokens together.
    #[default]
    Bhsd,
    /// Packed (B, S, H, D): each token's heads together (PyTorch's `(B, S, H, D)` tensors,
    /// `transpose(1, 2)` of its attention inputs).
    Bshd,
}

impl AttentionLayout {
    /// The strides of a (B, H, S, D) tensor of `dims` in this layout, each product saturating
    /// at `i64::MAX` (dims that large are refused when a graph is built).
    pub fn strides(self, [_, h, s, d]: [i64; 4]) -> [i64; 4] {
        let product = |dims: &[i64]| dims.iter().fold(1i64, |acc, &dim| acc.saturating_mul(dim));
        match self {
            Self::Bhsd => [product(&[h, s, d]), product(&[s, d]), d, 1],
            Self::Bshd => [product(&[s, h, d]), d, product(&[h, d]), 1],
        }
    }
}

/// One scaled-dot-product attention: `softmax(scale · Q Kᵀ + masks) V` with optional dropout,
/// of `batch` sequences of `heads` heads of `head_dim` features, `seq_q` queries attending to
/// `seq_kv` keys, in `f16`, `bf16` or (forward only) FP8, computed in `f32`.
///
/// ```
/// use cuda_safe_libs::dnn::{Attention, DataType};
///
/// let attention = Attention::new(DataType::BF16, 4, 32, 4096, 128).causal(true);
/// let (graph, io) = attention.forward()?;
/// assert_eq!(graph.desc(io.q)?.dims(), [4, 32, 4096, 128]);
/// assert_eq!(graph.desc(io.stats.unwrap())?.dims(), [4, 32, 4096, 1]);
/// // A head dim cuDNN's engines do not take is refused before any call.
/// assert!(Attention::new(DataType::BF16, 1, 1, 64, 100).forward().is_err());
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attention {
    data_type: DataType,
    dims: [i64; 5],
    layout: AttentionLayout,
    causal: bool,
    padding: bool,
    dropout: Option<f64>,
    scale: Option<f32>,
    stats: bool,
}

/// The tensors of an attention forward graph ([`Attention::forward`]): bind a buffer to each
/// one that is `Some` (and to `q`, `k`, `v`, `o`) in the variant pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttentionForward {
    /// The queries (B, H, S_q, D).
    pub q: Tensor,
    /// The keys, described as Kᵀ (B, H, D, S_kv): a transposed view of the keys' memory,
    /// bound to the (B, H, S_kv, D) buffer.
    pub k: Tensor,
    /// The values (B, H, S_kv, D).
    pub v: Tensor,
    /// The result (B, H, S_q, D).
    pub o: Tensor,
    /// The statistics the backward reads, `f32` (B, H, S_q, 1): each row's log-sum-exp of the
    /// scaled, masked scores (training).
    pub stats: Option<Tensor>,
    /// The query sequence lengths, `i32` (B, 1, 1, 1) (padding mask), each in `0..=S_q`:
    /// bound with the unsafe [`VariantPack::sizes`](super::VariantPack::sizes).
    pub seq_len_q: Option<Tensor>,
    /// The key sequence lengths, `i32` (B, 1, 1, 1) (padding mask), each in `0..=S_kv`:
    /// bound with the unsafe [`VariantPack::sizes`](super::VariantPack::sizes).
    pub seq_len_kv: Option<Tensor>,
    /// The dropout's Philox seed, one `i64` (dropout).
    pub seed: Option<Tensor>,
    /// The dropout's Philox offset, one `i64` (dropout).
    pub offset: Option<Tensor>,
    /// The FP8 scaling tensors (FP8 only).
    pub fp8: Option<Fp8Scaling>,
}

/// The scaling tensors of an FP8 attention forward, each one `f32` (1, 1, 1, 1) in a buffer:
/// the descales undo the inputs' scaling, the scales set the outputs', the amaxes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fp8Scaling {
    /// Q's descale.
    pub descale_q: Tensor,
    /// K's descale.
    pub descale_k: Tensor,
    /// V's descale.
    pub descale_v: Tensor,
    /// The probabilities' descale (the inverse of `scale_s`).
    pub descale_s: Tensor,
    /// The probabilities' scale into FP8.
    pub scale_s: Tensor,
    /// O's scale into FP8.
    pub scale_o: Tensor,
    /// The probabilities' largest absolute value (written).
    pub amax_s: Tensor,
    /// O's largest absolute value before its scale (written).
    pub amax_o: Tensor,
}

impl Attention {
    /// Self-attention of `batch` sequences of `seq` tokens, `heads` heads of `head_dim`
    /// features, in `data_type`: no mask, no dropout, scale `1 / sqrt(head_dim)`, layout
    /// [`AttentionLayout::Bhsd`], training (the forward writes its statistics).
    pub fn new(data_type: DataType, batch: i64, heads: i64, seq: i64, head_dim: i64) -> Self {
        Self {
            data_type,
            dims: [batch, heads, seq, seq, head_dim],
            layout: AttentionLayout::Bhsd,
            causal: false,
            padding: false,
            dropout: None,
            scale: None,
            stats: true,
        }
    }

    /// The same with `seq_kv` keys and values (cross-attention).
    #[must_use]
    pub fn seq_kv(mut self, seq_kv: i64) -> Self {
        self.dims[3] = seq_kv;
        self
    }

    /// The same in `layout`.
    #[must_use]
    pub fn layout(mut self, layout: AttentionLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The same with (`true`) a causal mask: query `i` attends to keys `j <= i` (the diagonal
    /// aligned top-left).
    #[must_use]
    pub fn causal(mut self, causal: bool) -> Self {
        self.causal = causal;
        self
    }

    /// The same with (`true`) a padding mask: each sequence of the batch has its own query
    /// and key lengths (`i32` tensors `seq_len_q`, `seq_len_kv` of the graph, bound with the
    /// unsafe [`VariantPack::sizes`](super::VariantPack::sizes): each in `0..=S`); scores past
    /// them are masked, and rows of O, dQ, dK and dV past them are not computed.
    #[must_use]
    pub fn padding(mut self, padding: bool) -> Self {
        self.padding = padding;
        self
    }

    /// The same with dropout of probability `probability` on the attention weights (a
    /// Philox mask from a seed and an offset in buffers, the kept weights scaled by
    /// `1 / (1 - probability)`); 0 turns it off.
    #[must_use]
    pub fn dropout(mut self, probability: f64) -> Self {
        self.dropout = (probability != 0.0).then_some(probability);
        self
    }

    /// The same with the scores scaled by `scale` rather than `1 / sqrt(head_dim)`.
    #[must_use]
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The same as an inference forward: no statistics written.
    #[must_use]
    pub fn inference(mut self) -> Self {
        self.stats = false;
        self
    }

    /// The data type of Q, K, V, O and the gradients.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// The queries' dims (B, H, S_q, D).
    pub fn q_dims(&self) -> [i64; 4] {
        let [b, h, s_q, _, d] = self.dims;
        [b, h, s_q, d]
    }

    /// The keys' and values' dims (B, H, S_kv, D).
    pub fn kv_dims(&self) -> [i64; 4] {
        let [b, h, _, s_kv, d] = self.dims;
        [b, h, s_kv, d]
    }

    /// The scale of the scores.
    pub fn scale_value(&self) -> f32 {
        self.scale
            .unwrap_or_else(|| 1.0 / (self.dims[4] as f32).sqrt())
    }

    /// The dropout probability (0 without dropout).
    pub fn dropout_probability(&self) -> f64 {
        self.dropout.unwrap_or(0.0)
    }

    /// The layout.
    pub fn memory_layout(&self) -> AttentionLayout {
        self.layout
    }

    /// Whether the causal mask is on.
    pub fn is_causal(&self) -> bool {
        self.causal
    }

    /// Whether the padding mask is on.
    pub fn has_padding(&self) -> bool {
        self.padding
    }

    /// Refuses what cuDNN's fused attention cannot take, naming it.
    pub(crate) fn check(&self, what: &str) -> Result<()> {
        let refuse = |why: String| Err(Error::invalid_argument(format!("{what}: {why}")));
        if !matches!(
            self.data_type,
            DataType::F16 | DataType::BF16 | DataType::Fp8E4M3 | DataType::Fp8E5M2
        ) {
            return refuse(format!("runs in f16, bf16 or FP8, not {}", self.data_type));
        }
        if self.dims.iter().any(|&dim| dim < 1) {
            return refuse(format!("the dims {:?} are each at least 1", self.dims));
        }
        let [b, h, s_q, s_kv, d] = self.dims;
        let counted = [[b, h, s_q, d], [b, h, s_kv, d], [b, h, s_q, s_kv]]
            .iter()
            .all(|dims| {
                dims.iter()
                    .try_fold(1i64, |acc, &dim| acc.checked_mul(dim))
                    .is_some()
            });
        if !counted {
            return refuse(format!(
                "the dims {:?} hold more elements than an i64 counts",
                self.dims
            ));
        }
        if d % 8 != 0 || d > 256 {
            return refuse(format!(
                "a head dim of {d}: cuDNN's engines take a multiple of 8 up to 256"
            ));
        }
        if let Some(p) = self.dropout
            && !(0.0..1.0).contains(&p)
        {
            return refuse(format!("a dropout probability of {p} is not in [0, 1)"));
        }
        let scale = self.scale_value();
        if !scale.is_finite() {
            return refuse(format!("a scale of {scale} is not finite"));
        }
        Ok(())
    }

    /// The forward graph and its tensors. The graph is exactly cuDNN's fused flash attention
    /// forward pattern; it needs a GPU of compute capability 8.0 (9.0 and cuDNN 9.1 for FP8),
    /// checked when its plan is made.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a data type other than `f16`, `bf16` and FP8, a dim below
    /// 1, dims whose element counts overflow an `i64`, a head dim that is not a multiple of 8 up to 256, a dropout probability outside
    /// [0, 1), or a scale that is not finite.
    pub fn forward(&self) -> Result<(Graph, AttentionForward)> {
        self.check("an attention forward")?;
        let io = self.data_type;
        let mut graph = Graph::new();
        let q = self.input(&mut graph, self.q_dims())?;
        let k = self.transposed(&mut graph)?;
        let v = self.input(&mut graph, self.kv_dims())?;
        let fp8 = io.is_fp8();
        let f32_one = TensorDesc::packed(DataType::F32, &[1; 4]);
        let descales = if fp8 {
            let mut made = [q; 6];
            for slot in &mut made {
                *slot = graph.tensor(f32_one.clone())?;
            }
            Some(made)
        } else {
            None
        };
        let (lengths, overrides) = self.lengths(&mut graph)?;
        let s = graph.matmul_with(q, k, DataType::F32, overrides.qk)?;
        let mut last = self.scaled(&mut graph, s)?;
        if let Some([descale_q, descale_k, ..]) = descales {
            last = graph.pointwise(Pointwise::Mul, last, Some(descale_q))?;
            last = graph.pointwise(Pointwise::Mul, last, Some(descale_k))?;
        }
        last = Self::padding_mask(&mut graph, last, lengths)?;
        last = self.causal_mask(&mut graph, last)?;
        let (mut p, stats) = graph.softmax_chain(last, self.stats)?;
        let mut seeds = None;
        if let Some(probability) = self.dropout {
            let (mask, seed, offset) = self.dropout_mask(&mut graph, probability)?;
            p = graph.pointwise(Pointwise::Mul, p, Some(mask))?;
            let scale = graph.scalar(Scalar::f32((1.0 / (1.0 - probability)) as f32), 4)?;
            p = graph.pointwise(Pointwise::Mul, p, Some(scale))?;
            seeds = Some((seed, offset));
        }
        let mut amax_s = None;
        if let Some([.., scale_s, _]) = descales {
            amax_s = Some(graph.reduction(Reduce::AbsMax, p, &[1; 4])?);
            p = graph.pointwise(Pointwise::Mul, p, Some(scale_s))?;
        }
        graph.set_virtual_type(p, io)?;
        let mut o = graph.matmul_with(p, v, DataType::F32, overrides.pv)?;
        let mut scaling = None;
        if let (
            Some([descale_q, descale_k, descale_v, descale_s, scale_s, scale_o]),
            Some(amax_s),
        ) = (descales, amax_s)
        {
            o = graph.pointwise(Pointwise::Mul, o, Some(descale_s))?;
            o = graph.pointwise(Pointwise::Mul, o, Some(descale_v))?;
            let amax_o = graph.reduction(Reduce::AbsMax, o, &[1; 4])?;
            o = graph.pointwise(Pointwise::Mul, o, Some(scale_o))?;
            graph.output(amax_s, DataType::F32)?;
            graph.output(amax_o, DataType::F32)?;
            scaling = Some(Fp8Scaling {
                descale_q,
                descale_k,
                descale_v,
                descale_s,
                scale_s,
                scale_o,
                amax_s,
                amax_o,
            });
        }
        graph.output(o, io)?;
        graph.restride(o, &self.layout.strides(self.q_dims()))?;
        if let Some(stats) = stats {
            graph.output(stats, DataType::F32)?;
        }
        self.needs(&mut graph, fp8);
        graph.set_label("the attention forward");
        Ok((
            graph,
            AttentionForward {
                q,
                k,
                v,
                o,
                stats,
                seq_len_q: lengths.map(|(q, _)| q),
                seq_len_kv: lengths.map(|(_, kv)| kv),
                seed: seeds.map(|(seed, _)| seed),
                offset: seeds.map(|(_, offset)| offset),
                fp8: scaling,
            },
        ))
    }

    /// Records what the forward needs of cuDNN and the GPU.
    fn needs(&self, graph: &mut Graph, fp8: bool) {
        let needs = graph.needs_mut();
        if fp8 {
            needs.capability_at_least((9, 0), "FP8 attention runs on Hopper (sm_90) and newer");
            needs.cudnn_at_least(90100, "FP8 attention forward needs cuDNN 9.1.0 or newer");
            needs.cudnn_not(91000..=91000, "cuDNN 9.10.0 does not run FP8 attention");
        } else {
            needs.capability_at_least((8, 0), "attention runs on Ampere (sm_80) and newer");
        }
    }

    /// A (B, H, S, D) input in the layout.
    pub(crate) fn input(&self, graph: &mut Graph, dims: [i64; 4]) -> Result<Tensor> {
        let strides = self.layout.strides(dims);
        graph.tensor(TensorDesc::new(self.data_type, &dims, &strides))
    }

    /// The keys as Kᵀ (B, H, D, S_kv): K's memory with its last two dims and strides swapped.
    pub(crate) fn transposed(&self, graph: &mut Graph) -> Result<Tensor> {
        let dims = self.kv_dims();
        let [sb, sh, ss, sd] = self.layout.strides(dims);
        let [b, h, s, d] = dims;
        graph.tensor(TensorDesc::new(
            self.data_type,
            &[b, h, d, s],
            &[sb, sh, sd, ss],
        ))
    }

    /// The sequence length tensors of the padding mask, and the matmuls' overrides.
    pub(crate) fn lengths(
        &self,
        graph: &mut Graph,
    ) -> Result<(Option<(Tensor, Tensor)>, Overrides)> {
        if !self.padding {
            return Ok((None, Overrides::default()));
        }
        let desc = TensorDesc::packed(DataType::I32, &[self.dims[0], 1, 1, 1]);
        let (q, kv) = (graph.tensor(desc.clone())?, graph.tensor(desc)?);
        let overrides = Overrides {
            qk: MatmulOverrides {
                m: Some(q),
                n: Some(kv),
                k: None,
            },
            pv: MatmulOverrides {
                m: Some(q),
                n: None,
                k: Some(kv),
            },
        };
        Ok((Some((q, kv)), overrides))
    }

    /// `s` times the scale (a constant passed by value).
    fn scaled(&self, graph: &mut Graph, s: Tensor) -> Result<Tensor> {
        let scale = graph.scalar(Scalar::f32(self.scale_value()), 4)?;
        graph.pointwise(Pointwise::Mul, s, Some(scale))
    }

    /// The padding mask on the scores `s`, if the lengths are given: scores past either
    /// length are the lowest `f32`.
    pub(crate) fn padding_mask(
        graph: &mut Graph,
        s: Tensor,
        lengths: Option<(Tensor, Tensor)>,
    ) -> Result<Tensor> {
        let Some((seq_q, seq_kv)) = lengths else {
            return Ok(s);
        };
        let row = graph.pointwise(Pointwise::GenIndex(2), s, None)?;
        let col = graph.pointwise(Pointwise::GenIndex(3), s, None)?;
        let row_in = graph.pointwise(Pointwise::CmpLt, row, Some(seq_q))?;
        let col_in = graph.pointwise(Pointwise::CmpLt, col, Some(seq_kv))?;
        let inside = graph.pointwise(Pointwise::LogicalAnd, row_in, Some(col_in))?;
        let fill = graph.scalar(Scalar::f32(f32::MIN), 4)?;
        graph.select(s, fill, inside)
    }

    /// The causal mask on the scores `s`, if on: scores of keys after their query are the
    /// lowest `f32`.
    pub(crate) fn causal_mask(&self, graph: &mut Graph, s: Tensor) -> Result<Tensor> {
        if !self.causal {
            return Ok(s);
        }
        let row = graph.pointwise(Pointwise::GenIndex(2), s, None)?;
        let col = graph.pointwise(Pointwise::GenIndex(3), s, None)?;
        let below = graph.pointwise(Pointwise::CmpGe, row, Some(col))?;
        let fill = graph.scalar(Scalar::f32(f32::MIN), 4)?;
        graph.select(s, fill, below)
    }

    /// The dropout's keep mask of the scores' dims, and its seed and offset tensors.
    pub(crate) fn dropout_mask(
        &self,
        graph: &mut Graph,
        probability: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let one = TensorDesc::packed(DataType::I64, &[1; 4]);
        let (seed, offset) = (graph.tensor(one.clone())?, graph.tensor(one)?);
        let [b, h, s_q, s_kv, _] = self.dims;
        let mask = graph.bernoulli(&[b, h, s_q, s_kv], 1.0 - probability, seed, offset)?;
        Ok((mask, seed, offset))
    }
}

/// The sequence-length overrides of the forward's two matmuls (and, as `qk` and `pv` shapes,
/// the backward's).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Overrides {
    /// Q·Kᵀ: M is the query length, N the key length.
    pub(crate) qk: MatmulOverrides,
    /// P·V: M is the query length, K the key length.
    pub(crate) pv: MatmulOverrides,
}

#[cfg(test)]
mod tests {
    use super::{Attention, AttentionLayout};
    use crate::dnn::DataType;
    use cuda_safe::Error;

    #[test]
    fn dims_whose_counts_overflow_are_refused_and_strides_saturate() {
        let huge = Attention::new(DataType::BF16, i64::MAX / 2, 4, 128, 64);
        assert!(matches!(huge.forward(), Err(Error::InvalidArgument(_))));
        assert!(matches!(huge.backward(), Err(Error::InvalidArgument(_))));
        let strides = AttentionLayout::Bhsd.strides([1, i64::MAX, 2, 8]);
        assert_eq!(strides, [i64::MAX, 16, 8, 1]);
        let strides = AttentionLayout::Bshd.strides([1, 2, i64::MAX, 8]);
        assert_eq!(strides, [i64::MAX, 8, 16, 1]);
    }
}
