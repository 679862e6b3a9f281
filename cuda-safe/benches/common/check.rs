//! The raw driver calls of the benchmarks that compare the crate with them: a `CUresult` as the
//! crate's error, shared by `launch_threads` and `green_contention`.

use cuda_safe::sys::CUresult;
use cuda_safe::{Error, Result};

/// `Ok` for `CUDA_SUCCESS`, else the crate's error naming `function`.
pub fn check(function: &'static str, code: CUresult) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::cuda(function, code))
    }
}
