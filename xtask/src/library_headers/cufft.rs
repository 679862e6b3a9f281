//! cuFFT's pinned wheels (see [`CUFFT`]).

use super::{LibraryWheels, PinnedWheel, wheel};

/// cuFFT: the `nvidia-cufft-cu12` (CUDA 12: cuFFT 11, `libcufft.so.11`) and `nvidia-cufft`
/// (CUDA 13: cuFFT 12, `libcufft.so.12`) wheels. The CUDA 12 bindings are those of CUDA 12.9.1
/// (cuFFT 11.4.1.4), the CUDA 13 ones those of CUDA 13.5 (cuFFT 12.5.0.14), the newest on PyPI
/// when they were generated; there was no cuFFT 11.1.
pub const CUFFT: LibraryWheels = LibraryWheels {
    name: "cuFFT",
    bindings: [
        wheel(
            "nvidia-cufft-cu12",
            "11.4.1.4",
            "95/f4/61e6996dd20481ee834f57a8e9dca28b1869366a135e0d42e2aa8493bdd4/nvidia_cufft_cu12-11.4.1.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            &[
                "f460ee4623b326e3bad73443848a56a45ed71e9f055d238894724da083303994  cudalibxt.h",
                "949742cc832e5f966d8626b0cc39d0faa978f17898443a61d257b5dc9c1eb1e1  cufft.h",
                "47731414730da8c69eef51f014a3cf712848d474c96c725876bafe711bea5def  cufftXt.h",
            ],
        ),
        wheel(
            "nvidia-cufft",
            "12.5.0.14",
            "c6/8f/f909edaadf9a7acf1b92f805a384b6984193bd595b45005f8e320d4170cf/nvidia_cufft-12.5.0.14-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            &[
                "f460ee4623b326e3bad73443848a56a45ed71e9f055d238894724da083303994  cudalibxt.h",
                "c53c63486b71b84f8269d4248728d8d1de5a5866b9efcd0b25c8712e4d35858b  cufft.h",
                "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
            ],
        ),
    ],
    history: [CUFFT_HISTORY_12, CUFFT_HISTORY_13],
};

/// The cuFFT 11 minor releases before the pinned one.
const CUFFT_HISTORY_12: &[PinnedWheel] = &[
    wheel(
        "nvidia-cufft-cu12",
        "11.0.12.1",
        "bc/51/a56eea38a13f8727c0f5a6e39677e588dc1488c3bfae4c944aa4c23f02ae/nvidia_cufft_cu12-11.0.12.1-py3-none-manylinux1_x86_64.whl",
        &[
            "4a5d0a6dc065ed9de6d43a035a639c6843ebd44bcdf09d027625348ba35ae497  cufft.h",
            "7a2dedab6c30543c40c5b6f0d5d3132e51e0d84a4327df9d88a202f3bc428307  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft-cu12",
        "11.2.6.59",
        "76/bd/68c5d14d211736c36a3ccf9f1ccd799bf8a572acc57b91a68b5432cfa4d9/nvidia_cufft_cu12-11.2.6.59-py3-none-manylinux2014_x86_64.whl",
        &[
            "ff98835dc570c7a04e32492d8a3ec6551c058514317a50d1bce34dbba4922361  cufft.h",
            "6d3328f62c583e7f859eb0b0d95619d975700d84fb37c5ab45d5e9e029818a56  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft-cu12",
        "11.3.3.83",
        "1f/13/ee4e00f30e676b66ae65b4f08cb5bcbb8392c03f54f2d5413ea99a5d1c80/nvidia_cufft_cu12-11.3.3.83-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "297d0c7cffef22b8215e1d27c5a2dfd4fc60da0882997f2c25a0a40db86d5a8a  cufft.h",
            "47731414730da8c69eef51f014a3cf712848d474c96c725876bafe711bea5def  cufftXt.h",
        ],
    ),
];

/// The cuFFT 12 minor releases before the pinned one.
const CUFFT_HISTORY_13: &[PinnedWheel] = &[
    wheel(
        "nvidia-cufft",
        "12.0.0.61",
        "a8/2f/7b57e29836ea8714f81e9898409196f47d772d5ddedddf1592eadb8ab743/nvidia_cufft-12.0.0.61-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "ab33889d803d807d8112c9f79886b85ad836a754fe9a5c9ddc60681f30560413  cufft.h",
            "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft",
        "12.1.0.78",
        "5d/98/db43880ac42210eb85916446c8f6e6daf51ec538951fed654d2dc9fb327d/nvidia_cufft-12.1.0.78-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "1e5cf895a896eb64aa41735882cfa9076f72cc152849f82376fb7e6ffd3492db  cufft.h",
            "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft",
        "12.2.0.57",
        "41/28/868ed0c6ade5e6a75b25166b3cf191f4a2ff58ad618c1e40befb776c97c5/nvidia_cufft-12.2.0.57-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "2e3521215451c8c96ac6f3c2bb87c3cacb2cd4f4cafcf0edd8a677a4fc1e94a9  cufft.h",
            "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft",
        "12.3.0.29",
        "e7/00/fab4a29fa1d7eb43bc6b94de4e86312c5e425d5582e58b9641300b9dffc7/nvidia_cufft-12.3.0.29-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "9ac09a9a3e28bcbee893c6f82ee9f7819c83100c90c5eaf23abc35702e3cc35a  cufft.h",
            "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
        ],
    ),
    wheel(
        "nvidia-cufft",
        "12.4.0.43",
        "76/bf/3fea3d1c6262bded26ae00e3106432d63235954965d7785f5051ac146651/nvidia_cufft-12.4.0.43-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        &[
            "e859b655d7d3321840f33e8ad5afff9ea0c19424d23ad1ec0a589d604fa657ed  cufft.h",
            "f93d196aacdef40c71a68f5010bb4a19d33a7a798fac137add21af4885cecb1a  cufftXt.h",
        ],
    ),
];
