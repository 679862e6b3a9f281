//! Memory of another device than the handle's: a buffer of device 1 bound for a device 0
//! handle is refused before cuDNN until device 0 is granted access to its pool; a workspace
//! resource of device 1 is refused; a view of memory kernels cannot reach is refused as its
//! buffer is.

use std::sync::Arc;

use cuda_safe::{
    Buffer, Device, DeviceMemoryResource, Error, MemoryResource, PinnedMemoryResource, Stream,
};
use cuda_safe_libs::dnn::{Dnn, VariantPack};

use super::{Case, CaseFn, count, ensure, err, names, relu};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "another device's memory is refused before cuDNN until its pool grants the handle's \
         device access; another device's workspace resource is refused",
        another_device,
    ),
    (
        "a view of memory kernels cannot reach is refused as its buffer is",
        unreachable_view,
    ),
];

fn another_device(case: &Case) -> Result<(), String> {
    let (graph, x, y) = relu()?;
    let (first, second) = (*case.stream.device(), Device::new(1).map_err(err)?);
    let stream: Stream = second.create_stream(Default::default()).map_err(err)?;
    let pool: DeviceMemoryResource = second.default_memory_resource().map_err(err)?;
    let xs = pool.allocate_zeroed::<f32>(16, &stream).map_err(err)?;
    let mut ys = case
        .pool
        .allocate_zeroed::<f32>(16, &case.stream)
        .map_err(err)?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    dnn.plan(&graph).map_err(err)?;
    case.stub.take_log();
    let run = |dnn: &mut Dnn, ys: &mut Buffer| -> Result<(), Error> {
        let mut pack = VariantPack::new();
        pack.input::<f32>(x, &xs)?.output::<f32>(y, ys)?;
        dnn.execute(&graph, &pack)
    };
    match run(&mut dnn, &mut ys) {
        Err(Error::InvalidArgument(why))
            if why.contains("tensor 1") && why.contains("device 1's") => {}
        other => {
            return Err(format!(
                "device 1's memory for a device 0 handle: {other:?}"
            ));
        }
    }
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendExecute") == 0, || {
        format!("the refused execution called {calls:?}")
    })?;
    pool.grant_access(&first).map_err(err)?;
    let granted = run(&mut dnn, &mut ys);
    pool.revoke_access(&first).map_err(err)?;
    granted.map_err(|e| format!("with access granted: {e}"))?;
    let resource: Arc<dyn MemoryResource> = Arc::new(pool);
    match Dnn::with_memory_resource(&case.stream, resource) {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's memory") => Ok(()),
        other => Err(format!("a workspace of device 1: {other:?}")),
    }
}

/// Pinned memory said to be out of kernels' reach: a resource only the host may use.
#[derive(Debug)]
struct HostOnly(PinnedMemoryResource);

// SAFETY: every allocation is the pinned resource's, which the host reaches; this one only says
// less of it (kernels cannot reach it).
unsafe impl MemoryResource for HostOnly {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> cuda_safe::Result<u64> {
        self.0.allocate_raw(size, stream)
    }

    unsafe fn deallocate_raw(
        &self,
        ptr: u64,
        size: usize,
        stream: &Stream,
    ) -> cuda_safe::Result<()> {
        // SAFETY: the caller's promise, for memory of the pinned resource.
        unsafe { self.0.deallocate_raw(ptr, size, stream) }
    }

    fn is_device_accessible(&self) -> bool {
        false
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn device(&self) -> Option<Device> {
        None
    }
}

fn unreachable_view(case: &Case) -> Result<(), String> {
    let (_, x, _) = relu()?;
    let host = HostOnly(PinnedMemoryResource::new(case.stream.device()).map_err(err)?);
    let memory =
        Buffer::allocate_array_in::<f32, _>(Arc::new(host), 16, &case.stream).map_err(err)?;
    let view = memory.as_slice::<f32>().map_err(err)?;
    for (what, result) in [
        (
            "buffer",
            VariantPack::new().input::<f32>(x, &memory).map(drop),
        ),
        ("view", VariantPack::new().input::<f32>(x, &view).map(drop)),
    ] {
        match result {
            Err(Error::InvalidArgument(why)) if why.contains("GPU can reach") => {}
            other => return Err(format!("a {what} of host-only memory: {other:?}")),
        }
    }
    Ok(())
}
