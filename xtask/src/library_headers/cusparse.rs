//! cuSPARSE's pinned wheels (see [`CUSPARSE`]).

use super::{LibraryWheels, PinnedWheel, wheel};

/// cuSPARSE: the `nvidia-cusparse-cu12` (CUDA 12) and `nvidia-cusparse` (CUDA 13) wheels. Its
/// soname is `libcusparse.so.12` under both majors: cuSPARSE 12.0 to 12.5 came with CUDA 12,
/// and CUDA 13 continued the numbering from 12.6. The CUDA 12 bindings are those of CUDA 12.9.1
/// (cuSPARSE 12.5.10.65), the CUDA 13 ones those of CUDA 13.5 (cuSPARSE 12.9.4.2), the newest on
/// PyPI when they were generated.
pub const CUSPARSE: LibraryWheels = LibraryWheels {
    name: "cuSPARSE",
    bindings: [
        wheel(
            "nvidia-cusparse-cu12",
            "12.5.10.65",
            "12/46/b0fd4b04f86577921feb97d8e2cf028afe04f614d17fb5013de9282c9216/nvidia_cusparse_cu12-12.5.10.65-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            &["8b25f5a9f8f87429077301568df9b35d74d80f44eb3701c1d54e5884f77b62c3  cusparse.h"],
        ),
        wheel(
            "nvidia-cusparse",
            "12.9.4.2",
            "30/7a/9928f812629a0e871871f2692cf5618857c51bf7093c7ecf2f78d17f9255/nvidia_cusparse-12.9.4.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            &["dda2149ec59c37df146525a925d03210256bbbfe637ac029ed42b059256f2481  cusparse.h"],
        ),
    ],
    history: [CUSPARSE_HISTORY_12, CUSPARSE_HISTORY_13],
};

/// The cuSPARSE minor releases of CUDA 12 before the pinned one.
const CUSPARSE_HISTORY_12: &[PinnedWheel] = &[
    wheel(
        "nvidia-cusparse-cu12",
        "12.0.2.55",
        "d9/aa/fedf2a3900120c23b75d8ddfcdac834d0498bba0e5902eb49e68d1b80a26/nvidia_cusparse_cu12-12.0.2.55-py3-none-manylinux1_x86_64.whl",
        &["631eb59199dcc3a230436044d13aafd54dd392c3da78e199c8ca3969f83e03a2  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse-cu12",
        "12.1.3.153",
        "65/50/223c1941f7929701e5c841b67797d0c65fd70b3a999ee2efb9fd8a372c75/nvidia_cusparse_cu12-12.1.3.153-py3-none-manylinux1_x86_64.whl",
        &["4ee5ea3ee915512bbb86b9d3e651b875a29eb3700ec4d6e9a1dee14eb8105b16  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse-cu12",
        "12.2.0.103",
        "54/aa/db44573b6159a104e15d372e3739ad76bc036dee80f1fe6ba4618f476986/nvidia_cusparse_cu12-12.2.0.103-py3-none-manylinux1_x86_64.whl",
        &["0ee7530256b1b3905ce1db3fef46ac909381b7d75247747c0eafe6a65fdbebef  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse-cu12",
        "12.3.1.170",
        "db/f7/97a9ea26ed4bbbfc2d470994b8b4f338ef663be97b8f677519ac195e113d/nvidia_cusparse_cu12-12.3.1.170-py3-none-manylinux2014_x86_64.whl",
        &["83e8f2695e6705d9c213139540e77b95fe25301a11dcabeb8a23475285cd817c  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse-cu12",
        "12.4.1.24",
        "30/53/2b387ba0702c47989896effa0f1ff29b6aeb1899b54c6044e67b6e304f50/nvidia_cusparse_cu12-12.4.1.24-py3-none-manylinux2014_x86_64.whl",
        &["f4203dcbe8ad16adfda32f7ab86f98656db3c33daba2bd54d7fb4f51d49ea431  cusparse.h"],
    ),
];

/// The cuSPARSE minor releases of CUDA 13 before the pinned one.
const CUSPARSE_HISTORY_13: &[PinnedWheel] = &[
    wheel(
        "nvidia-cusparse",
        "12.6.3.3",
        "fa/18/623c77619c31d62efd55302939756966f3ecc8d724a14dab2b75f1508850/nvidia_cusparse-12.6.3.3-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &["23f0be6da496494dfc2368cbdca0f3c4b192b8e4fcaaf012760d4a50d5060522  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse",
        "12.7.10.12",
        "bc/46/3a9700cc13f30c9279af9a862363535c814fa27597199b21fd93cad66237/nvidia_cusparse-12.7.10.12-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &["79f735fa5cb5fae9d0bb3a135e909623e2b8c665400f5eceed1e0eec277815fc  cusparse.h"],
    ),
    wheel(
        "nvidia-cusparse",
        "12.8.6.72",
        "80/cb/409df72613bf1c6cd9b545a257ab5489ecfd98c88cdf7ee9d7fc434e94a1/nvidia_cusparse-12.8.6.72-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &["8a2716bfbfd4e342326d0ac684962e23f45ad3c28c928c20b6eddd6bd02f0111  cusparse.h"],
    ),
];
