use super::*;

/// The message of an expected error.
fn refused<T: fmt::Debug>(result: Result<T>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message.into_owned(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn packed_column_major_extents_and_call() {
    let call = Gemm::new(64, 16, 32).call().unwrap();
    assert_eq!(call.extents, [64 * 32, 32 * 16, 64 * 16]);
    assert_eq!((call.m, call.n, call.k), (64, 16, 32));
    assert_eq!((call.lda, call.ldb, call.ldc), (64, 32, 64));
    assert!(!call.swap);
    assert_eq!(call.transa, cublasOperation_t::CUBLAS_OP_N);
}

#[test]
fn transposes_change_the_stored_shapes() {
    let call = Gemm::new(64, 16, 32)
        .transpose_a()
        .transpose_b()
        .call()
        .unwrap();
    // A is stored k x m (32 x 64), B n x k (16 x 32).
    assert_eq!((call.lda, call.ldb), (32, 16));
    assert_eq!(call.extents, [32 * 64, 16 * 32, 64 * 16]);
    assert_eq!(call.transa, cublasOperation_t::CUBLAS_OP_T);
    assert_eq!(call.transb, cublasOperation_t::CUBLAS_OP_T);
    // Transposing twice is as stored.
    let twice = Gemm::new(2, 3, 4).transpose_a().transpose_a();
    assert_eq!(twice.transposes(), (Transpose::No, Transpose::No));
}

#[test]
fn row_major_swaps_the_operands_and_the_dimensions() {
    let shape = Gemm::row_major(64, 16, 32).transpose_a();
    let call = shape.call().unwrap();
    assert!(call.swap);
    // The column-major call computes Cᵀ (16 x 64) = Bᵀ op(A)ᵀ.
    assert_eq!((call.m, call.n, call.k), (16, 64, 32));
    assert_eq!(call.transa, cublasOperation_t::CUBLAS_OP_N);
    assert_eq!(call.transb, cublasOperation_t::CUBLAS_OP_T);
    // Row strides: A stored 32 x 64 (row stride 64), B 32 x 16, C 64 x 16.
    assert_eq!((call.lda, call.ldb, call.ldc), (16, 64, 16));
    assert_eq!(call.extents, [32 * 64, 32 * 16, 64 * 16]);
}

#[test]
fn leading_dimensions_are_checked_against_their_runs() {
    let message = refused(Gemm::new(64, 16, 32).lda(63).call());
    assert!(message.contains("A (64 x 32, column-major)"), "{message}");
    assert!(message.contains("at least 64"), "{message}");
    let message = refused(Gemm::row_major(64, 16, 32).ldb(15).call());
    assert!(message.contains("B (32 x 16, row-major)"), "{message}");
    // A larger one spans more.
    let call = Gemm::new(64, 16, 32).ldc(100).call().unwrap();
    assert_eq!(call.extents[2], 100 * 15 + 64);
    // An empty matrix spans nothing but still needs ld >= 1.
    assert_eq!(
        Gemm::new(0, 16, 32).call().unwrap().extents,
        [0, 32 * 16, 0]
    );
    assert!(refused(Gemm::new(0, 0, 0).lda(0).call()).contains("at least 1"));
}

#[test]
fn dimensions_must_fit_cublas_int() {
    let big = i32::MAX as usize + 1;
    let message = refused(Gemm::new(big, 1, 1).call());
    assert!(message.contains("m = 2147483648"), "{message}");
    assert!(refused(Gemm::new(1, 1, 1).ldc(big).call()).contains("ldc"));
    let overflow = Stored::new("A", (usize::MAX / 2, 3), None, false);
    assert!(refused(overflow.extent()).contains("overflows"));
}

#[test]
fn operands_must_hold_their_extent() {
    assert!(holds(&"x", 10, 10).is_ok());
    let stored = Stored::new("C", (64, 16), None, false);
    let message = refused(holds(&stored, 1024, 1000));
    assert_eq!(
        message,
        "C (64 x 16, column-major) spans 1024 elements, but its memory holds 1000"
    );
}

#[test]
fn strided_batches_span_the_whole_batch() {
    let shape = Gemm::new(8, 4, 2);
    let call = shape.call().unwrap();
    let packed = StridedBatch::packed(5, &shape).unwrap();
    assert_eq!(
        (packed.stride_a, packed.stride_b, packed.stride_c),
        (16, 8, 32)
    );
    assert_eq!(packed.extents(&call).unwrap(), [16 * 5, 8 * 5, 32 * 5]);
    // A stride of 0 reuses one A.
    let shared = StridedBatch {
        stride_a: 0,
        ..packed
    };
    assert_eq!(shared.extents(&call).unwrap()[0], 16);
    // C's products may not overlap.
    let overlapping = StridedBatch {
        stride_c: 31,
        ..packed
    };
    assert!(refused(overlapping.extents(&call)).contains("write over each other"));
    // One product may, trivially.
    let one = StridedBatch {
        count: 1,
        stride_c: 0,
        ..packed
    };
    assert_eq!(one.extents(&call).unwrap(), [16, 8, 32]);
    let none = StridedBatch { count: 0, ..packed };
    assert_eq!(none.extents(&call).unwrap(), [0, 0, 0]);
    let too_many = StridedBatch {
        count: i32::MAX as usize + 1,
        ..packed
    };
    assert!(refused(too_many.extents(&call)).contains("batch count"));
    let huge = StridedBatch {
        count: 3,
        stride_a: usize::MAX / 2,
        ..packed
    };
    assert!(refused(huge.extents(&call)).contains("overflows"));
}

#[test]
fn vectors_span_their_increments() {
    assert_eq!(vector_extent("x", 10, 1).unwrap(), 10);
    assert_eq!(vector_extent("x", 10, 3).unwrap(), 28);
    assert_eq!(vector_extent("x", 0, 3).unwrap(), 0);
    assert!(refused(vector_extent("x", 10, 0)).contains("at least 1"));
    assert!(refused(vector_extent("x", i32::MAX as usize + 1, 1)).contains("n ="));
}

#[test]
fn shapes_print_what_they_are() {
    assert_eq!(
        Gemm::row_major(8, 4, 2).transpose_b().to_string(),
        "8x4x2 (N, T, row-major)"
    );
    assert_eq!(Gemm::new(8, 4, 2).dims(), (8, 4, 2));
}
