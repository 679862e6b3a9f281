//! CPU references of the attention graphs, in f64 on logical (B, H, S, D) arrays: the forward
//! (scaled scores, the causal and padding masks, the softmax and its statistics, dropout with
//! the stub's generator) and the backward's gradients from the textbook formulas.

/// One attention problem.
pub(crate) struct Problem {
    pub(crate) b: usize,
    pub(crate) h: usize,
    pub(crate) s_q: usize,
    pub(crate) s_kv: usize,
    pub(crate) d: usize,
    pub(crate) scale: f64,
    pub(crate) causal: bool,
    /// Per sequence of the batch: the query and key lengths (padding mask).
    pub(crate) lengths: Option<(Vec<i32>, Vec<i32>)>,
    /// The dropout probability, seed and offset.
    pub(crate) dropout: Option<(f64, i64, i64)>,
}

/// The stub cuDNN's Bernoulli draw: splitmix64's finalizer over the seed, the offset and the
/// element (libcudnn_ops_stub.c), as a uniform number in [0, 1).
fn uniform(seed: i64, offset: i64, element: u64) -> f64 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let key = mix((seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let drawn = mix(key.wrapping_add(offset as u64).wrapping_add(element));
    (drawn >> 11) as f64 / (1u64 << 53) as f64
}

impl Problem {
    /// Whether query `i` of sequence `b` sees key `j`.
    fn sees(&self, b: usize, i: usize, j: usize) -> bool {
        let inside = self
            .lengths
            .as_ref()
            .is_none_or(|(q, kv)| i < q[b] as usize && j < kv[b] as usize);
        inside && (!self.causal || j <= i)
    }

    /// Whether row `i` of sequence `b` holds a result (its query is inside the length).
    pub(crate) fn row_counts(&self, b: usize, i: usize) -> bool {
        self.lengths.as_ref().is_none_or(|(q, _)| i < q[b] as usize)
    }

    /// Whether key `j` of sequence `b` holds a result.
    pub(crate) fn key_counts(&self, b: usize, j: usize) -> bool {
        self.lengths
            .as_ref()
            .is_none_or(|(_, kv)| j < kv[b] as usize)
    }

    /// The dropout's kept-weight factor of score (b, h, i, j): `mask / (1 - p)`, or 1.
    fn kept(&self, b: usize, h: usize, i: usize, j: usize) -> f64 {
        let Some((p, seed, offset)) = self.dropout else {
            return 1.0;
        };
        let element = (((b * self.h + h) * self.s_q + i) * self.s_kv + j) as u64;
        if uniform(seed, offset, element) < 1.0 - p {
            1.0 / (1.0 - p)
        } else {
            0.0
        }
    }

    fn at(&self, s: usize, b: usize, h: usize, i: usize) -> usize {
        ((b * self.h + h) * s + i) * self.d
    }

    /// The softmax of row (b, h, i): the weights and the statistics (log-sum-exp).
    fn weights(&self, q: &[f64], k: &[f64], b: usize, h: usize, i: usize) -> (Vec<f64>, f64) {
        let scores: Vec<Option<f64>> = (0..self.s_kv)
            .map(|j| {
                self.sees(b, i, j).then(|| {
                    let (qi, kj) = (self.at(self.s_q, b, h, i), self.at(self.s_kv, b, h, j));
                    self.scale * (0..self.d).map(|e| q[qi + e] * k[kj + e]).sum::<f64>()
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

    /// O and the statistics of the forward.
    pub(crate) fn forward(&self, q: &[f64], k: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut o = vec![0.0; q.len()];
        let mut stats = vec![0.0; self.b * self.h * self.s_q];
        for (b, h, i) in self.rows() {
            let (p, lse) = self.weights(q, k, b, h, i);
            stats[(b * self.h + h) * self.s_q + i] = lse;
            let oi = self.at(self.s_q, b, h, i);
            for (j, pj) in p.iter().enumerate() {
                let weight = pj * self.kept(b, h, i, j);
                let vj = self.at(self.s_kv, b, h, j);
                for e in 0..self.d {
                    o[oi + e] += weight * v[vj + e];
                }
            }
        }
        (o, stats)
    }

    /// dQ, dK and dV from the forward's inputs, its output `o` and O's gradient `d_o`.
    pub(crate) fn backward(
        &self,
        [q, k, v, o, d_o]: [&[f64]; 5],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut dq, mut dk, mut dv) = (vec![0.0; q.len()], vec![0.0; k.len()], vec![0.0; v.len()]);
        for (b, h, i) in self.rows() {
            let (p, _) = self.weights(q, k, b, h, i);
            let oi = self.at(self.s_q, b, h, i);
            let rowsum: f64 = (0..self.d).map(|e| d_o[oi + e] * o[oi + e]).sum();
            for (j, pj) in p.iter().enumerate() {
                let kept = self.kept(b, h, i, j);
                let kj = self.at(self.s_kv, b, h, j);
                let d_p: f64 = (0..self.d).map(|e| d_o[oi + e] * v[kj + e]).sum();
                let ds = pj * (d_p * kept - rowsum) * self.scale;
                for e in 0..self.d {
                    dv[kj + e] += pj * kept * d_o[oi + e];
                    dq[oi + e] += ds * k[kj + e];
                    dk[kj + e] += ds * q[oi + e];
                }
            }
        }
        (dq, dk, dv)
    }

    /// Every (b, h, i) whose row holds a result.
    fn rows(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (0..self.b)
            .flat_map(move |b| (0..self.h).flat_map(move |h| (0..self.s_q).map(move |i| (b, h, i))))
            .filter(|&(b, _, i)| self.row_counts(b, i))
    }
}
