//! The layouts that differ between the CUDA 12 and 13 ABIs, reached as a crate built on this
//! one reaches them: through the ABI macros.

use cuda_sys::{CUmemLocation, CUmemLocationType, if_abi12, if_abi13};

#[test]
fn fields_that_differ_between_the_abis_are_reached_through_the_macros() {
    let mut location = CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        ..Default::default()
    };
    if_abi12! { location.id = 3; }
    if_abi13! { location.__bindgen_anon_1.id = 3; }
    let id = {
        if_abi12! { location.id }
        // SAFETY: `id` is the union member written above.
        if_abi13! { unsafe { location.__bindgen_anon_1.id } }
    };
    assert_eq!(id, 3);
    assert_eq!(
        location.type_,
        CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE
    );
}
