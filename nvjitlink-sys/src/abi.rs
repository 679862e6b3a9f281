//! Which ABI this crate compiled, for the crates built on it to follow.

use crate::HEADER_CUDA_VERSION;

/// The CUDA major version whose headers this build's bindings come from: 12 or 13.
///
/// It follows this crate's features (13 when `cuda-13` is on, else 12), which may differ from
/// the features of the crate reading it: Cargo unifies features across the build.
pub const ABI_MAJOR: u32 = HEADER_CUDA_VERSION / 1000;

/// Expands to its tokens when this crate compiled the CUDA 12 ABI ([`ABI_MAJOR`] is 12), and
/// to nothing otherwise; in item position or as statements in a block (see
/// [Choosing the ABI](crate#choosing-the-abi)).
#[cfg(not(feature = "cuda-13"))]
#[macro_export]
macro_rules! if_abi12 {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Expands to its tokens when this crate compiled the CUDA 12 ABI ([`ABI_MAJOR`] is 12), and
/// to nothing otherwise; in item position or as statements in a block (see
/// [Choosing the ABI](crate#choosing-the-abi)).
#[cfg(feature = "cuda-13")]
#[macro_export]
macro_rules! if_abi12 {
    ($($tokens:tt)*) => {};
}

/// Expands to its tokens when this crate compiled the CUDA 13 ABI ([`ABI_MAJOR`] is 13), and
/// to nothing otherwise; in item position or as statements in a block (see
/// [Choosing the ABI](crate#choosing-the-abi)).
#[cfg(feature = "cuda-13")]
#[macro_export]
macro_rules! if_abi13 {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Expands to its tokens when this crate compiled the CUDA 13 ABI ([`ABI_MAJOR`] is 13), and
/// to nothing otherwise; in item position or as statements in a block (see
/// [Choosing the ABI](crate#choosing-the-abi)).
#[cfg(not(feature = "cuda-13"))]
#[macro_export]
macro_rules! if_abi13 {
    ($($tokens:tt)*) => {};
}
