#!/usr/bin/env python3
"""The DLPack interop proof: PyTorch tensors scaled in place by a kernel that cuda-safe
compiles (NVRTC) and launches, through the C ABI of libcuda_safe_interop.so.

usage: python3 scale_torch.py PATH/TO/libcuda_safe_interop.so

Needs only PyTorch (with CUDA) and the standard library. Each check prints PASS or FAIL; the
exit status is 0 only when every check passed. The view-construction figures are printed, not
judged.

Ownership (the DLPack capsule protocol):
- borrowed calls (cuda_safe_scale_inplace*): the capsule keeps its name and ownership; when
  the capsule is garbage-collected, PyTorch's capsule destructor calls the deleter;
- consuming calls (cuda_safe_scale_consume*): the capsule is renamed "used_dltensor" /
  "used_dltensor_versioned" first, so its destructor leaves the tensor alone, and the library
  calls the deleter exactly once before it returns.
In both cases the Python tensor keeps its storage alive, so nothing is freed early.

Streams (DLPack's `stream` rule): each call passes the stream the tensor is used on
(`torch.cuda.current_stream().cuda_stream`, here a side stream with the producer's work still
running on it), and the library's kernel is queued there, after that work.
"""

import ctypes
import sys
import time

import torch
import torch.utils.dlpack

# PyCapsule_SetName keeps the pointer it is given: these bytes objects live as long as the
# module, so the names stay valid for every capsule renamed with them.
DLTENSOR = b"dltensor"
DLTENSOR_VERSIONED = b"dltensor_versioned"
USED_DLTENSOR = b"used_dltensor"
USED_DLTENSOR_VERSIONED = b"used_dltensor_versioned"

FACTOR = 2.5
VIEW_ITERATIONS = 1_000_000
ROUND_TRIPS = 20_000

capsule_api = ctypes.pythonapi
capsule_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
capsule_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_api.PyCapsule_GetName.restype = ctypes.c_char_p
capsule_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
capsule_api.PyCapsule_SetName.restype = ctypes.c_int
capsule_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

failures = []


def check(name, ok, detail=""):
    """Prints one check's outcome and remembers failures."""
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def load(path):
    """Loads the library and declares its functions."""
    lib = ctypes.CDLL(path)
    for name in (
        "cuda_safe_scale_inplace",
        "cuda_safe_scale_inplace_versioned",
        "cuda_safe_scale_consume",
        "cuda_safe_scale_consume_versioned",
    ):
        function = getattr(lib, name)
        function.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t]
        function.restype = ctypes.c_int
    lib.cuda_safe_view_construction_ns.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint64,
        ctypes.POINTER(ctypes.c_double),
        ctypes.POINTER(ctypes.c_double),
    ]
    lib.cuda_safe_view_construction_ns.restype = ctypes.c_int
    lib.cuda_safe_last_error.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.cuda_safe_last_error.restype = ctypes.c_size_t
    return lib


def last_error(lib):
    """This thread's last failure message, copied into a buffer Python owns."""
    length = lib.cuda_safe_last_error(None, 0)
    buffer = ctypes.create_string_buffer(length + 1)
    lib.cuda_safe_last_error(buffer, len(buffer))
    return buffer.value.decode("utf-8", "replace")


def legacy_capsule(tensor):
    """A "dltensor" capsule and the DLManagedTensor* inside it."""
    capsule = torch.utils.dlpack.to_dlpack(tensor)
    return capsule, capsule_api.PyCapsule_GetPointer(capsule, DLTENSOR)


def versioned_capsule(tensor):
    """A "dltensor_versioned" capsule and its pointer, or (None, None) when this PyTorch
    does not export DLPack 1.x."""
    try:
        capsule = tensor.__dlpack__(max_version=(1, 0))
    except TypeError:
        return None, None
    if capsule_api.PyCapsule_GetName(capsule) != DLTENSOR_VERSIONED:
        return None, None
    return capsule, capsule_api.PyCapsule_GetPointer(capsule, DLTENSOR_VERSIONED)


def scale_and_check(lib, name, function, make_base, view_of, make_capsule, rename=None):
    """Scales `view_of(make_base())` through `function` and compares the whole base tensor
    with PyTorch's own in-place product on a clone.

    The producer's work runs on a side stream and is still running when the call is made
    (a long sleep kernel first, then the tensor's last write, and no synchronization): the
    library's kernel must be ordered after it on that stream, not on the legacy stream."""
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        base = make_base()
        expected = base.clone()
        view_of(expected).mul_(FACTOR)
        torch.cuda._sleep(50_000_000)  # about 25 ms of GPU time on the side stream
        base.add_(0.0)  # the producer's last write, queued after the sleep
        view = view_of(base)
        capsule, pointer = make_capsule(view)
    if capsule is None:
        print(f"SKIP {name}: this PyTorch exports no DLPack 1.x capsule")
        return
    if rename is not None:
        renamed = capsule_api.PyCapsule_SetName(capsule, rename) == 0
        check(f"{name}: capsule renamed", renamed)
        if not renamed:
            # The capsule still owns the tensor: handing it over would delete it twice.
            return
        rc = function(pointer, FACTOR, side.cuda_stream)
        check(f"{name}: call", rc == 0, f"rc={rc} {last_error(lib)}" if rc else "")
        side.synchronize()
        check(f"{name}: values, ordered after the producer's stream", torch.equal(base, expected),
              f"shape {tuple(view.shape)}, strides {view.stride()}")
    del capsule


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not torch.cuda.is_available():
        print("FAIL torch.cuda.is_available() is False")
        return 1
    lib = load(sys.argv[1])
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; library {sys.argv[1]}")

    def flat():
        return torch.arange(1 << 20, dtype=torch.float32, device="cuda") * 0.001 - 3.0

    def matrix():
        return torch.randn(512, 384, dtype=torch.float32, device="cuda")

    def whole(tensor):
        return tensor

    def columns_transposed(tensor):
        return tensor[:, 5:200:3].t()

    def every_other_row(tensor):
        return tensor[::2, 7:]

    scale_and_check(lib, "legacy borrowed, contiguous 1-D", lib.cuda_safe_scale_inplace,
                    flat, whole, legacy_capsule)
    scale_and_check(lib, "legacy borrowed, sliced + transposed 2-D", lib.cuda_safe_scale_inplace,
                    matrix, columns_transposed, legacy_capsule)
    scale_and_check(lib, "legacy consumed (used_dltensor)", lib.cuda_safe_scale_consume,
                    matrix, whole, legacy_capsule, rename=USED_DLTENSOR)
    scale_and_check(lib, "versioned borrowed", lib.cuda_safe_scale_inplace_versioned,
                    matrix, columns_transposed, versioned_capsule)
    scale_and_check(lib, "versioned consumed (used_dltensor_versioned)",
                    lib.cuda_safe_scale_consume_versioned, matrix, every_other_row,
                    versioned_capsule, rename=USED_DLTENSOR_VERSIONED)

    # Refusals: the wrong dtype, host memory and aliasing elements come back as errors, and
    # the tensors are untouched.
    for name, tensor in (
        ("float64 refused", torch.ones(16, dtype=torch.float64, device="cuda")),
        ("host tensor refused", torch.ones(16, dtype=torch.float32)),
        ("broadcast (aliasing) view refused",
         torch.ones(1, dtype=torch.float32, device="cuda").expand(16)),
    ):
        before = tensor.clone()
        capsule, pointer = legacy_capsule(tensor)
        rc = lib.cuda_safe_scale_inplace(pointer, FACTOR, 0)
        message = last_error(lib)
        check(name, rc < 0 and torch.equal(tensor, before) and message != "", f"rc={rc}: {message}")
        del capsule

    # View construction from DLPack, measured inside the library (no Python in the loop).
    tensor = matrix()
    capsule, pointer = legacy_capsule(tensor)
    borrowed, owned = ctypes.c_double(), ctypes.c_double()
    rc = lib.cuda_safe_view_construction_ns(pointer, VIEW_ITERATIONS, ctypes.byref(borrowed),
                                            ctypes.byref(owned))
    check("view construction measured", rc == 0, last_error(lib) if rc else "")
    if rc == 0:
        print(f"FIGURE view construction from DLPack, in Rust: borrowed {borrowed.value:.1f} ns, "
              f"owned {owned.value:.1f} ns per view ({VIEW_ITERATIONS} views of a 2-D tensor; "
              f"goal < 200 ns, cuda.core 1.0: 0.8 us)")

    # The whole trip from Python for comparison with cuda.core's figure, which includes it:
    # to_dlpack, the capsule's pointer, and one ctypes call that builds and drops views (with
    # n = 1 it builds three: the up-front check, one borrowed, one owned).
    start = time.perf_counter_ns()
    for _ in range(ROUND_TRIPS):
        capsule = torch.utils.dlpack.to_dlpack(tensor)
        lib.cuda_safe_view_construction_ns(capsule_api.PyCapsule_GetPointer(capsule, DLTENSOR), 1,
                                           ctypes.byref(borrowed), ctypes.byref(owned))
    per_trip = (time.perf_counter_ns() - start) / ROUND_TRIPS
    print(f"FIGURE from Python (to_dlpack + PyCapsule_GetPointer + one ctypes call building "
          f"the views): {per_trip / 1000:.2f} us per tensor ({ROUND_TRIPS} tensors)")

    print(f"{'FAIL' if failures else 'PASS'} interop: {len(failures)} failed check(s)"
          f"{': ' + ', '.join(failures) if failures else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
