//! What the three comparison programs share: the device and its kernels as cuda-async 0.5.0
//! and cuda-core 0.5.0 give them, the launches, the one fallible operation the server composes
//! with, and the figures (`FIG name value unit` lines, medians, the process's CPU time).
//!
//! The programs mirror cuda-safe-async's `completion` and `completion_threads` benchmarks and
//! its `inference_server` example row for row; `lab/notes/cuda-async-lab.md` says where
//! cuda-async's API made the method differ.

pub mod device;
pub mod figures;
pub mod kernels;
pub mod launches;
pub mod step;

/// The programs' error: a driver's, cuda-async's or the benchmark's own, as text for the
/// `error:` line.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The programs' result.
pub type Result<T> = std::result::Result<T, Error>;
