//! cuDNN's pinned wheels (see [`CUDNN`]); the histories are in [`super::cudnn_history`].

use super::cudnn_history::{CUDNN_HISTORY_12, CUDNN_HISTORY_13};
use super::{LibraryWheels, wheel};

/// cuDNN 9: the `nvidia-cudnn-cu12` (CUDA 12) and `nvidia-cudnn-cu13` (CUDA 13) wheels, the
/// newest cuDNN of each on PyPI when the bindings were generated (9.28.0 and 9.28.1). cuDNN
/// numbers its releases apart from CUDA, with one soname (`libcudnn.so.9`) through cuDNN 9 and
/// the same API under both CUDA majors; its wheels carry the shim `libcudnn.so.9`, which exports
/// every entry point of the headers and loads the sub-libraries (`libcudnn_graph.so.9`,
/// `libcudnn_ops.so.9`, ...) from its own folder (its RPATH is `$ORIGIN`). The histories go
/// back to cuDNN 9.0 (CUDA 12) and to the first `-cu13` wheel, 9.12 (CUDA 13); there was no
/// cuDNN 9.25.0 on PyPI, and the headers `cudnn_subquadratic_ops.h` and `cudnn_gnn_ops.h`
/// appear in 9.22 and 9.26.
pub const CUDNN: LibraryWheels = LibraryWheels {
    name: "cuDNN",
    bindings: [
        wheel(
            "nvidia-cudnn-cu12",
            "9.28.0.42",
            "ce/64/56ce3cad192cc75b50da3be44e36741ba963c84d3d2ca10aaa5ec16c49c3/nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl",
            &[
                "1c926a330ff35736b3b5af7f4ac32ad8c35c72e0dbcfc952f78bed59a4e7b05c  cudnn.h",
                "870ca0d2f769fd7d459f2e7cb78e8d046cdc46ebeac2915707a2f140ac15275e  cudnn_version.h",
                "e66885d07df060c7fa6c924a83fae60eb2cc1888c776ac0c0fb2927be1deaa00  cudnn_graph.h",
                "b1c0713b7b5023724e149a1fdd0a304fa4f850bf5de3ec3f371129ed6809d4eb  cudnn_ops.h",
                "6cc0b7a32461e82c3d90ce3d8100a28d429b1ea774a2ccaac3c5568e104da87b  cudnn_cnn.h",
                "2798a3a8ca8d1dbebe0f2843fe425a5530b6d606b709ca9301d0c75e782e7d93  cudnn_adv.h",
                "9b8c01398bed1f1f4264839884ca500230e8ec9c3553606db515f0680eb94c8f  cudnn_subquadratic_ops.h",
                "37737bddc08f5f2cf745fcd14800afc3ee09c14ccde7d8e207e14e08a40edfa2  cudnn_gnn_ops.h",
            ],
        ),
        wheel(
            "nvidia-cudnn-cu13",
            "9.28.1.4",
            "ef/6f/94535c450d44a68ef0b43d7a5e54c0e5ecda2ca3db7daec5d54c8d94e0d8/nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl",
            &[
                "1c926a330ff35736b3b5af7f4ac32ad8c35c72e0dbcfc952f78bed59a4e7b05c  cudnn.h",
                "e0b1727561042f03446d7a9fb2386cf8b9cd9b18e4690d7307fb9bc9ec3610d5  cudnn_version.h",
                "ab5530c054c6fabae53de7d8694d32342f8d996e0216ed161121bce95404b5ac  cudnn_graph.h",
                "a084d6663ee6d36d37002854a951a0ea6bd160949940bfe8572e7f8746d671f8  cudnn_ops.h",
                "9bdf1e7fd3271b47e8ddc8946f1eba89599ba5a94262f336be0d759354ed0a85  cudnn_cnn.h",
                "d4e92442ada68c82a198f2b7f20d8e68a99d912e2d8fa2c9e35c15a9584af373  cudnn_adv.h",
                "9b8c01398bed1f1f4264839884ca500230e8ec9c3553606db515f0680eb94c8f  cudnn_subquadratic_ops.h",
                "37737bddc08f5f2cf745fcd14800afc3ee09c14ccde7d8e207e14e08a40edfa2  cudnn_gnn_ops.h",
            ],
        ),
    ],
    history: [CUDNN_HISTORY_12, CUDNN_HISTORY_13],
};
