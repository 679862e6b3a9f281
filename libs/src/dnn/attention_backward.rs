//! The attention backward graph ([`Attention::backward`]), node for node the one cuDNN's C++
//! frontend builds for the fused flash attention backward engines:
//!
//! ```text
//! Σ = rowsum(dO∘O)·(1-p)                         (f32, in the workspace)
//! S = Q·Kᵀ·scale -> padding mask -> S - stats -> causal mask -> E = exp(S)
//! P = E∘mask/(1-p);  dV = Pᵀ·dO
//! dP = dO·Vᵀ∘mask;  dS = (dP - Σ)∘E/(1-p)·scale;  dK = dSᵀ·Q
//! dQ = identity(dS·K)                            (the f32 product in the workspace)
//! ```
//!
//! Vᵀ and Kᵀ are transposed views of V's and K's memory; Pᵀ, dSᵀ and K are transposed views of
//! the intermediates (cuDNN's reshape operation).

use super::attention::Attention;
use super::graph::Graph;
use super::op::MatmulOverrides;
use super::ops::{Pointwise, Reduce};
use super::scalar::Scalar;
use super::tensor::{DataType, Tensor, TensorDesc};
use cuda_safe::{Error, Result};

/// The tensors of an attention backward graph ([`Attention::backward`]): bind a buffer to each
/// (those that are `Some` included) in the variant pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttentionBackward {
    /// The forward's queries (B, H, S_q, D).
    pub q: Tensor,
    /// The forward's keys, described as Kᵀ (B, H, D, S_kv), bound to the (B, H, S_kv, D)
    /// buffer.
    pub k: Tensor,
    /// The forward's values, described as Vᵀ (B, H, D, S_kv), bound to the (B, H, S_kv, D)
    /// buffer.
    pub v: Tensor,
    /// The forward's result (B, H, S_q, D).
    pub o: Tensor,
    /// O's gradient (B, H, S_q, D).
    pub d_o: Tensor,
    /// The forward's statistics, `f32` (B, H, S_q, 1).
    pub stats: Tensor,
    /// Q's gradient (written).
    pub dq: Tensor,
    /// K's gradient (written), (B, H, S_kv, D).
    pub dk: Tensor,
    /// V's gradient (written), (B, H, S_kv, D).
    pub dv: Tensor,
    /// The query sequence lengths, `i32` (B, 1, 1, 1) (padding mask), each in `0..=S_q`:
    /// bound with the unsafe [`VariantPack::sizes`](super::VariantPack::sizes).
    pub seq_len_q: Option<Tensor>,
    /// The key sequence lengths, `i32` (B, 1, 1, 1) (padding mask), each in `0..=S_kv`:
    /// bound with the unsafe [`VariantPack::sizes`](super::VariantPack::sizes).
    pub seq_len_kv: Option<Tensor>,
    /// The forward's dropout seed, one `i64` (dropout).
    pub seed: Option<Tensor>,
    /// The forward's dropout offset, one `i64` (dropout).
    pub offset: Option<Tensor>,
}

impl Attention {
    /// The backward graph and its tensors, for a forward of the same options (its masks, scale
    /// and dropout, the same seed and offset bound). The graph is exactly cuDNN's fused flash
    /// attention backward pattern; two `f32` intermediates live in the handle's workspace.
    /// Checked when its plan is made: a GPU of compute capability 8.0; cuDNN 9.6.0 or newer
    /// (earlier releases leave the dQ accumulator to the caller) but not 9.10.0 or 9.10.1
    /// (known wrong gradients); with a padding mask, cuDNN 9.10.2; without one, a key length
    /// that is a multiple of 128 up to cuDNN 9.15 (earlier releases need the padding mask
    /// otherwise: give it with every length the full one).
    ///
    /// # Errors
    ///
    /// As [`forward`](Self::forward), and [`Error::InvalidArgument`] for FP8 (only the forward
    /// runs in FP8).
    pub fn backward(&self) -> Result<(Graph, AttentionBackward)> {
        self.check("an attention backward")?;
        let io = self.data_type();
        if io.is_fp8() {
            return Err(Error::invalid_argument(
                "an attention backward runs in f16 or bf16: cuDNN's FP8 backward needs the \
                 forward's FP8 scaling tensors, which this builder does not take",
            ));
        }
        let [b, h, s_q, _] = self.q_dims();
        let s_kv = self.kv_dims()[2];
        let probability = self.dropout_probability();
        let mut graph = Graph::new();
        let q = self.input(&mut graph, self.q_dims())?;
        let k = self.transposed(&mut graph)?;
        let v = self.transposed(&mut graph)?;
        let o = self.input(&mut graph, self.q_dims())?;
        let d_o = self.input(&mut graph, self.q_dims())?;
        let rows = [b, h, s_q, 1];
        let stats = graph.tensor(TensorDesc::packed(DataType::F32, &rows))?;
        let (lengths, overrides) = self.lengths(&mut graph)?;
        let (seq_q, seq_kv) = (lengths.map(|(q, _)| q), lengths.map(|(_, kv)| kv));
        let mut dropout = None;
        if probability > 0.0 {
            let (mask, seed, offset) = self.dropout_mask(&mut graph, probability)?;
            let scale = graph.scalar(Scalar::f32((1.0 / (1.0 - probability)) as f32), 4)?;
            dropout = Some((mask, scale, seed, offset));
        }
        let product = graph.pointwise(Pointwise::Mul, d_o, Some(o))?;
        let rowsum = graph.reduction(Reduce::Add, product, &rows)?;
        let keep = graph.scalar(Scalar::f32((1.0 - probability) as f32), 4)?;
        let softmax_sum = graph.pointwise(Pointwise::Mul, rowsum, Some(keep))?;
        graph.in_workspace(softmax_sum, DataType::F32)?;

        let s = graph.matmul_with(q, k, DataType::F32, overrides.qk)?;
        let scale = graph.scalar(Scalar::f32(self.scale_value()), 4)?;
        let mut last = graph.pointwise(Pointwise::Mul, s, Some(scale))?;
        last = Self::padding_mask(&mut graph, last, lengths)?;
        last = graph.pointwise(Pointwise::Sub, last, Some(stats))?;
        last = self.causal_mask(&mut graph, last)?;
        let exp_s = graph.pointwise(Pointwise::Exp, last, None)?;
        let mut p = exp_s;
        if let Some((mask, dropout_scale, ..)) = dropout {
            p = graph.pointwise(Pointwise::Mul, p, Some(mask))?;
            p = graph.pointwise(Pointwise::Mul, p, Some(dropout_scale))?;
        }
        let by_keys = |m: Option<Tensor>, k: Option<Tensor>| MatmulOverrides { m, n: None, k };
        let p_t = graph.transpose(p, io)?;
        let dv = graph.matmul_with(p_t, d_o, DataType::F32, by_keys(seq_kv, seq_q))?;

        let mut ds = graph.matmul_with(d_o, v, DataType::F32, overrides.qk)?;
        if let Some((mask, ..)) = dropout {
            ds = graph.pointwise(Pointwise::Mul, ds, Some(mask))?;
        }
        ds = graph.pointwise(Pointwise::Sub, ds, Some(softmax_sum))?;
        ds = graph.pointwise(Pointwise::Mul, ds, Some(exp_s))?;
        if let Some((_, dropout_scale, ..)) = dropout {
            ds = graph.pointwise(Pointwise::Mul, ds, Some(dropout_scale))?;
        }
        ds = graph.pointwise(Pointwise::Mul, ds, Some(scale))?;
        let ds_t = graph.transpose(ds, io)?;
        let dk = graph.matmul_with(ds_t, q, DataType::F32, by_keys(seq_kv, seq_q))?;
        let keys = graph.transpose(k, DataType::F32)?;
        let dq_accum = graph.matmul_with(ds, keys, DataType::F32, by_keys(seq_q, seq_kv))?;
        graph.in_workspace(dq_accum, DataType::F32)?;
        let dq = graph.pointwise(Pointwise::Identity, dq_accum, None)?;
        for (gradient, dims) in [
            (dq, self.q_dims()),
            (dk, self.kv_dims()),
            (dv, self.kv_dims()),
        ] {
            graph.output(gradient, io)?;
            graph.restride(gradient, &self.memory_layout().strides(dims))?;
        }
        self.backward_needs(&mut graph, s_kv);
        graph.set_label("the attention backward");
        Ok((
            graph,
            AttentionBackward {
                q,
                k,
                v,
                o,
                d_o,
                stats,
                dq,
                dk,
                dv,
                seq_len_q: seq_q,
                seq_len_kv: seq_kv,
                seed: dropout.map(|(.., seed, _)| seed),
                offset: dropout.map(|(.., offset)| offset),
            },
        ))
    }

    /// Records what the backward needs of cuDNN and the GPU.
    fn backward_needs(&self, graph: &mut Graph, s_kv: i64) {
        let needs = graph.needs_mut();
        needs.capability_at_least((8, 0), "attention runs on Ampere (sm_80) and newer");
        needs.cudnn_at_least(
            90600,
            "an attention backward needs cuDNN 9.6.0 or newer (earlier releases leave the dQ \
             accumulator's zeroing to the caller)",
        );
        needs.cudnn_not(
            91000..=91001,
            "cuDNN 9.10.0 and 9.10.1 compute attention gradients wrongly: use 9.10.2 or newer",
        );
        if self.has_padding() {
            needs.cudnn_at_least(
                91000,
                "an attention backward with a padding mask needs cuDNN 9.10.2 or newer",
            );
        } else if s_kv % 128 != 0 {
            needs.cudnn_not(
                0..=91599,
                "an attention backward whose key length is not a multiple of 128 needs the \
                 padding mask up to cuDNN 9.15 (Attention::padding, every length the full one)",
            );
        }
    }
}
