//! Every operation of the matrix, by area.

mod checkpoint_nvml;
mod code;
mod device;
mod green;
mod memory;

use crate::case::Op;

/// Every operation of the matrix.
pub(crate) fn operations(scratch: &std::path::Path) -> Vec<Op> {
    let mut ops = Vec::new();
    device::device_operations(&mut ops);
    device::stream_and_event_operations(&mut ops);
    memory::memory_operations(&mut ops);
    code::code_operations(&mut ops, scratch);
    green::green_operations(&mut ops);
    checkpoint_nvml::checkpoint_and_nvml_operations(&mut ops);
    ops
}
