//! The element types cuSOLVER factors ([`SolverElement`]: f32 and f64), their `cudaDataType`
//! for the 64-bit API, and the legacy routines the 64-bit API lacks (`ormqr`,
//! `gesvdjBatched`), one typed entry point per type.

use bytemuck::Pod;

use cusolver_sys::cudaDataType;

/// A real floating-point type the solver factors: `f32` or `f64`. Sealed.
pub trait SolverElement: Pod + sealed::Legacy {
    /// The type's `cudaDataType` (also the compute type the routines run in).
    const DATA_TYPE: cudaDataType;
}

impl SolverElement for f32 {
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_R_32F;
}

impl SolverElement for f64 {
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_R_64F;
}

pub(crate) mod sealed {
    use std::ffi::c_int;

    use crate::solver::error::cusolver;
    use cuda_safe::Result;
    use cusolver_sys::{
        Cusolver, cublasOperation_t, cublasSideMode_t, cusolverDnHandle_t, cusolverEigMode_t,
        gesvdjInfo_t,
    };

    /// The arguments of an `ormqr` (and of its workspace query, which ignores `work`).
    #[derive(Debug, Clone, Copy)]
    pub struct Ormqr {
        pub side: cublasSideMode_t,
        pub trans: cublasOperation_t,
        /// m, n, k.
        pub dims: [c_int; 3],
        pub a: u64,
        pub lda: c_int,
        pub tau: u64,
        pub c: u64,
        pub ldc: c_int,
    }

    /// The arguments of a `gesvdjBatched` (and of its workspace query).
    #[derive(Debug, Clone, Copy)]
    pub struct Gesvdj {
        pub jobz: cusolverEigMode_t,
        /// m, n.
        pub dims: [c_int; 2],
        pub a: u64,
        pub lda: c_int,
        pub s: u64,
        pub u: u64,
        pub ldu: c_int,
        pub v: u64,
        pub ldv: c_int,
        pub params: gesvdjInfo_t,
        pub batch: c_int,
    }

    /// The legacy entry points of one type.
    pub trait Legacy: Sized {
        /// The `ormqr` of this type (`cusolverDnSormqr`), as errors name it.
        const ORMQR: &'static str;
        /// The `gesvdjBatched` of this type.
        const GESVDJ: &'static str;

        /// `cusolverDn?ormqr_bufferSize`: the workspace in elements.
        ///
        /// # Safety
        ///
        /// A live handle; the operands checked for the dimensions.
        unsafe fn ormqr_size(lib: &Cusolver, h: cusolverDnHandle_t, call: &Ormqr) -> Result<c_int>;

        /// `cusolverDn?ormqr`.
        ///
        /// # Safety
        ///
        /// As [`ormqr_size`](Self::ormqr_size); `work` holds `lwork` elements, `info` one int.
        unsafe fn ormqr(
            lib: &Cusolver,
            h: cusolverDnHandle_t,
            call: &Ormqr,
            work: u64,
            lwork: c_int,
            info: u64,
        ) -> Result<()>;

        /// `cusolverDn?gesvdjBatched_bufferSize`: the workspace in elements.
        ///
        /// # Safety
        ///
        /// As [`ormqr_size`](Self::ormqr_size).
        unsafe fn gesvdj_size(
            lib: &Cusolver,
            h: cusolverDnHandle_t,
            call: &Gesvdj,
        ) -> Result<c_int>;

        /// `cusolverDn?gesvdjBatched`.
        ///
        /// # Safety
        ///
        /// As [`ormqr`](Self::ormqr), `info` holding one int per matrix.
        unsafe fn gesvdj(
            lib: &Cusolver,
            h: cusolverDnHandle_t,
            call: &Gesvdj,
            work: u64,
            lwork: c_int,
            info: u64,
        ) -> Result<()>;
    }

    macro_rules! legacy {
        ($($t:ty => $ormqr_size:ident, $ormqr:ident, $gesvdj_size:ident, $gesvdj:ident;)*) => {$(
            impl Legacy for $t {
                const ORMQR: &'static str = stringify!($ormqr);
                const GESVDJ: &'static str = stringify!($gesvdj);

                unsafe fn ormqr_size(
                    lib: &Cusolver,
                    h: cusolverDnHandle_t,
                    c: &Ormqr,
                ) -> Result<c_int> {
                    let mut lwork = 0;
                    let [m, n, k] = c.dims;
                    // SAFETY: the caller's: a live handle, operands checked for the dimensions.
                    unsafe {
                        cusolver!(lib, $ormqr_size(
                            h, c.side, c.trans, m, n, k, c.a as *const $t, c.lda,
                            c.tau as *const $t, c.c as *const $t, c.ldc, &mut lwork
                        ))
                    }?;
                    Ok(lwork)
                }

                unsafe fn ormqr(
                    lib: &Cusolver,
                    h: cusolverDnHandle_t,
                    c: &Ormqr,
                    work: u64,
                    lwork: c_int,
                    info: u64,
                ) -> Result<()> {
                    let [m, n, k] = c.dims;
                    // SAFETY: the caller's, and a workspace of `lwork` elements.
                    unsafe {
                        cusolver!(lib, $ormqr(
                            h, c.side, c.trans, m, n, k, c.a as *const $t, c.lda,
                            c.tau as *const $t, c.c as *mut $t, c.ldc, work as *mut $t, lwork,
                            info as *mut c_int
                        ))
                    }
                }

                unsafe fn gesvdj_size(
                    lib: &Cusolver,
                    h: cusolverDnHandle_t,
                    c: &Gesvdj,
                ) -> Result<c_int> {
                    let mut lwork = 0;
                    let [m, n] = c.dims;
                    // SAFETY: the caller's.
                    unsafe {
                        cusolver!(lib, $gesvdj_size(
                            h, c.jobz, m, n, c.a as *const $t, c.lda, c.s as *const $t,
                            c.u as *const $t, c.ldu, c.v as *const $t, c.ldv, &mut lwork,
                            c.params, c.batch
                        ))
                    }?;
                    Ok(lwork)
                }

                unsafe fn gesvdj(
                    lib: &Cusolver,
                    h: cusolverDnHandle_t,
                    c: &Gesvdj,
                    work: u64,
                    lwork: c_int,
                    info: u64,
                ) -> Result<()> {
                    let [m, n] = c.dims;
                    // SAFETY: the caller's, and a workspace of `lwork` elements.
                    unsafe {
                        cusolver!(lib, $gesvdj(
                            h, c.jobz, m, n, c.a as *mut $t, c.lda, c.s as *mut $t,
                            c.u as *mut $t, c.ldu, c.v as *mut $t, c.ldv, work as *mut $t,
                            lwork, info as *mut c_int, c.params, c.batch
                        ))
                    }
                }
            }
        )*};
    }

    legacy! {
        f32 => cusolverDnSormqr_bufferSize, cusolverDnSormqr,
            cusolverDnSgesvdjBatched_bufferSize, cusolverDnSgesvdjBatched;
        f64 => cusolverDnDormqr_bufferSize, cusolverDnDormqr,
            cusolverDnDgesvdjBatched_bufferSize, cusolverDnDgesvdjBatched;
    }
}
