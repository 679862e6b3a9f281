//! The ABI helpers' tests, against a driver table with no symbols (libc's).

use std::path::PathBuf;
use std::sync::OnceLock;

use super::graph::array_ptr;
use super::memory::legacy_device;
use super::*;
use cuda_sys::{CUdevResource, CUgraphNodeParams, CUmem_advise, CUmemLocationType};
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
    // SAFETY: as above.
    let set = unsafe { set_capture_dependencies(driver, std::ptr::null_mut(), &mut []) };
    assert_eq!(
        missing_symbol(set.unwrap_err()),
        if MAJOR < 13 {
            "cuStreamUpdateCaptureDependencies"
        } else {
            "cuStreamUpdateCaptureDependencies_v2"
        }
    );
}

#[test]
fn graph_ids_need_the_13_abi() {
    let driver = driver_without_symbols();
    // SAFETY: the fake driver resolves no symbol, so nothing reaches C.
    let errors = unsafe {
        [
            graph_id(driver, std::ptr::null_mut()).unwrap_err(),
            exec_id(driver, std::ptr::null_mut()).unwrap_err(),
            node_local_id(driver, std::ptr::null_mut()).unwrap_err(),
            node_tools_id(driver, std::ptr::null_mut()).unwrap_err(),
        ]
    };
    let names = [
        "cuGraphGetId",
        "cuGraphExecGetId",
        "cuGraphNodeGetLocalId",
        "cuGraphNodeGetToolsId",
    ];
    for (error, name) in errors.into_iter().zip(names) {
        assert!(error.is_not_supported(), "{error}");
        if MAJOR < 13 {
            assert!(matches!(error, Error::Unsupported { .. }), "{error}");
            assert!(error.to_string().contains("cuda-13 feature"), "{error}");
        } else {
            assert_eq!(missing_symbol(error), name);
        }
    }
}

#[test]
fn unequal_splits_and_workqueues_follow_the_abi() {
    let driver = driver_without_symbols();
    let input = CUdevResource::default();
    let mut result = [CUdevResource::default(); 2];
    let mut remainder = CUdevResource::default();
    let group = GroupParams::default();
    let error =
        split_sm_counts(driver, &input, &[16, 8], group, &mut result, &mut remainder).unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    assert_eq!(workqueue_resource_type().is_ok(), MAJOR >= 13);
    assert_eq!(
        stated_sm_rules(&input),
        None,
        "an empty resource states nothing"
    );
}

/// A driver without the symbols (or the `cuda-12` ABI) gives a typed refusal naming what is
/// needed: the release that introduced the entry point, or the `cuda-13` feature.
#[test]
fn green_ids_and_stream_resources_name_what_they_need() {
    let driver = driver_without_symbols();
    let cases = [
        (
            green_context_id(driver, std::ptr::null_mut()).unwrap_err(),
            "cuGreenCtxGetId",
            "CUDA 12.9",
        ),
        (
            stream_sm_resource(driver, std::ptr::null_mut())
                .err()
                .expect("no stream resource without the driver"),
            "cuStreamGetDevResource",
            "CUDA 13.1",
        ),
    ];
    for (error, symbol, release) in cases {
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(error.is_not_supported(), "{error}");
        let text = error.to_string();
        if MAJOR < 13 {
            assert!(text.contains("cuda-13 feature"), "{text}");
        } else {
            assert!(text.contains(symbol) && text.contains(release), "{text}");
        }
    }
}

/// Workqueue configuration fields are read and written in the `wqConfig` variant under 13,
/// and refused under 12 (which has none).
#[test]
fn workqueue_fields_follow_the_abi() {
    let mut resource = CUdevResource::default();
    let set = set_workqueue_fields(&mut resource, 4, 1);
    assert_eq!(set.is_ok(), MAJOR >= 13, "{set:?}");
    let expected = (MAJOR >= 13).then_some((4, 1));
    assert_eq!(workqueue_fields(&resource), expected);
}

/// A resource kept by the crate names no further resource: the driver's link is cleared.
#[test]
fn kept_resources_are_unlinked() {
    let resource = CUdevResource::default();
    cuda_sys::if_abi13! {
        let mut next = CUdevResource::default();
        let resource = CUdevResource {
            nextResource: &mut next,
            ..resource
        };
    }
    let kept = unlinked(resource);
    cuda_sys::if_abi13! {
        assert!(kept.nextResource.is_null());
    }
    assert_eq!(kept.type_, resource.type_);
}
