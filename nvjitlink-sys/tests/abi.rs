//! The ABI macros as a crate built on this one invokes them: they keep the code of the ABI
//! this crate compiled, whatever the invoking crate's features say.

use nvjitlink_sys::{ABI_MAJOR, HEADER_CUDA_VERSION, if_abi12, if_abi13};

if_abi12! {
    /// The ABI whose item-position invocation was kept.
    const KEPT_ITEM: u32 = 12;
}
if_abi13! {
    /// The ABI whose item-position invocation was kept.
    const KEPT_ITEM: u32 = 13;
}

#[test]
fn abi_major_follows_the_features_and_the_headers() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(ABI_MAJOR, expected);
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
}

#[test]
fn item_position_keeps_the_compiled_abi_only() {
    assert_eq!(KEPT_ITEM, ABI_MAJOR);
}

#[test]
fn statement_position_keeps_the_compiled_abi_only() {
    let mut kept = Vec::from([0]);
    if_abi12! { kept.push(12); }
    if_abi13! { kept.push(13); }
    assert_eq!(kept, [0, ABI_MAJOR]);
}

#[test]
fn a_block_ending_in_both_has_the_value_of_the_kept_one() {
    let major: u32 = {
        if_abi12! { 12 }
        if_abi13! { 13 }
    };
    assert_eq!(major, ABI_MAJOR);
}
