//! cuBLAS's and cuBLASLt's pinned wheels (see [`CUBLAS`]).

use super::{LibraryWheels, PinnedWheel, wheel};

/// cuBLAS and cuBLASLt: the `nvidia-cublas-cu12` (CUDA 12) and `nvidia-cublas` (CUDA 13)
/// wheels. The CUDA 12 bindings are those of CUDA 12.9.1 (cuBLAS 12.9.1.4), the CUDA 13 ones
/// the newest cuBLAS on PyPI when they were generated; there was no cuBLAS 12.7 or 13.9.
pub const CUBLAS: LibraryWheels = LibraryWheels {
    name: "cuBLAS",
    bindings: [
        wheel(
            "nvidia-cublas-cu12",
            "12.9.1.4",
            "77/3c/aa88abe01f3be3d1f8f787d1d33dc83e76fec05945f9a28fbb41cfb99cd5/nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl",
            &[
                "d5db72cba4c8401fb29a8447e64e6b9c125a30de2c3e385242de657fe4e96cbe  cublas_api.h",
                "ab131d0798dbf7b96e11fc3ad4b10007e5a5afc03d0cb06f3b8ad1ca90c234ac  cublas_v2.h",
                "668ffbafe6511d692887201fd632e8b63c74281196621eef5769ba7cb33b4c5a  cublasLt.h",
            ],
        ),
        wheel(
            "nvidia-cublas",
            "13.10.0.20",
            "b4/12/16628161ed8c109c8c73b38167df50cbc630a8a6e6548e2534d461526c3c/nvidia_cublas-13.10.0.20-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
            &[
                "1c98178eae8101e2e8d8d34c9a1c21aa1907d6f51de2e4de12086f34c3ad6c51  cublas_api.h",
                "78514be9bda58bf84a21eb35a8d31b6744562a62beab78757ce22eae7c6f1b26  cublas_v2.h",
                "95268583832b0da6daaa7a7fb2c4d6c560d15e5fe5ea77f3f4ff715125452ab4  cublasLt.h",
            ],
        ),
    ],
    history: [CUBLAS_HISTORY_12, CUBLAS_HISTORY_13],
};

/// The cuBLAS 12 minor releases before the pinned one.
const CUBLAS_HISTORY_12: &[PinnedWheel] = &[
    wheel(
        "nvidia-cublas-cu12",
        "12.0.2.224",
        "a5/41/8be544a514aa0a1888d61bb6a118263895a194d27d9674d3c9222ff85dc0/nvidia_cublas_cu12-12.0.2.224-py3-none-manylinux1_x86_64.whl",
        &[
            "93da27815aa938559996a73a546b6046903022f4824100ca4a08237e75a20338  cublas_api.h",
            "91ce3100cc54710d97486a2000b330d6a58e179b1ec40bb3a1e05e9618a7cb7e  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.1.3.1",
        "37/6d/121efd7382d5b0284239f4ab1fc1590d86d34ed4a4a2fdb13b30ca8e5740/nvidia_cublas_cu12-12.1.3.1-py3-none-manylinux1_x86_64.whl",
        &[
            "855f77a1efc81fb63b9ef1300cdc37ec048950a0e4760b13010af4b33bc98a70  cublas_api.h",
            "41a75a83d51c70ec2de9ccc0975abcf4c30966475d07653dcf42945e88ada0b7  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.2.5.6",
        "b6/6a/e8cca34f85b18a0280e3a19faca1923f6a04e7d587e9d8e33bc295a52b6d/nvidia_cublas_cu12-12.2.5.6-py3-none-manylinux1_x86_64.whl",
        &[
            "2cbb5191da0562b0ef388972ca61f58dfc333a57e24cef61077a911340a14d7a  cublas_api.h",
            "e752b21d073b4fdaf19957cd8a63fd3babe46bc26a05d79b8d928258a65a92de  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.3.4.1",
        "74/aa/f0e402ab0c1aa371e3143ed0b79744ebd6091307087cda59e3249f45cac8/nvidia_cublas_cu12-12.3.4.1-py3-none-manylinux1_x86_64.whl",
        &[
            "ea02d17bb01facd1346d198ac27d591c75af8c51bd8d6da3fc0b16acbb5c157a  cublas_api.h",
            "e752b21d073b4fdaf19957cd8a63fd3babe46bc26a05d79b8d928258a65a92de  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.4.5.8",
        "ae/71/1c91302526c45ab494c23f61c7a84aa568b8c1f9d196efa5993957faf906/nvidia_cublas_cu12-12.4.5.8-py3-none-manylinux2014_x86_64.whl",
        &[
            "5d102b9600f2ff8856b84b7c5da7d1b04f4a449e57568d3a361d75ddc820fbba  cublas_api.h",
            "e752b21d073b4fdaf19957cd8a63fd3babe46bc26a05d79b8d928258a65a92de  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.5.3.2",
        "f9/43/a5365b345c989d9f7de2f2406e59b4a792ba3541b5d47edda5031b2730a6/nvidia_cublas_cu12-12.5.3.2-py3-none-manylinux2014_x86_64.whl",
        &[
            "54401e9df5903b21b295d00ff5237c3f3795ff0cf9bffcc3d8bd197ede79333e  cublas_api.h",
            "e752b21d073b4fdaf19957cd8a63fd3babe46bc26a05d79b8d928258a65a92de  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.6.4.1",
        "af/eb/ff4b8c503fa1f1796679dce648854d58751982426e4e4b37d6fce49d259c/nvidia_cublas_cu12-12.6.4.1-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "432fbd9b7646e2cdd612d9fe654de61fafc5918fa351b34f0c4f1f22f2f2c7a2  cublas_api.h",
            "b470a81ab627ba279d4add5a0dd790da4b256df5cb7a9db33865badb9d870bfd  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas-cu12",
        "12.8.4.1",
        "dc/61/e24b560ab2e2eaeb3c839129175fb330dfcfc29e5203196e5541a4c44682/nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "03826fbfd7a5be82480f0f117943fba819d2c44bddb2573e8215bfc9cabfa805  cublas_api.h",
            "a07f53474d47e4259f18f223264ebe2e383c7903aed20868ed336df378029b08  cublasLt.h",
        ],
    ),
];

/// The cuBLAS 13 minor releases before the pinned one.
const CUBLAS_HISTORY_13: &[PinnedWheel] = &[
    wheel(
        "nvidia-cublas",
        "13.0.2.14",
        "28/d4/30e630055d8e0f7058cc0d39e562c965d692f4735537d3f02f45d579a280/nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "ff39aab679599c2076caf97e2751bff2187554824fdba387c2aebe104cd29d25  cublas_api.h",
            "a47b6a56a30e756043d1dd999fd5ef305ce25a4c9f398a61622af40403e43be8  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.1.2.11",
        "88/e8/b4f1cac92df9a6f930fd97caa2fcbf15c153066ff4de41f1cc2587e8f4a2/nvidia_cublas-13.1.2.11-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "12a0dcf21ba242973d20e16485a55f1d18061403b8a5727e7588ace9a6d713b3  cublas_api.h",
            "8be43fbf48625b98b8562d7df394e6af0d7ee1c05beeb5333577d5e33182fa3e  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.2.2.2",
        "41/6f/4da59ada44f89ece1bab850bcfdfcf4af5d41c62c73a4344ae0a1bb721ce/nvidia_cublas-13.2.2.2-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "435b96169478686b5eba595ac8f958d91113f6edad2abb0abe550b56b9314de6  cublas_api.h",
            "c6284e0a11864bcd89f59f9b326d85a51dcad415d4e6afde3f49f5b8321c6bd1  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.3.0.5",
        "3c/7c/ae5d1751819acff18b0fac29c0a4e93d06d36cfabebe36365ddacc7c32a9/nvidia_cublas-13.3.0.5-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "7a9fec18f54db0ef918af506b709385b3ca5290832b4c71a4716edbd6f47ce82  cublas_api.h",
            "c6284e0a11864bcd89f59f9b326d85a51dcad415d4e6afde3f49f5b8321c6bd1  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.4.3.11",
        "42/4c/88be5ab23a60197dce6c4af7098be80fde0bbd146186d4908e50cc5823ab/nvidia_cublas-13.4.3.11-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "6227db27d156fa89ee06e3ba129a6ee2f039557faabbf8bb11b542a0364c1fc8  cublas_api.h",
            "c6284e0a11864bcd89f59f9b326d85a51dcad415d4e6afde3f49f5b8321c6bd1  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.5.1.27",
        "ce/0d/cc77458e8fb0634597e3994650c2853ee785f2fc61bf370bbb304021cca1/nvidia_cublas-13.5.1.27-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "fcfd3456bdc5d0f20a219a008a57390fd73ca81e8853f4180431cc24dc66af0e  cublas_api.h",
            "6dbb2e5d45751e8dc0dce5254a840e0c0f459fadc81b7dc8c155099a1c53849e  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.6.2.16",
        "f0/87/50def43754663bd51812e244ff391a1fbadff35aa92e7c0bf703762d7302/nvidia_cublas-13.6.2.16-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "56924188a3984c2168dbee96fb8ec64f605c3f8edaa94e25f06926ca057f0e97  cublas_api.h",
            "36e8db9e46c95af62bfcd796aa6091d6922adb592a219f6a30957e3cd5ead495  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.7.0.27",
        "da/b3/358ee3e2237d4d663cd7a50e4dae3b07bbc5c93bf1eab034c17d66b7e428/nvidia_cublas-13.7.0.27-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "c1b432ebf9d61aedfac3230c456c7501f7925a2e5a8951172f47bb58d2e093a4  cublas_api.h",
            "e8d82298d0cd6223960a062c230d0d842c884d4a65dd79d592154ea318cb9af9  cublasLt.h",
        ],
    ),
    wheel(
        "nvidia-cublas",
        "13.8.2.12",
        "04/36/c6f716dbd080fa030e6056261f238fb82c2b78d94e5074460740f61384b3/nvidia_cublas-13.8.2.12-py3-none-manylinux_2_27_x86_64.whl",
        &[
            "f812cecf2d8bc1b55c3ef1e5e474df8dad447d6246f7e0626451a4d84722627c  cublas_api.h",
            "95268583832b0da6daaa7a7fb2c4d6c560d15e5fe5ea77f3f4ff715125452ab4  cublasLt.h",
        ],
    ),
];
