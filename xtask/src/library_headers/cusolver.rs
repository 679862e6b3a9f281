//! cuSOLVER's pinned wheels (see [`CUSOLVER`]).

use super::{LibraryWheels, PinnedWheel, wheel};

/// cuSOLVER: the `nvidia-cusolver-cu12` (CUDA 12: cuSOLVER 11, `libcusolver.so.11`) and
/// `nvidia-cusolver` (CUDA 13: cuSOLVER 12, `libcusolver.so.12`) wheels. The CUDA 12 bindings
/// are those of CUDA 12.9.1 (cuSOLVER 11.7.5.82), the CUDA 13 ones those of CUDA 13.5 (cuSOLVER
/// 12.4.1.2), the newest on PyPI when they were generated. `cusolverDn.h` includes
/// `cublas_v2.h`, taken from the pinned cuBLAS wheel of the same major (see [`super::CUBLAS`]).
pub const CUSOLVER: LibraryWheels = LibraryWheels {
    name: "cuSOLVER",
    bindings: [
        wheel(
            "nvidia-cusolver-cu12",
            "11.7.5.82",
            "33/40/79b0c64d44d6c166c0964ec1d803d067f4a145cca23e23925fd351d0e642/nvidia_cusolver_cu12-11.7.5.82-py3-none-manylinux_2_27_x86_64.whl",
            &[
                "06a89787eb12965ecac70863a92b9526f483c5e072aa3db17c02b42b2a06dcab  cusolverDn.h",
                "746e7f0086a783786a54abfa2eab287aee5bbbaa3146ba39e3c4b71ae67d3d24  cusolver_common.h",
            ],
        ),
        wheel(
            "nvidia-cusolver",
            "12.4.1.2",
            "78/4f/c5c926dbe0100e485c3ef86022ba3f6799fc57df6f9a73aaadeb7ab368fe/nvidia_cusolver-12.4.1.2-py3-none-manylinux_2_27_x86_64.whl",
            &[
                "36e07e3f13add9d18bb7e2adaea8d2a871e4c5c113afb994a170517cfde5f344  cusolverDn.h",
                "ac8a34f028c0def666776b69b7416b01444a944170b885a88ebcb9c36e7c9e76  cusolver_common.h",
            ],
        ),
    ],
    history: [CUSOLVER_HISTORY_12, CUSOLVER_HISTORY_13],
};

/// The cuSOLVER 11 minor releases before the pinned one.
const CUSOLVER_HISTORY_12: &[PinnedWheel] = &[
    wheel(
        "nvidia-cusolver-cu12",
        "11.4.5.107",
        "bc/1d/8de1e5c67099015c834315e333911273a8c6aaba78923dd1d1e25fc5f217/nvidia_cusolver_cu12-11.4.5.107-py3-none-manylinux1_x86_64.whl",
        &[
            "f0a51ca94c563ebf23a73dd95694c1e88dc85cc99ed6893b13bbe2f575ca4739  cusolverDn.h",
            "f123022c43e430df4d8bf280364bcf4870a2795d63ad3011b92f8c866baae47f  cusolver_common.h",
        ],
    ),
    wheel(
        "nvidia-cusolver-cu12",
        "11.5.4.101",
        "04/70/79f0033d97e6025e386898d129dcaccee4d222b09cfa8d313db94a605462/nvidia_cusolver_cu12-11.5.4.101-py3-none-manylinux1_x86_64.whl",
        &[
            "942e22beb45636ec59da2287273985d38f95792ace7dcca9b9e8fbf1e039bff5  cusolverDn.h",
            "dba74064ed152d2b1408f9d2c0f1b2bdd287dada318b25fc6e820dceeac0e417  cusolver_common.h",
        ],
    ),
    wheel(
        "nvidia-cusolver-cu12",
        "11.6.4.69",
        "47/54/e18b69f26e62620d331931db4b13bb9fee571c0a7427abcf209895bf706e/nvidia_cusolver_cu12-11.6.4.69-py3-none-manylinux2014_x86_64.whl",
        &[
            "bec7bdf10fbd4a75c53cc00e5a5d8c1ed16eb6a8609647552a377a45593313da  cusolverDn.h",
            "a20fe67043bd4d97aae412b5755758690f0716374ca2fe65017d3da662c14db8  cusolver_common.h",
        ],
    ),
];

/// The cuSOLVER 12 minor releases before the pinned one.
const CUSOLVER_HISTORY_13: &[PinnedWheel] = &[
    wheel(
        "nvidia-cusolver",
        "12.0.9.81",
        "5b/75/3fb6ba779d87e9a507e8f3b5a64e2e6f6c83d45a86d8c9e67601cffcd117/nvidia_cusolver-12.0.9.81-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "d2218a53beeaef8d5f7c1a2724b7da3813dc26462f90d473a304d8e86360b158  cusolverDn.h",
            "5e7c9d7fba773d6048fd412450d9726b943fbfd449ffe86346974ba25717b901  cusolver_common.h",
        ],
    ),
    wheel(
        "nvidia-cusolver",
        "12.1.0.51",
        "ec/3a/6ee9b1c6632ec9cc0339996ffb331e5a8cbedcd361f7d4d0b63d48519a28/nvidia_cusolver-12.1.0.51-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "8d620eab0a3433baa9ee6309bec968633647a743c970bdc00a469eefab07f0e9  cusolverDn.h",
            "42228fa7282c24c21f1844a9bcc43212f171b083afe10e8f232a24110b1c61b0  cusolver_common.h",
        ],
    ),
    wheel(
        "nvidia-cusolver",
        "12.2.6.9",
        "1c/3a/23e46a0919ba5ecf1a864400542a6c78d18c76893a0a77e1856e7033af31/nvidia_cusolver-12.2.6.9-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "1129df72482fe09273403cfaef9ad9f1609fcd443f7fd360c95d79ab0568ca79  cusolverDn.h",
            "7ee7e67316f8b2c62a79b1cd516c773ba2870971b503b60d1a3705c75c6aeb34  cusolver_common.h",
        ],
    ),
    wheel(
        "nvidia-cusolver",
        "12.3.5.3",
        "a4/84/8dd51f4d5f702dad6fde8d49732d95b53a2744abbd2baa98399d4b792533/nvidia_cusolver-12.3.5.3-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "96c3f451b0da36a03d17e8819e62a7dd9d3d59765a393e51b73e8ebd597e2bdd  cusolverDn.h",
            "1817a4978cf275c8395fb5bb679935f95280bc3e825368f601176408f732d7ed  cusolver_common.h",
        ],
    ),
];
