//! Solves a dense linear system A x = b on the GPU with cuSOLVER's LU factorization
//! (`cuda_safe_libs::solver`, `docs/solver.md`) and checks it on the CPU: a diagonally dominant
//! random A of order 1,024 in f64, b = A x for a known x, then `getrf` + `getrs` and the
//! relative residual ‖A x̂ − b‖ / ‖b‖ and error ‖x̂ − x‖ / ‖x‖. A second, singular system shows
//! the typed error that names its zero pivot.
//!
//! `cargo run -p cuda-safe-examples --example solve_linear_system [ORDER]`

use std::process::ExitCode;

use cuda_safe::Device;
use cuda_safe_libs::solver::{CusolverError, Layout, Solver, Transpose};

fn main() -> ExitCode {
    let order = match std::env::args().nth(1).map(|arg| arg.parse::<usize>()) {
        None => 1024,
        Some(Ok(order)) if order > 1 => order,
        Some(_) => {
            eprintln!("usage: solve_linear_system [ORDER > 1]");
            return ExitCode::FAILURE;
        }
    };
    match run(order) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Numbers in [-1, 1) from a 64-bit LCG.
fn numbers(count: usize, mut state: u64) -> Vec<f64> {
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn norm(values: &[f64]) -> f64 {
    values.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn run(n: usize) -> cuda_safe::Result<bool> {
    let device = Device::new(0)?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let solver = Solver::new(&stream)?;
    println!("{} with cuSOLVER {}", device.name()?, solver.version()?);

    // A column-major, diagonally dominant; b = A x.
    let mut a = numbers(n * n, 1);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    let x = numbers(n, 2);
    let mut b = vec![0.0; n];
    for j in 0..n {
        for i in 0..n {
            b[i] += a[i + j * n] * x[j];
        }
    }

    let mut factors = pool.allocate_from_host(&a, &stream)?;
    let mut solution = pool.allocate_from_host(&b, &stream)?;
    let mut pivots = pool.allocate_zeroed::<i64>(n, &stream)?;
    let layout = Layout::square(n);
    solver
        .getrf::<f64>(&layout, &mut factors, &mut pivots)?
        .check()?;
    solver
        .getrs::<f64>(
            Transpose::No,
            &layout,
            &factors,
            &pivots,
            &Layout::new(n, 1),
            &mut solution,
        )?
        .check()?;
    let got: Vec<f64> = solution.to_vec()?;

    let mut residual: Vec<f64> = b.iter().map(|v| -v).collect();
    for j in 0..n {
        for i in 0..n {
            residual[i] += a[i + j * n] * got[j];
        }
    }
    let error: Vec<f64> = got.iter().zip(&x).map(|(g, w)| g - w).collect();
    let (relative_residual, relative_error) = (norm(&residual) / norm(&b), norm(&error) / norm(&x));
    println!(
        "order {n}: ||A x - b|| / ||b|| = {relative_residual:.2e}, ||x - x*|| / ||x*|| = {relative_error:.2e}"
    );
    let solved = relative_residual < 1e-12 && relative_error < 1e-10;

    // A singular system: the second column is twice the first, with numbers whose elimination
    // is exact (the partial pivot 2, the multiplier 0.5), so the second pivot is exactly 0: a
    // pivot that is merely tiny (as 1 - 3 * (1 / 3) rounds) is no error for LU.
    let singular = [1.0f64, 2.0, 2.0, 4.0];
    let mut factors = pool.allocate_from_host(&singular, &stream)?;
    let refused = solver
        .getrf::<f64>(&Layout::square(2), &mut factors, &mut pivots)?
        .check();
    let named = match &refused {
        Err(error) => match error.library_error::<CusolverError>() {
            Some(CusolverError::Singular { pivot, .. }) => {
                println!("a singular matrix: {error} (pivot {pivot})");
                *pivot == 2
            }
            _ => false,
        },
        Ok(()) => false,
    };
    if !named {
        println!("FAIL the singular matrix was not reported with its pivot: {refused:?}");
    }
    if !solved {
        println!("FAIL the solution is off");
    }
    Ok(solved && named)
}
