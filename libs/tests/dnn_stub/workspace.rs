//! The handle's workspace from a memory resource of the caller's: a base off cuDNN's 256-byte
//! boundary is refused, typed, before any execution.

use std::sync::Arc;

use cuda_safe::sys::CUdeviceptr;
use cuda_safe::{Device, DeviceMemoryResource, Error, MemoryResource, Result, Stream};
use cuda_safe_libs::dnn::{DataType, Dnn, Graph, Pointwise, TensorDesc};

use super::{Case, CaseFn, ensure, err};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "a workspace off a 256-byte boundary is refused, typed",
    misaligned_workspace,
)];

/// A resource that hands out its pool's memory `SHIFT` bytes past each allocation's start.
#[derive(Debug)]
struct Shifted(DeviceMemoryResource);

/// How far past the pool's (aligned) allocation [`Shifted`] places its memory.
const SHIFT: usize = 8;

// SAFETY: each allocation is the pool's, `SHIFT` bytes longer than asked and handed out
// `SHIFT` bytes past its start, so `size` bytes from the address are the caller's alone; it is
// freed with the pool's address and size.
unsafe impl MemoryResource for Shifted {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
        let ptr = self.0.allocate_raw(size + SHIFT, stream)?;
        Ok(ptr + SHIFT as CUdeviceptr)
    }

    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: the pool's allocation of `size + SHIFT` bytes at `ptr - SHIFT`, freed once
        // (the caller's contract).
        unsafe {
            self.0
                .deallocate_raw(ptr - SHIFT as CUdeviceptr, size + SHIFT, stream)
        }
    }

    fn is_device_accessible(&self) -> bool {
        self.0.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.0.is_host_accessible()
    }

    fn device(&self) -> Option<Device> {
        self.0.device()
    }
}

fn misaligned_workspace(case: &Case) -> std::result::Result<(), String> {
    let mut graph = Graph::new();
    let x = graph
        .tensor(TensorDesc::packed(DataType::F32, &[1, 2, 2]))
        .map_err(err)?;
    let y = graph.pointwise(Pointwise::Exp, x, None).map_err(err)?;
    graph.output(y, DataType::F32).map_err(err)?;
    let shifted = Arc::new(Shifted(case.pool.clone()));
    let mut dnn = Dnn::with_memory_resource(&case.stream, shifted).map_err(err)?;
    let refused = dnn.plan(&graph).map(|_| ());
    ensure(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("256")),
        || format!("a workspace 8 bytes past the pool's: {refused:?}"),
    )?;
    ensure(dnn.workspace_bytes() == 0, || {
        format!("{} bytes of workspace kept", dnn.workspace_bytes())
    })
}
