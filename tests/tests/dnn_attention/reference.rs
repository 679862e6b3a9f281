//! The CPU reference of attention in f64 on logical (B, H, S, D) arrays: the forward (scaled
//! scores, causal and padding masks, softmax, log-sum-exp statistics) and the backward's
//! gradients by the textbook formulas; and the conversions between logical arrays and a
//! layout's memory.

use cuda_safe_libs::dnn::{Attention, AttentionLayout};

/// One attention problem without dropout.
pub(crate) struct Problem {
    pub(crate) dims: [usize; 5],
    pub(crate) scale: f64,
    pub(crate) causal: bool,
    /// Per sequence of the batch, the query and key lengths (padding mask).
    pub(crate) lengths: Option<(Vec<i32>, Vec<i32>)>,
}

impl Problem {
    /// The problem of `attention` with `lengths`.
    pub(crate) fn of(attention: &Attention, lengths: Option<(Vec<i32>, Vec<i32>)>) -> Self {
        let [b, h, s_q, d] = attention.q_dims().map(|dim| dim as usize);
        let s_kv = attention.kv_dims()[2] as usize;
        Self {
            dims: [b, h, s_q, s_kv, d],
            scale: f64::from(attention.scale_value()),
            causal: attention.is_causal(),
            lengths,
        }
    }

    fn sees(&self, b: usize, i: usize, j: usize) -> bool {
        let inside = self
            .lengths
            .as_ref()
            .is_none_or(|(q, kv)| i < q[b] as usize && j < kv[b] as usize);
        inside && (!self.causal || j <= i)
    }

    /// Whether query row `i` of sequence `b` holds a result.
    pub(crate) fn row_counts(&self, b: usize, i: usize) -> bool {
        self.lengths.as_ref().is_none_or(|(q, _)| i < q[b] as usize)
    }

    /// Whether key row `j` of sequence `b` holds a result.
    pub(crate) fn key_counts(&self, b: usize, j: usize) -> bool {
        self.lengths
            .as_ref()
            .is_none_or(|(_, kv)| j < kv[b] as usize)
    }

    fn at(&self, s: usize, b: usize, h: usize, i: usize) -> usize {
        let [_, heads, .., d] = self.dims;
        ((b * heads + h) * s + i) * d
    }

    /// The softmax weights of row (b, h, i) and its log-sum-exp.
    fn weights(&self, q: &[f64], k: &[f64], b: usize, h: usize, i: usize) -> (Vec<f64>, f64) {
        let [_, _, s_q, s_kv, d] = self.dims;
        let scores: Vec<Option<f64>> = (0..s_kv)
            .map(|j| {
                self.sees(b, i, j).then(|| {
                    let (qi, kj) = (self.at(s_q, b, h, i), self.at(s_kv, b, h, j));
                    self.scale * (0..d).map(|e| q[qi + e] * k[kj + e]).sum::<f64>()
                })
            })
            .collect();
        let max = scores.iter().flatten().copied().fold(f64::MIN, f64::max);
        let exps: Vec<f64> = scores
            .iter()
            .map(|s| s.map_or(0.0, |s| (s - max).exp()))
            .collect();
        let sum: f64 = exps.iter().sum();
        (exps.iter().map(|e| e / sum).collect(), max + sum.ln())
    }

    /// Every (b, h, i) whose row holds a result.
    fn rows(&self) -> Vec<(usize, usize, usize)> {
        let [b, h, s_q, ..] = self.dims;
        let all = (0..b).flat_map(|b| (0..h).flat_map(move |h| (0..s_q).map(move |i| (b, h, i))));
        all.filter(|&(b, _, i)| self.row_counts(b, i)).collect()
    }

    /// O and the statistics.
    pub(crate) fn forward(&self, q: &[f64], k: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let [_, heads, s_q, s_kv, d] = self.dims;
        let (mut o, mut stats) = (vec![0.0; q.len()], vec![0.0; q.len() / d]);
        for (b, h, i) in self.rows() {
            let (p, lse) = self.weights(q, k, b, h, i);
            stats[(b * heads + h) * s_q + i] = lse;
            let oi = self.at(s_q, b, h, i);
            for (j, pj) in p.iter().enumerate() {
                let vj = self.at(s_kv, b, h, j);
                for e in 0..d {
                    o[oi + e] += pj * v[vj + e];
                }
            }
        }
        (o, stats)
    }

    /// dQ, dK and dV from the inputs, the forward's output `o` and O's gradient `d_o`.
    pub(crate) fn backward(&self, [q, k, v, o, d_o]: [&[f64]; 5]) -> [Vec<f64>; 3] {
        let [.., s_q, s_kv, d] = self.dims;
        let (mut dq, mut dk, mut dv) = (vec![0.0; q.len()], vec![0.0; k.len()], vec![0.0; v.len()]);
        for (b, h, i) in self.rows() {
            let (p, _) = self.weights(q, k, b, h, i);
            let oi = self.at(s_q, b, h, i);
            let rowsum: f64 = (0..d).map(|e| d_o[oi + e] * o[oi + e]).sum();
            for (j, pj) in p.iter().enumerate() {
                let kj = self.at(s_kv, b, h, j);
                let d_p: f64 = (0..d).map(|e| d_o[oi + e] * v[kj + e]).sum();
                let ds = pj * (d_p - rowsum) * self.scale;
                for e in 0..d {
                    dv[kj + e] += pj * d_o[oi + e];
                    dq[oi + e] += ds * k[kj + e];
                    dk[kj + e] += ds * q[oi + e];
                }
            }
        }
        [dq, dk, dv]
    }
}

/// The memory index of logical element `flat` of `dims` in `layout`.
fn at(mut flat: usize, dims: [i64; 4], layout: AttentionLayout) -> usize {
    let strides = layout.strides(dims);
    let mut index = 0;
    for axis in (0..4).rev() {
        let dim = dims[axis] as usize;
        index += (flat % dim) * strides[axis] as usize;
        flat /= dim;
    }
    index
}

/// The memory of logical `values` in `layout`.
pub(crate) fn to_memory<T: Copy + Default>(
    values: &[f64],
    dims: [i64; 4],
    layout: AttentionLayout,
    convert: impl Fn(f64) -> T,
) -> Vec<T> {
    let mut memory = vec![T::default(); values.len()];
    for (flat, &value) in values.iter().enumerate() {
        memory[at(flat, dims, layout)] = convert(value);
    }
    memory
}

/// Logical values from `memory` in `layout`.
pub(crate) fn from_memory<T: Copy>(
    memory: &[T],
    dims: [i64; 4],
    layout: AttentionLayout,
    convert: impl Fn(T) -> f64,
) -> Vec<f64> {
    (0..memory.len())
        .map(|flat| convert(memory[at(flat, dims, layout)]))
        .collect()
}

/// Checks `got` against `want` on the elements `counts` keeps: within `tol` of the largest
/// |want| plus 1 (the output's rounding and the kernels' order of sums dominate).
pub(crate) fn check(
    what: &str,
    got: &[f64],
    want: &[f64],
    tol: f64,
    counts: impl Fn(usize) -> bool,
) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())) + 1.0;
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        if counts(index) {
            assert!(
                (g - w).abs() <= tol * scale,
                "{what}: element {index}: got {g}, want {w} (scale {scale})"
            );
        }
    }
}
