//! Every difference between the CUDA 12 and CUDA 13 ABIs the crate meets, in one place: field
//! layouts that moved, functions that were renamed, and features only one ABI has. The rest of
//! the crate calls these helpers and never tests the ABI itself.
//!
//! The ABI is the one the `-sys` crates were built with (`cuda-13` when both features are on),
//! followed through their `if_abi12!` / `if_abi13!` macros rather than this crate's features.

mod graph;
mod green;
mod memory;
#[cfg(feature = "nvjitlink")]
mod nvjitlink;
mod nvml;
mod recapture;
#[cfg(test)]
mod tests;

pub(crate) use graph::{
    exec_id, graph_add_dependency, graph_add_node, graph_id, node_local_id, node_tools_id,
    set_capture_dependencies, stream_capture_info,
};
pub(crate) use green::{
    GroupParams, STRUCTURED_SPLITS, green_context_id, set_workqueue_fields, split_sm_counts,
    stated_sm_rules, stream_sm_resource, unlinked, workqueue_fields, workqueue_resource_type,
};
pub(crate) use memory::{
    BatchHint, HintBatch, device_location, hint_batch_supported, location, location_id, mem_advise,
    mem_hint_batch, mem_prefetch,
};
#[cfg(feature = "nvjitlink")]
pub(crate) use nvjitlink::{NVJITLINK_HAS_LINKED_LTOIR, linked_ltoir};
/// Whether this build's nvJitLink bindings would declare the linked LTO-IR getters: the ABI's
/// (no bindings are built without the `nvjitlink` feature).
#[cfg(not(feature = "nvjitlink"))]
pub(crate) const NVJITLINK_HAS_LINKED_LTOIR: bool = cuda_sys::ABI_MAJOR >= 13;
pub(crate) use nvml::gpu_temperature;
pub(crate) use recapture::{RecaptureLog, begin_recapture};

use crate::error::{Error, Result, cu};
use cuda_sys::{CUevent, Driver, if_abi12, if_abi13};

/// The ABI the driver bindings were generated for (12 or 13).
pub(crate) const MAJOR: u32 = cuda_sys::ABI_MAJOR;

/// The alignment of `CUtensorMap` in the headers: 64 bytes under CUDA 12, 128 under CUDA 13
/// (the driver needs 64 for the map it encodes; the bindings' type has the header's).
pub(crate) const TENSOR_MAP_ALIGN: usize = {
    if_abi12! { 64 }
    if_abi13! { 128 }
};

/// The GPU time between two recorded events, in milliseconds: `cuEventElapsedTime` under 12,
/// `cuEventElapsedTime_v2` (same meaning, new symbol) under 13.
///
/// # Safety
///
/// Both events must be valid, timed and recorded, and completed.
pub(crate) unsafe fn event_elapsed_ms(
    driver: &'static Driver,
    start: CUevent,
    end: CUevent,
) -> Result<f32> {
    let mut milliseconds = 0f32;
    if_abi12! {
        // SAFETY: valid out-pointer; the events are the caller's promise.
        unsafe { cu!(driver, cuEventElapsedTime(&mut milliseconds, start, end)) }?;
    }
    if_abi13! {
        // SAFETY: as above.
        unsafe { cu!(driver, cuEventElapsedTime_v2(&mut milliseconds, start, end)) }?;
    }
    Ok(milliseconds)
}

/// Restores a checkpointed process, remapping each `(old, new)` GPU UUID pair; pairs need the
/// 13 ABI, whose argument struct has the list ([`Error::Unsupported`] under 12).
pub(crate) fn checkpoint_restore(
    driver: &'static Driver,
    pid: i32,
    pairs: &[([u8; 16], [u8; 16])],
) -> Result<()> {
    #[allow(unused_mut)]
    let mut args = cuda_sys::CUcheckpointRestoreArgs::default();
    if_abi12! {
        if !pairs.is_empty() {
            return Err(Error::unsupported(
                "GPU remapping on restore",
                "the CUDA 12 argument struct has no GPU pairs; build with the cuda-13 feature",
            ));
        }
    }
    if_abi13! {
        let uuid = |bytes: &[u8; 16]| cuda_sys::CUuuid {
            bytes: bytes.map(|byte| byte as std::ffi::c_char),
        };
        let mut raw_pairs: Vec<cuda_sys::CUcheckpointGpuPair> = pairs
            .iter()
            .map(|(old, new)| cuda_sys::CUcheckpointGpuPair {
                oldUuid: uuid(old),
                newUuid: uuid(new),
            })
            .collect();
        if !raw_pairs.is_empty() {
            args.gpuPairs = raw_pairs.as_mut_ptr();
            args.gpuPairsCount = u32::try_from(raw_pairs.len())
                .map_err(|_| Error::invalid_argument("more than u32::MAX GPU pairs"))?;
        }
    }
    // SAFETY: `args` is a valid argument struct; its pair list (if any) lives in `raw_pairs`
    // until the call returns.
    unsafe { cu!(driver, cuCheckpointProcessRestore(pid, &mut args)) }
}
