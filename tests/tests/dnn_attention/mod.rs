//! Scaled-dot-product attention through cuDNN's fused flash attention graphs on a real GPU
//! (feature `dnn`): the forward and backward in f16 and bf16 against a CPU reference in f64
//! ([`reference`]) from the inputs as the GPU holds them, unmasked, causal, with a padding mask
//! and in both layouts ([`forward`], [`backward`]); dropout drawing one mask for a seed in the
//! forward and the backward, its kept fraction `1 - p` ([`dropout`]); FP8 where the GPU runs it,
//! a typed refusal elsewhere. Tolerance: a fraction of the largest |value| of each output (bf16
//! 4e-2, f16 1e-2; the probabilities are rounded to the inputs' type before P·V).

mod backward;
mod dropout;
mod forward;
mod reference;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::dnn::{
    Attention, AttentionForward, DataType, Dnn, DnnElement, Graph, VariantPack,
};
use half::{bf16, f16};

use reference::{from_memory, to_memory};

pub(crate) struct Setup {
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
    pub(crate) dnn: Dnn,
}

pub(crate) fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let dnn = Dnn::new(&stream).unwrap();
    Setup { stream, pool, dnn }
}

/// An element type of the tests: its data type, conversions and tolerance.
pub(crate) trait El: DnnElement + Default {
    const TYPE: DataType;
    const TOL: f64;
    fn of(value: f64) -> Self;
    fn get(self) -> f64;
}

impl El for f16 {
    const TYPE: DataType = DataType::F16;
    const TOL: f64 = 1e-2;
    fn of(value: f64) -> Self {
        f16::from_f64(value)
    }
    fn get(self) -> f64 {
        self.to_f64()
    }
}

impl El for bf16 {
    const TYPE: DataType = DataType::BF16;
    const TOL: f64 = 4e-2;
    fn of(value: f64) -> Self {
        bf16::from_f64(value)
    }
    fn get(self) -> f64 {
        self.to_f64()
    }
}

/// `n` multiples of 1/64 in [-1, 1) from `seed` (xorshift): exact in f16 and bf16.
pub(crate) fn exact(n: usize, mut seed: u64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 11) % 128) as f64 / 64.0 - 1.0
        })
        .collect()
}

impl Setup {
    /// Logical `values` uploaded as `T` in `attention`'s layout.
    pub(crate) fn upload<T: El>(
        &self,
        attention: &Attention,
        values: &[f64],
        dims: [i64; 4],
    ) -> Buffer {
        let memory = to_memory(values, dims, attention.memory_layout(), T::of);
        self.pool.allocate_from_host(&memory, &self.stream).unwrap()
    }

    /// Logical values of a `T` buffer in `attention`'s layout.
    pub(crate) fn read<T: El>(
        &self,
        attention: &Attention,
        buffer: &Buffer,
        dims: [i64; 4],
    ) -> Vec<f64> {
        let memory = buffer.to_vec::<T>().unwrap();
        from_memory(&memory, dims, attention.memory_layout(), T::get)
    }

    /// Runs the forward of `attention` on logical `q`, `k`, `v` (with the masks' `lengths` and
    /// the dropout's `seeds` bound where the graph has them): O and the statistics, logical.
    pub(crate) fn forward<T: El>(
        &mut self,
        attention: &Attention,
        [q, k, v]: [&[f64]; 3],
        lengths: Option<&(Vec<i32>, Vec<i32>)>,
        seeds: (i64, i64),
    ) -> (Vec<f64>, Vec<f64>) {
        let (graph, io): (Graph, AttentionForward) = attention.forward().unwrap();
        let (qd, kd) = (attention.q_dims(), attention.kv_dims());
        let (qb, kb, vb) = (
            self.upload::<T>(attention, q, qd),
            self.upload::<T>(attention, k, kd),
            self.upload::<T>(attention, v, kd),
        );
        let mut o = self
            .pool
            .allocate_zeroed::<T>(q.len(), &self.stream)
            .unwrap();
        let mut stats = self
            .pool
            .allocate_zeroed::<f32>(q.len() / qd[3] as usize, &self.stream)
            .unwrap();
        let extras = self.extras(lengths, seeds);
        let mut pack = VariantPack::new();
        pack.input::<T>(io.q, &qb)
            .unwrap()
            .input::<T>(io.k, &kb)
            .unwrap();
        pack.input::<T>(io.v, &vb)
            .unwrap()
            .output::<T>(io.o, &mut o)
            .unwrap();
        if let Some(tensor) = io.stats {
            pack.output::<f32>(tensor, &mut stats).unwrap();
        }
        bind_extras(
            &mut pack,
            &extras,
            io.seq_len_q.zip(io.seq_len_kv),
            io.seed.zip(io.offset),
        );
        self.dnn.execute(&graph, &pack).unwrap();
        drop(pack);
        let stats = stats
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect();
        (self.read::<T>(attention, &o, qd), stats)
    }

    /// The lengths' and seeds' buffers.
    pub(crate) fn extras(
        &self,
        lengths: Option<&(Vec<i32>, Vec<i32>)>,
        (seed, offset): (i64, i64),
    ) -> Extras {
        let up = |values: &[i32]| self.pool.allocate_from_host(values, &self.stream).unwrap();
        let one = |value: i64| {
            self.pool
                .allocate_from_host(&[value], &self.stream)
                .unwrap()
        };
        Extras {
            lengths: lengths.map(|(q, kv)| (up(q), up(kv))),
            seeds: (one(seed), one(offset)),
        }
    }
}

/// The buffers of the masks' lengths and of the dropout's seed and offset.
pub(crate) struct Extras {
    lengths: Option<(Buffer, Buffer)>,
    seeds: (Buffer, Buffer),
}

type Pair = (cuda_safe_libs::dnn::Tensor, cuda_safe_libs::dnn::Tensor);

/// Binds the lengths and seeds the graph has.
pub(crate) fn bind_extras<'a>(
    pack: &mut VariantPack<'a>,
    extras: &'a Extras,
    lengths: Option<Pair>,
    seeds: Option<Pair>,
) {
    if let (Some((tq, tkv)), Some((q, kv))) = (lengths, &extras.lengths) {
        // SAFETY: the tests' lengths are each within their sequence's dims.
        unsafe {
            pack.sizes::<i32>(tq, q)
                .unwrap()
                .sizes::<i32>(tkv, kv)
                .unwrap();
        }
    }
    if let Some((ts, to)) = seeds {
        pack.input::<i64>(ts, &extras.seeds.0)
            .unwrap()
            .input::<i64>(to, &extras.seeds.1)
            .unwrap();
    }
}

pub(crate) const FILE: GpuFile = gpu_file![
    forward::f16_forward_matches_the_cpu_unmasked_causal_and_padded,
    forward::bf16_forward_matches_the_cpu_in_both_layouts,
    forward::fp8_forward_runs_on_hopper_or_is_refused_typed,
    forward::a_captured_forward_replays_on_new_inputs,
    backward::f16_backward_matches_the_cpu,
    backward::bf16_backward_matches_the_cpu_causal_and_padded,
    dropout::dropout_keeps_one_minus_p_and_the_backward_draws_the_forwards_mask,
];
