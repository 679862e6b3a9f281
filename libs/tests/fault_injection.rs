//! The libraries' operations driven through every failure of the calls they make, with the stub
//! driver and the stub cuBLAS, cuBLASLt, cuRAND, cuFFT and cuSPARSE of `stub/c`
//! (`libblas_stub.c`, `libcufft_stub.c`, `libcusparse_stub.c`): each call in
//! turn (the driver's and the library's) failed with each code of its library, and the error,
//! the leaks and the logs checked (`cuda_safe_stub::faults`).
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use std::cell::RefCell;
use std::process::ExitCode;

use cuda_safe::Buffer;
use cuda_safe_libs::blas::cublas_sys::LIBCUBLAS_PATH_ENV;
use cuda_safe_libs::blas::cublaslt_sys::LIBCUBLASLT_PATH_ENV;
use cuda_safe_libs::blas::{Blas, Gemm, Matmul, MatmulDesc, Scalars};
use cuda_safe_libs::fft::cufft_sys::LIBCUFFT_PATH_ENV;
use cuda_safe_libs::fft::{Complex32, Fft, FftDesc, FftDirection, FftPlan};
use cuda_safe_libs::rand::curand_sys::LIBCURAND_PATH_ENV;
use cuda_safe_libs::rand::{Generator, RngKind};
use cuda_safe_libs::sparse::cusparse_sys::LIBCUSPARSE_PATH_ENV;
use cuda_safe_libs::sparse::{
    DenseMatrix, DenseVector, Operation, Order, SpGemmAlg, SpMvAlg, Sparse, SparseMatrix,
};
use cuda_safe_stub::Installed;
use cuda_safe_stub::faults::fixtures::{pool, stream, take};
use cuda_safe_stub::faults::{Op, Runner, op, report_panics};

/// The side of the square matrices the GEMMs multiply.
const SIDE: usize = 8;

fn matrices() -> (cuda_safe::Stream, Buffer, Buffer, RefCell<Buffer>) {
    let stream = stream();
    let pool = pool();
    let a = pool
        .allocate_from_host(&[1.0f32; SIDE * SIDE], &stream)
        .expect("A");
    let b = pool
        .allocate_from_host(&[2.0f32; SIDE * SIDE], &stream)
        .expect("B");
    let c = pool
        .allocate_zeroed::<f32>(SIDE * SIDE, &stream)
        .expect("C");
    (stream, a, b, RefCell::new(c))
}

fn blas_operations(ops: &mut Vec<Op>) {
    ops.push(op("Blas::new", stream, Blas::new));
    ops.push(op(
        "Blas::gemm (f32)",
        || {
            let (stream, a, b, c) = matrices();
            (Blas::new(&stream).expect("a handle"), stream, a, b, c)
        },
        |(blas, _, a, b, c)| {
            blas.gemm::<f32, f32>(
                &Gemm::new(SIDE, SIDE, SIDE),
                Scalars::host(1.0, 0.0),
                a,
                b,
                &mut *c.borrow_mut(),
            )
        },
    ));
    ops.push(
        op(
            "Blas::close",
            || RefCell::new(Some(Blas::new(&stream()).expect("a handle"))),
            |blas| take(blas).close(),
        )
        .releasing()
        .logs(
            "cuMemFreeAsync",
            "close returns cuBLAS's error; the workspace is a buffer of the core, freed by its \
             own drop, which logs",
        )
        .logs(
            "cuStreamDestroy_v2",
            "the handle's stream is the core's, destroyed by its last clone's drop, which logs",
        ),
    );
    ops.push(op("Matmul::new", stream, Matmul::new));
    ops.push(
        op(
            "Matmul::plan (f32)",
            || Matmul::new(&stream()).expect("a handle"),
            |matmul| {
                matmul.plan(&MatmulDesc::new::<f32, f32, f32>(Gemm::new(
                    SIDE, SIDE, SIDE,
                )))
            },
        )
        .logs(
            "cublasLtMatmulPreferenceDestroy",
            "the heuristic's preference is released by its drop, which logs: the plan is made",
        ),
    );
}

fn rand_operations(ops: &mut Vec<Op>) {
    ops.push(op("Generator::new (Philox)", stream, |stream| {
        Generator::new(stream, RngKind::Philox4x32_10)
    }));
    ops.push(op(
        "Generator::uniform (f32)",
        || {
            let stream = stream();
            let buffer = pool()
                .allocate_zeroed::<f32>(1024, &stream)
                .expect("a buffer");
            let generator = Generator::new(&stream, RngKind::Philox4x32_10).expect("a generator");
            (RefCell::new(generator), RefCell::new(buffer))
        },
        |(generator, buffer)| {
            generator
                .borrow_mut()
                .uniform::<f32>(&mut *buffer.borrow_mut())
        },
    ));
}

/// The transform the FFT operations plan: 64 complex points.
fn fft_desc() -> FftDesc {
    FftDesc::c2c::<Complex32>(64)
}

fn fft_operations(ops: &mut Vec<Op>) {
    ops.push(op("FftPlan::new (C2C f32)", stream, |stream| {
        FftPlan::new(stream, &fft_desc())
    }));
    ops.push(op(
        "FftPlan::c2c",
        || {
            let stream = stream();
            let pool = pool();
            let x = pool.allocate_zeroed::<Complex32>(64, &stream).expect("x");
            let y = pool.allocate_zeroed::<Complex32>(64, &stream).expect("y");
            let plan = FftPlan::new(&stream, &fft_desc()).expect("a plan");
            (plan, x, RefCell::new(y))
        },
        |(plan, x, y)| plan.c2c::<Complex32>(x, &mut *y.borrow_mut(), FftDirection::Forward),
    ));
    ops.push(
        op(
            "FftPlan::close",
            || RefCell::new(Some(FftPlan::new(&stream(), &fft_desc()).expect("a plan"))),
            |plan| take(plan).close(),
        )
        .releasing()
        .logs(
            "cuMemFreeAsync",
            "close returns cuFFT's error; the work area is a buffer of the core, freed by its \
             own drop, which logs",
        )
        .logs(
            "cuStreamDestroy_v2",
            "the plan's stream is the core's, destroyed by its last clone's drop, which logs",
        ),
    );
    ops.push(op(
        "Fft::plan (a miss)",
        || RefCell::new(Fft::new(&stream()).expect("a cache")),
        |fft| fft.borrow_mut().plan(&fft_desc()).map(drop),
    ));
}

/// A 4 x 4 diagonal CSR matrix's offsets, columns and values, a vector and an output.
fn sparse_operands() -> (cuda_safe::Stream, [Buffer; 4], RefCell<Buffer>) {
    let stream = stream();
    let pool = pool();
    let up = |host: &[i32]| pool.allocate_from_host(host, &stream).expect("an array");
    let (offsets, columns) = (up(&[0, 1, 2, 3, 4]), up(&[0, 1, 2, 3]));
    let values = pool
        .allocate_from_host(&[2.0f32; 4], &stream)
        .expect("values");
    let x = pool.allocate_from_host(&[1.0f32; 4], &stream).expect("x");
    let y = pool.allocate_zeroed::<f32>(4, &stream).expect("y");
    (stream, [offsets, columns, values, x], RefCell::new(y))
}

/// Why a descriptor's failed destroy only logs in these operations.
const DROPPED_INSIDE: &str =
    "the descriptors an operation makes over its fixtures are dropped inside it, which logs";

fn sparse_operations(ops: &mut Vec<Op>) {
    ops.push(op("Sparse::new", stream, Sparse::new));
    ops.push(
        op(
            "SparseMatrix::csr",
            sparse_operands,
            |(_, [offsets, columns, values, _], _)| {
                SparseMatrix::<i32, f32>::csr((4, 4, 4), offsets, columns, values).map(drop)
            },
        )
        .logs("cusparseDestroySpMat", DROPPED_INSIDE),
    );
    ops.push(
        op(
            "Sparse::spmv (CSR f32)",
            || {
                let operands = sparse_operands();
                (Sparse::new(&operands.0).expect("a handle"), operands)
            },
            |(sparse, (_, [offsets, columns, values, x], y))| {
                let a = SparseMatrix::<i32, f32>::csr((4, 4, 4), offsets, columns, values)?;
                let mut y = y.borrow_mut();
                let (xv, mut yv) = (DenseVector::new(x)?, DenseVector::new(&mut *y)?);
                let n = Operation::NonTranspose;
                sparse.spmv(n, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
            },
        )
        .logs("cusparseDestroySpMat", DROPPED_INSIDE)
        .logs("cusparseDestroyDnVec", DROPPED_INSIDE),
    );
    ops.push(
        op(
            "Sparse::spgemm (CSR f32)",
            || {
                let operands = sparse_operands();
                (Sparse::new(&operands.0).expect("a handle"), operands)
            },
            |(sparse, (_, [offsets, columns, values, _], _))| {
                let a = SparseMatrix::<i32, f32>::csr((4, 4, 4), offsets, columns, values)?;
                let nn = (Operation::NonTranspose, Operation::NonTranspose);
                sparse.spgemm(nn, 1.0, &a, &a, SpGemmAlg::DEFAULT).map(drop)
            },
        )
        .logs("cusparseDestroySpMat", DROPPED_INSIDE),
    );
    ops.push(
        op(
            "Sparse::dense_to_csr (f32)",
            || {
                let operands = sparse_operands();
                (Sparse::new(&operands.0).expect("a handle"), operands)
            },
            |(sparse, (_, [_, _, values, _], _))| {
                let dense = DenseMatrix::<f32>::new(2, 2, Order::RowMajor, values)?;
                sparse.dense_to_csr::<i32, f32>(&dense).map(drop)
            },
        )
        .logs("cusparseDestroyDnMat", DROPPED_INSIDE),
    );
}

fn main() -> ExitCode {
    let variables = [
        LIBCUBLAS_PATH_ENV,
        LIBCUBLASLT_PATH_ENV,
        LIBCURAND_PATH_ENV,
        LIBCUFFT_PATH_ENV,
        LIBCUSPARSE_PATH_ENV,
    ];
    let stub = match cuda_safe_stub::install_with(&variables, |_| {}) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fault_injection: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    cuda_safe_stub::install_logger();
    report_panics();
    // The primary context and the libraries are loaded once for the process, as any program's
    // first call would: a case then sees only what its operation makes.
    drop(Blas::new(&stream()).expect("a warm-up handle"));
    drop(Generator::new(&stream(), RngKind::Philox4x32_10).expect("a warm-up generator"));
    drop(FftPlan::new(&stream(), &fft_desc()).expect("a warm-up plan"));
    drop(Sparse::new(&stream()).expect("a warm-up cuSPARSE handle"));
    let mut ops = Vec::new();
    blas_operations(&mut ops);
    rand_operations(&mut ops);
    fft_operations(&mut ops);
    sparse_operations(&mut ops);
    let mut runner = Runner::default();
    for op in &ops {
        runner.matrix(stub, op);
    }
    runner.finish("fault_injection", stub)
}
