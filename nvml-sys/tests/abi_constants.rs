//! The constants of one ABI only, reached as a crate built on this one reaches them: through
//! the ABI macros.

use nvml_sys::{ABI_MAJOR, if_abi12, if_abi13};

#[test]
fn constants_of_one_abi_are_reached_through_the_macros() {
    let initial_cursor: Option<u64> = {
        if_abi12! { None }
        if_abi13! { Some(nvml_sys::NVML_CPER_CURSOR_HANDLE_INIT) }
    };
    assert_eq!(initial_cursor.is_some(), ABI_MAJOR == 13);
    assert_eq!(initial_cursor.unwrap_or(0), 0);
}
