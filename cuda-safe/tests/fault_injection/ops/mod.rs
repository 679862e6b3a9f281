//! Every operation of the matrix, by area.

mod checkpoint_nvml;
mod code;
mod copies;
mod device;
mod device_graph;
mod green;
mod ipc;
mod managed;
mod memory;
mod peer;
mod textures;
mod vmm;

use crate::stub::Stub;
use cuda_safe_stub::faults::Op;

/// Why a current-context guard's failure to restore the caller's context is logged, not
/// returned: the operation's work is done by then.
pub(crate) const RESTORE: &str = "the guard restoring the caller's context only logs \
                                  (ScopedCurrent::drop)";

/// Every operation of the matrix.
pub(crate) fn operations(scratch: &std::path::Path, stub: &'static Stub) -> Vec<Op> {
    let mut ops = Vec::new();
    device::device_operations(&mut ops);
    device::stream_and_event_operations(&mut ops);
    memory::memory_operations(&mut ops);
    code::code_operations(&mut ops, scratch);
    green::green_operations(&mut ops);
    checkpoint_nvml::checkpoint_and_nvml_operations(&mut ops);
    peer::peer_operations(&mut ops);
    ipc::ipc_operations(&mut ops, stub);
    vmm::vmm_operations(&mut ops);
    managed::managed_operations(&mut ops);
    copies::copy_operations(&mut ops);
    textures::texture_operations(&mut ops);
    device_graph::device_graph_operations(&mut ops);
    ops
}
