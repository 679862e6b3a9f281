//! Dropout on the GPU: with Q = K = 0 every weight is 1 / S_kv, so with V's first feature all
//! ones a row of O counts the keys the mask kept (`count / (S_kv (1 - p))`), and with dO's first
//! feature all ones a row of dV counts the queries that kept a key. The kept fraction is
//! `1 - p` within four standard deviations; a seed draws one mask, in the forward and the
//! backward alike (the rows' and the columns' counts add up to the same total per head);
//! another seed draws another.

use cuda_safe_libs::dnn::{Attention, DataType, VariantPack};
use half::f16;

use super::{Setup, bind_extras, exact, setup};

const P: f64 = 0.25;
const S: usize = 128;
const D: usize = 64;
const HEADS: usize = 4;

/// `values` with their first feature set to one, every row.
fn first_feature_ones(mut values: Vec<f64>) -> Vec<f64> {
    values.iter_mut().step_by(D).for_each(|x| *x = 1.0);
    values
}

/// The integer `x * scale` must be, within the output's rounding.
fn count(x: f64, scale: f64) -> f64 {
    let n = x * scale;
    assert!(
        (n - n.round()).abs() < 0.3,
        "{x} is not a count of 1/{scale}"
    );
    n.round()
}

/// The per-head totals of the first feature's counts of `rows` (S rows of D per head).
fn totals(rows: &[f64]) -> Vec<f64> {
    let scale = S as f64 * (1.0 - P);
    rows.chunks(S * D)
        .map(|head| head.iter().step_by(D).map(|&x| count(x, scale)).sum())
        .collect()
}

fn forward(
    s: &mut Setup,
    attention: &Attention,
    v: &[f64],
    seeds: (i64, i64),
) -> (Vec<f64>, Vec<f64>) {
    let zeros = vec![0.0; HEADS * S * D];
    s.forward::<f16>(attention, [&zeros, &zeros, v], None, seeds)
}

pub(crate) fn dropout_keeps_one_minus_p_and_the_backward_draws_the_forwards_mask() {
    let mut s = setup();
    let attention = Attention::new(DataType::F16, 2, 2, S as i64, D as i64).dropout(P);
    let v = first_feature_ones(exact(HEADS * S * D, 61));
    let (o, stats) = forward(&mut s, &attention, &v, (1234, 0));
    let (again, _) = forward(&mut s, &attention, &v, (1234, 0));
    let (other, _) = forward(&mut s, &attention, &v, (4321, 0));
    assert_eq!(o, again, "a seed drew two masks");
    assert_ne!(o, other, "two seeds drew one mask");
    let rows = totals(&o);
    let kept = rows.iter().sum::<f64>() / (HEADS * S * S) as f64;
    let sigma = (P * (1.0 - P) / (HEADS * S * S) as f64).sqrt();
    assert!(
        (kept - (1.0 - P)).abs() < 4.0 * sigma,
        "kept {kept}, want {} +- {}",
        1.0 - P,
        4.0 * sigma
    );

    let (graph, io) = attention.backward().unwrap();
    let zeros = vec![0.0; HEADS * S * D];
    let d_o = first_feature_ones(vec![0.0; HEADS * S * D]);
    let dims = attention.q_dims();
    let up = |values: &[f64]| s.upload::<f16>(&attention, values, dims);
    let (qb, kb, vb, ob, dob) = (up(&zeros), up(&zeros), up(&v), up(&o), up(&d_o));
    let stats32: Vec<f32> = stats.iter().map(|&x| x as f32).collect();
    let stats = s.pool.allocate_from_host(&stats32, &s.stream).unwrap();
    let zeroed = || {
        s.pool
            .allocate_zeroed::<f16>(HEADS * S * D, &s.stream)
            .unwrap()
    };
    let (mut dq, mut dk, mut dv) = (zeroed(), zeroed(), zeroed());
    let extras = s.extras(None, (1234, 0));
    let mut pack = VariantPack::new();
    pack.input::<f16>(io.q, &qb)
        .unwrap()
        .input::<f16>(io.k, &kb)
        .unwrap()
        .input::<f16>(io.v, &vb)
        .unwrap();
    pack.input::<f16>(io.o, &ob)
        .unwrap()
        .input::<f16>(io.d_o, &dob)
        .unwrap()
        .input::<f32>(io.stats, &stats)
        .unwrap();
    pack.output::<f16>(io.dq, &mut dq)
        .unwrap()
        .output::<f16>(io.dk, &mut dk)
        .unwrap()
        .output::<f16>(io.dv, &mut dv)
        .unwrap();
    bind_extras(&mut pack, &extras, None, io.seed.zip(io.offset));
    s.dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let columns = totals(&s.read::<f16>(&attention, &dv, dims));
    assert_eq!(
        rows, columns,
        "the backward's mask is not the forward's (per head: rows, columns)"
    );
    assert!(
        s.read::<f16>(&attention, &dq, dims)
            .iter()
            .all(|x| x.is_finite())
    );
    println!(
        "dropout {P}: kept {kept:.4} of {} draws; per head {rows:?}",
        HEADS * S * S
    );
}
