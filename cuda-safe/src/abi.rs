//! Every difference between the CUDA 12 and CUDA 13 ABIs the crate meets, in one place: field
//! layouts that moved, functions that were renamed, and features only one ABI has. The rest of
//! the crate calls these helpers and never tests the ABI itself.
//!
//! The ABI is the one the `-sys` crates were built with (`cuda-13` when both features are on),
//! followed through their `if_abi12!` / `if_abi13!` macros rather than this crate's features.

use crate::error::{Error, Result, cu};
use cuda_sys::{
    CUdevResource, CUdeviceptr, CUevent, CUgraph, CUgraphNode, CUgraphNodeParams, CUmem_advise,
    CUmemLocation, CUmemLocationType, CUstream, CUstreamCaptureStatus, Driver, if_abi12, if_abi13,
};
use nvml_sys::{Nvml, nvmlDevice_t};

/// The ABI the driver bindings were generated for (12 or 13).
pub(crate) const MAJOR: u32 = cuda_sys::ABI_MAJOR;

/// The alignment of `CUtensorMap` in the headers: 64 bytes under CUDA 12, 128 under CUDA 13
/// (the driver needs 64 for the map it encodes; the bindings' type has the header's).
pub(crate) const TENSOR_MAP_ALIGN: usize = {
    if_abi12! { 64 }
    if_abi13! { 128 }
};

/// A device location (`CU_MEM_LOCATION_TYPE_DEVICE`, `ordinal`): the id moved into a union in
/// CUDA 13.
pub(crate) fn device_location(ordinal: i32) -> CUmemLocation {
    location(CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, ordinal)
}

/// A location of any type with its id (a device ordinal, a host NUMA node, or 0 for the
/// host): the id moved into a union in CUDA 13.
pub(crate) fn location(kind: CUmemLocationType, id: i32) -> CUmemLocation {
    #[allow(unused_mut)]
    let mut location = CUmemLocation {
        type_: kind,
        ..Default::default()
    };
    if_abi12! { location.id = id; }
    if_abi13! { location.__bindgen_anon_1.id = id; }
    location
}

/// The id of a location (its device ordinal or NUMA node), in either layout.
pub(crate) fn location_id(location: &CUmemLocation) -> i32 {
    if_abi12! { return location.id; }
    // SAFETY: every location the crate builds or the driver returns sets the `id` variant
    // (the `localized` one is the same four bytes seen as two bytes and padding).
    if_abi13! { return unsafe { location.__bindgen_anon_1.id }; }
    #[allow(unreachable_code)]
    0
}

/// Under the CUDA 12 ABI, the `CUdevice` the plain (pre-12.2) entry points take for a location
/// they can name: a device's ordinal, or `CU_DEVICE_CPU` for the host; `None` for locations
/// only the `_v2` entry points know (host NUMA nodes).
#[cfg_attr(not(test), allow(dead_code))]
fn legacy_device(location: &CUmemLocation) -> Option<cuda_sys::CUdevice> {
    match location.type_ {
        CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE => Some(location_id(location)),
        CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST => Some(cuda_sys::CU_DEVICE_CPU),
        _ => None,
    }
}

/// Queues a prefetch of managed memory to `location` on `stream`. Under 12 the plain
/// `cuMemPrefetchAsync` (every CUDA 12 driver) takes a device or the host, and
/// `cuMemPrefetchAsync_v2` (12.2) is used only for host NUMA nodes; under 13 the header names
/// only the `CUmemLocation` form (`cuMemPrefetchAsync_v2`).
///
/// # Safety
///
/// `ptr..ptr + bytes` must be memory the driver can prefetch (managed memory) and `stream`
/// valid.
pub(crate) unsafe fn mem_prefetch(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    bytes: usize,
    location: CUmemLocation,
    stream: CUstream,
) -> Result<()> {
    if_abi12! {
        if let Some(device) = legacy_device(&location) {
            // SAFETY: the range and stream are the caller's promise.
            return unsafe { cu!(driver, cuMemPrefetchAsync(ptr, bytes, device, stream)) };
        }
    }
    // SAFETY: as above; no flags are defined.
    unsafe {
        cu!(
            driver,
            cuMemPrefetchAsync_v2(ptr, bytes, location, 0, stream)
        )
    }
}

/// Gives the driver `advice` about managed memory, for `location` (ignored by the read-mostly
/// advice): the plain `cuMemAdvise` under 12 where it can name the location, else
/// `cuMemAdvise_v2` (as for [`mem_prefetch`]).
///
/// # Safety
///
/// `ptr..ptr + bytes` must be managed memory.
pub(crate) unsafe fn mem_advise(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    bytes: usize,
    advice: CUmem_advise,
    location: CUmemLocation,
) -> Result<()> {
    if_abi12! {
        if let Some(device) = legacy_device(&location) {
            // SAFETY: the range is the caller's promise.
            return unsafe { cu!(driver, cuMemAdvise(ptr, bytes, advice, device)) };
        }
    }
    // SAFETY: as above.
    unsafe { cu!(driver, cuMemAdvise_v2(ptr, bytes, advice, location)) }
}

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

/// The partition rules an SM resource states about itself (`(min group, alignment)`): CUDA 13
/// resources carry them; CUDA 12 ones do not.
pub(crate) fn stated_sm_rules(resource: &CUdevResource) -> Option<(u32, u32)> {
    let _ = resource;
    if_abi13! {
        // SAFETY: an SM resource stores its fields in the `sm` variant.
        let sm = unsafe { resource.__bindgen_anon_1.sm };
        if sm.minSmPartitionSize > 0 && sm.smCoscheduledAlignment > 0 {
            return Some((sm.minSmPartitionSize, sm.smCoscheduledAlignment));
        }
    }
    None
}

/// The resource type of a device's workqueue configuration (CUDA 13.1 drivers, 13 ABI), or
/// why there is none.
pub(crate) fn workqueue_resource_type() -> Result<cuda_sys::CUdevResourceType> {
    if_abi13! {
        return Ok(cuda_sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        "green-context workqueues",
        "the cuda-12 ABI has no workqueue resources; build with the cuda-13 feature",
    ))
}

/// Splits `input` into groups of the given SM counts in one call (`cuDevSmResourceSplit`,
/// CUDA 13.1, 13 ABI); [`Error::Unsupported`] otherwise.
pub(crate) fn split_sm_counts(
    driver: &'static Driver,
    input: &CUdevResource,
    counts: &[u32],
    result: &mut [CUdevResource],
    remainder: &mut CUdevResource,
) -> Result<()> {
    let _ = (driver, input, counts, &result, &remainder);
    if_abi13! {
        let mut params: Vec<cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS> = counts
            .iter()
            .map(|&count| cuda_sys::CU_DEV_SM_RESOURCE_GROUP_PARAMS {
                smCount: count,
                ..Default::default()
            })
            .collect();
        let groups = u32::try_from(result.len()).unwrap_or(u32::MAX);
        // SAFETY: `result` and `params` hold one entry per group; input and remainder are
        // valid.
        let outcome = unsafe {
            cu!(
                driver,
                cuDevSmResourceSplit(
                    result.as_mut_ptr(),
                    groups,
                    input,
                    remainder,
                    0,
                    params.as_mut_ptr(),
                )
            )
        };
        return match outcome {
            Err(missing) if missing.is_symbol_missing() => Err(Error::unsupported(
                "SM groups of different sizes",
                format!("{missing}; equal groups work on this driver"),
            )),
            other => other,
        };
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        "SM groups of different sizes",
        "they need cuDevSmResourceSplit (CUDA 13.1) and the cuda-13 ABI; equal groups work",
    ))
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

/// `list` as the pointer a driver call takes for an array: null when empty.
fn array_ptr<T>(list: &[T]) -> *const T {
    if list.is_empty() {
        std::ptr::null()
    } else {
        list.as_ptr()
    }
}

/// Adds a node described by `params` to `graph`, after `dependencies`: `cuGraphAddNode` (CUDA
/// 12.2) under 12, `cuGraphAddNode_v2` (12.3, which adds per-edge data; none is given) under
/// 13, whose header names only that one.
///
/// # Safety
///
/// `graph` and every dependency must be valid (the dependencies nodes of `graph`), and
/// `params` a node description valid for its type.
pub(crate) unsafe fn graph_add_node(
    driver: &'static Driver,
    graph: CUgraph,
    dependencies: &[CUgraphNode],
    params: &mut CUgraphNodeParams,
) -> Result<CUgraphNode> {
    let mut node: CUgraphNode = std::ptr::null_mut();
    let (deps, count) = (array_ptr(dependencies), dependencies.len());
    let _ = (driver, graph, deps, count, &params);
    if_abi12! {
        // SAFETY: valid out-pointer; the rest is the caller's promise.
        unsafe { cu!(driver, cuGraphAddNode(&mut node, graph, deps, count, params)) }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data (null) means default edges.
        unsafe {
            cu!(
                driver,
                cuGraphAddNode_v2(&mut node, graph, deps, std::ptr::null(), count, params)
            )
        }?;
    }
    Ok(node)
}

/// Adds the edge `from -> to` to `graph`: `cuGraphAddDependencies` under 12,
/// `cuGraphAddDependencies_v2` (12.3, with per-edge data; none is given) under 13.
///
/// # Safety
///
/// `graph` must be valid and both nodes belong to it.
pub(crate) unsafe fn graph_add_dependency(
    driver: &'static Driver,
    graph: CUgraph,
    from: CUgraphNode,
    to: CUgraphNode,
) -> Result<()> {
    let _ = (driver, graph, from, to);
    if_abi12! {
        // SAFETY: one valid node on each side; the rest is the caller's promise.
        unsafe { cu!(driver, cuGraphAddDependencies(graph, &from, &to, 1)) }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data.
        unsafe { cu!(driver, cuGraphAddDependencies_v2(graph, &from, &to, std::ptr::null(), 1)) }?;
    }
    Ok(())
}

/// What `cuStreamGetCaptureInfo` says of a stream.
pub(crate) struct CaptureInfo {
    /// Whether the stream captures.
    pub(crate) status: CUstreamCaptureStatus,
    /// The capture's id, unique in the process (0 when not capturing).
    pub(crate) id: u64,
    /// The graph being captured into (null when not capturing).
    pub(crate) graph: CUgraph,
    /// The nodes the stream's next captured work will depend on (the driver's array, valid
    /// until the stream's next call).
    dependencies: *const CUgraphNode,
    count: usize,
}

impl CaptureInfo {
    /// The nodes the stream's next captured work will depend on.
    ///
    /// # Safety
    ///
    /// No call may have been made on the stream since the query.
    pub(crate) unsafe fn dependencies(&self) -> &[CUgraphNode] {
        if self.dependencies.is_null() || self.count == 0 {
            return &[];
        }
        // SAFETY: the driver's array of `count` nodes, valid until the stream's next call.
        unsafe { std::slice::from_raw_parts(self.dependencies, self.count) }
    }
}

/// A stream's capture status, capture id, graph and current dependencies:
/// `cuStreamGetCaptureInfo_v2` (11.3) under 12, `cuStreamGetCaptureInfo_v3` (12.3, which adds
/// edge data; none is asked for) under 13.
///
/// # Safety
///
/// `stream` must be valid.
pub(crate) unsafe fn stream_capture_info(
    driver: &'static Driver,
    stream: CUstream,
) -> Result<CaptureInfo> {
    let mut info = CaptureInfo {
        status: CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE,
        id: 0,
        graph: std::ptr::null_mut(),
        dependencies: std::ptr::null(),
        count: 0,
    };
    let _ = (driver, stream);
    if_abi12! {
        // SAFETY: every out-pointer is valid; the stream is the caller's promise.
        unsafe {
            cu!(
                driver,
                cuStreamGetCaptureInfo_v2(
                    stream,
                    &mut info.status,
                    &mut info.id,
                    &mut info.graph,
                    &mut info.dependencies,
                    &mut info.count,
                )
            )
        }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data is asked for (null).
        unsafe {
            cu!(
                driver,
                cuStreamGetCaptureInfo_v3(
                    stream,
                    &mut info.status,
                    &mut info.id,
                    &mut info.graph,
                    &mut info.dependencies,
                    std::ptr::null_mut(),
                    &mut info.count,
                )
            )
        }?;
    }
    Ok(info)
}

/// The GPU die temperature in degrees Celsius: `nvmlDeviceGetTemperature` under 12 (every CUDA
/// 12 driver has it), `nvmlDeviceGetTemperatureV` under 13 (which replaces it).
///
/// # Safety
///
/// `device` must be a handle NVML returned, with NVML still initialised.
pub(crate) unsafe fn gpu_temperature(nvml: &'static Nvml, device: nvmlDevice_t) -> Result<i32> {
    let sensor = nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU;
    let _ = (nvml, device, sensor);
    nvml_sys::if_abi12! {
        let mut celsius = 0u32;
        // SAFETY: the handle is the caller's promise; `celsius` is a valid out-pointer.
        unsafe {
            crate::error::nvml!(nvml, nvmlDeviceGetTemperature(device, sensor, &mut celsius))
        }?;
        return Ok(i32::try_from(celsius).unwrap_or(i32::MAX));
    }
    nvml_sys::if_abi13! {
        let mut reading = nvml_sys::nvmlTemperature_t {
            version: nvml_sys::nvmlTemperature_v1,
            sensorType: sensor,
            temperature: 0,
        };
        // SAFETY: as above; the struct carries its version.
        unsafe { crate::error::nvml!(nvml, nvmlDeviceGetTemperatureV(device, &mut reading)) }?;
        return Ok(reading.temperature);
    }
    #[allow(unreachable_code)]
    Err(Error::unexpected("nvml-sys", "no ABI selected"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::*;
    use cuda_sys::{ENTRY_POINTS, Library};

    /// Driver entry points resolved from libc, which has none of them: every call fails with
    /// `SymbolMissing` before reaching C.
    fn driver_without_symbols() -> &'static Driver {
        static FAKE: OnceLock<Driver> = OnceLock::new();
        FAKE.get_or_init(|| {
            // SAFETY: libc's initialisers have run already in this process; only lookups
            // happen, and none of its functions is called (it has none of CUDA's symbols).
            unsafe {
                Library::open_first("libc", [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
                    .map(|library| Driver::new(library))
            }
            .expect("libc.so.6 loads")
        })
    }

    #[test]
    fn device_locations_carry_the_ordinal_in_either_layout() {
        let location = device_location(3);
        assert_eq!(
            location.type_,
            CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE
        );
        if_abi12! { assert_eq!(location.id, 3); }
        // SAFETY: the id is the union's only variant set.
        if_abi13! { assert_eq!(unsafe { location.__bindgen_anon_1.id }, 3); }
    }

    #[test]
    fn locations_keep_their_type_and_id_in_either_layout() {
        let node = location(CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA, 1);
        assert_eq!(
            node.type_,
            CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA
        );
        assert_eq!(location_id(&node), 1);
        assert_eq!(location_id(&device_location(5)), 5);
        assert_eq!(legacy_device(&device_location(2)), Some(2));
        let host = location(CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, 0);
        assert_eq!(legacy_device(&host), Some(cuda_sys::CU_DEVICE_CPU));
        assert_eq!(legacy_device(&node), None);
    }

    #[test]
    fn managed_hints_use_each_abis_entry_points() {
        let driver = driver_without_symbols();
        let host = location(CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, 0);
        let node = location(CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
        let advice = CUmem_advise::CU_MEM_ADVISE_SET_READ_MOSTLY;
        // SAFETY: the fake driver resolves no symbol, so nothing reaches C.
        let symbols = unsafe {
            [
                missing_symbol(mem_prefetch(driver, 0, 1, host, std::ptr::null_mut()).unwrap_err()),
                missing_symbol(mem_prefetch(driver, 0, 1, node, std::ptr::null_mut()).unwrap_err()),
                missing_symbol(mem_advise(driver, 0, 1, advice, host).unwrap_err()),
                missing_symbol(mem_advise(driver, 0, 1, advice, node).unwrap_err()),
            ]
        };
        if MAJOR < 13 {
            assert_eq!(
                symbols,
                [
                    "cuMemPrefetchAsync",
                    "cuMemPrefetchAsync_v2",
                    "cuMemAdvise",
                    "cuMemAdvise_v2"
                ]
            );
        } else {
            assert_eq!(
                symbols,
                [
                    "cuMemPrefetchAsync_v2",
                    "cuMemPrefetchAsync_v2",
                    "cuMemAdvise_v2",
                    "cuMemAdvise_v2"
                ]
            );
        }
    }

    #[test]
    fn tensor_maps_have_each_abis_alignment() {
        assert_eq!(align_of::<cuda_sys::CUtensorMap>(), TENSOR_MAP_ALIGN);
        assert_eq!(size_of::<cuda_sys::CUtensorMap>(), 128);
        assert_eq!(TENSOR_MAP_ALIGN, if MAJOR < 13 { 64 } else { 128 });
    }

    #[test]
    fn remapping_on_restore_needs_the_13_abi() {
        let driver = driver_without_symbols();
        let error = checkpoint_restore(driver, 1, &[([1; 16], [2; 16])]).unwrap_err();
        if MAJOR < 13 {
            assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        } else {
            assert!(
                error.is_symbol_missing(),
                "the call reached the driver: {error}"
            );
        }
        let plain = checkpoint_restore(driver, 1, &[]).unwrap_err();
        assert!(plain.is_symbol_missing(), "{plain}");
    }

    /// The symbol a call failed to find (it never reached C).
    fn missing_symbol(error: Error) -> &'static str {
        match error {
            Error::Load(cuda_sys::LoadError::SymbolMissing { symbol, .. }) => symbol,
            other => panic!("the call reached further than the symbol lookup: {other}"),
        }
    }

    #[test]
    fn graph_calls_use_each_abis_entry_points() {
        let driver = driver_without_symbols();
        let mut params = CUgraphNodeParams::default();
        // SAFETY: the fake driver resolves no symbol, so nothing reaches C.
        let add = unsafe { graph_add_node(driver, std::ptr::null_mut(), &[], &mut params) };
        // SAFETY: as above.
        let edge = unsafe {
            graph_add_dependency(
                driver,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        // SAFETY: as above.
        let info = unsafe { stream_capture_info(driver, std::ptr::null_mut()) };
        let symbols = [
            missing_symbol(add.unwrap_err()),
            missing_symbol(edge.unwrap_err()),
            missing_symbol(info.err().expect("no driver")),
        ];
        if MAJOR < 13 {
            assert_eq!(
                symbols,
                [
                    "cuGraphAddNode",
                    "cuGraphAddDependencies",
                    "cuStreamGetCaptureInfo_v2"
                ]
            );
        } else {
            assert_eq!(
                symbols,
                [
                    "cuGraphAddNode_v2",
                    "cuGraphAddDependencies_v2",
                    "cuStreamGetCaptureInfo_v3"
                ]
            );
        }
        assert_eq!(array_ptr::<u8>(&[]), std::ptr::null());
    }

    #[test]
    fn unequal_splits_and_workqueues_follow_the_abi() {
        let driver = driver_without_symbols();
        let input = CUdevResource::default();
        let mut result = [CUdevResource::default(); 2];
        let mut remainder = CUdevResource::default();
        let error =
            split_sm_counts(driver, &input, &[16, 8], &mut result, &mut remainder).unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert_eq!(workqueue_resource_type().is_ok(), MAJOR >= 13);
        assert_eq!(
            stated_sm_rules(&input),
            None,
            "an empty resource states nothing"
        );
    }
}
