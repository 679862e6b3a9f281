//! cuRAND's pinned wheels (see [`CURAND`]).

use super::{LibraryWheels, PinnedWheel, wheel};

/// cuRAND: the `nvidia-curand-cu12` (CUDA 12: cuRAND 10.3) and `nvidia-curand` (CUDA 13:
/// cuRAND 10.4) wheels. cuRAND numbers its releases apart from CUDA (and its soname stays
/// `libcurand.so.10` under both majors): its minor stays put through a CUDA major, so a date by
/// minor release cannot tell its releases apart. Its history is the oldest release of each
/// major on PyPI (10.3.1, CUDA 12.0's; 10.4.0, CUDA 13.0's): every release from those to the
/// pinned ones declares the same 29 functions (checked when they were pinned), so no entry
/// point is dated, and one added later would be dated by the pinned release.
pub const CURAND: LibraryWheels = LibraryWheels {
    name: "cuRAND",
    bindings: [
        wheel(
            "nvidia-curand-cu12",
            "10.3.10.19",
            "31/44/193a0e171750ca9f8320626e8a1f2381e4077a65e69e2fb9708bd479e34a/nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_x86_64.whl",
            &["4a21579dc1e0bd7004887ce1e87294fc02afd4c3efba447bbecbd6dfffb74902  curand.h"],
        ),
        wheel(
            "nvidia-curand",
            "10.4.5.25",
            "12/63/636e5dc9afb2959bfc0042a357d5567358df829b66c96d9fc36d77dc0596/nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl",
            &["c26087dd7ff6b8715aba28a3f2333f9b5b2fb9e0d6f74008513ddc1b78a5ea4e  curand.h"],
        ),
    ],
    history: [CURAND_HISTORY_12, CURAND_HISTORY_13],
};

/// The oldest cuRAND 10.3 (CUDA 12.0's; see [`CURAND`]).
const CURAND_HISTORY_12: &[PinnedWheel] = &[wheel(
    "nvidia-curand-cu12",
    "10.3.1.124",
    "c9/15/5361322b298e46f01f0ae4dbdad4548f4baca8e28b6b74efdf008956db07/nvidia_curand_cu12-10.3.1.124-py3-none-manylinux1_x86_64.whl",
    &["5acce9788285680587c08a3d46ed9717adf9d70aef47de3a17f59a23f7cc7547  curand.h"],
)];

/// The oldest cuRAND 10.4 (CUDA 13.0's; see [`CURAND`]).
const CURAND_HISTORY_13: &[PinnedWheel] = &[wheel(
    "nvidia-curand",
    "10.4.0.35",
    "a5/9f/be0a41ca4a4917abf5cb9ae0daff1a6060cc5de950aec0396de9f3b52bc5/nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl",
    &["2644c6c6500e1e11ee63cdfff3ce84284e8cae5a0785d6c587b6dda90e10369b  curand.h"],
)];
