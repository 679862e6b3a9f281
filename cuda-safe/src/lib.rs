//! Safe CUDA for Rust, modelled on NVIDIA's `cuda.core`.
//!
//! The raw layers are re-exported for code that needs a call the safe layer does not wrap:
//! [`sys`] (the driver API), [`nvrtc_sys`] and [`nvml_sys`]. Each loads its library at run
//! time, so this crate builds and links on machines without CUDA.

pub use cuda_sys as sys;
pub use nvml_sys;
pub use nvrtc_sys;

mod error;

pub use error::{Error, Result};
