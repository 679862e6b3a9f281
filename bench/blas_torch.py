#!/usr/bin/env python3
"""PyTorch's rows of the blas_floor.c comparison: the same measurements through torch, with
the floor's figure names, for the job that runs blas_floor.c and cuda-safe's `blas` benchmark
side by side.

- torch.matmul bf16 (bf16 out), m = n = k in {256, 1024, 4096, 8192}: `gemm_bf16_N` is
  torch.matmul(x, y) and `gemm_bf16_tn_N` torch.matmul(x, y.t()) (x, y contiguous), which reach
  cuBLAS with the floor's N/N and T/N operations (torch is row-major: it computes the
  column-major transposed product, as cuda-safe's Gemm::row_major does);
- torch.matmul f32 4096^3 with TF32 off (`sgemm_4096`) and on (`sgemm_tf32_4096`);
- the host cost of one 256^3 bf16 torch.matmul into a preallocated output
  (`gemm_bf16_256_enqueue_us`, median of 1,000 back to back) and call + synchronize
  (`gemm_bf16_256_call_plus_sync_us`).

TFLOP/s count 2*m*n*k; times are CUDA events around each call, median of 20 after 5 warm-ups,
as the floor takes them. Inputs are normal (sigma 0.5). Every product is checked at 8 entries
against a float64 dot product on the CPU with the floor's tolerance. Rows torch has no
counterpart for (f32 output from bf16, the cuBLASLt epilogues, FP8, cuRAND) are not printed.
Prints `INFO` and `FIG name value unit` lines.

usage: python3 bench/blas_torch.py
"""
import statistics
import sys
import time

import torch

WARM, TIMED = 5, 20


def fig(name, value, unit):
    print(f"FIG {name} {value:.4f} {unit}", flush=True)


def tflops(n, ms):
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


def timed(call):
    """Median milliseconds of TIMED calls (after WARM), CUDA events around each."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for round_ in range(WARM + TIMED):
        if round_ >= WARM:
            start.record()
        call()
        if round_ >= WARM:
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    torch.cuda.synchronize()
    return statistics.median(times)


def check(what, x, y, out, factor):
    """8 entries of out = x @ y against float64 dot products on the CPU."""
    n = x.shape[0]
    points = [(0, 0), (n - 1, n - 1), (n // 2, n // 3), (n // 7, n - 3), (1, n // 2 + 1),
              (n - 2, 5), (2 * n // 3, n // 5), (n // 9, 3 * n // 4)]
    worst = 0.0
    for i, j in points:
        row = x[i].double().cpu()
        col = y[:, j].double().cpu()
        want = float((row * col).sum())
        size = float((row * col).abs().sum())
        got = float(out[i, j].double().cpu())
        tolerance = 1e-2 * abs(want) + factor * size
        error = abs(got - want)
        if not error <= tolerance:
            print(f"WRONG {what} at ({i},{j}): got {got}, want {want} (tolerance {tolerance:.3e})",
                  file=sys.stderr)
            sys.exit(1)
        worst = max(worst, error / tolerance)
    print(f"check {what} ok (worst error / tolerance {worst:.3g})")


def main():
    device = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(device)
    print(f"INFO torch {torch.__version__} cuda {torch.version.cuda} device {props.name} "
          f"sm_{props.major}{props.minor}")
    generator = torch.Generator(device=device).manual_seed(20261201)
    big = 8192
    a = torch.empty(big, big, device=device).normal_(0.0, 0.5, generator=generator)
    b = torch.empty(big, big, device=device).normal_(0.0, 0.5, generator=generator)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    for n in (256, 1024, 4096, 8192):
        x, y = a16[:n, :n].contiguous(), b16[:n, :n].contiguous()
        out = torch.empty(n, n, device=device, dtype=torch.bfloat16)
        ms = timed(lambda: torch.matmul(x, y, out=out))
        check(f"torch bf16 NN {n}", x, y, out, 1e-3)
        fig(f"gemm_bf16_{n}_tflops", tflops(n, ms), "TFLOP/s")
        ms = timed(lambda: torch.matmul(x, y.t(), out=out))
        check(f"torch bf16 TN {n}", x, y.t(), out, 1e-3)
        fig(f"gemm_bf16_tn_{n}_tflops", tflops(n, ms), "TFLOP/s")

    n = 4096
    x, y = a[:n, :n].contiguous(), b[:n, :n].contiguous()
    out = torch.empty(n, n, device=device)
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        ms = timed(lambda: torch.matmul(x, y, out=out))
        check(f"torch f32 tf32={tf32} {n}", x, y, out, 3e-3 if tf32 else 1e-3)
        fig("sgemm_tf32_4096_tflops" if tf32 else "sgemm_4096_tflops", tflops(n, ms), "TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False

    n = 256
    x, y = a16[:n, :n].contiguous(), b16[:n, :n].contiguous()
    out = torch.empty(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(20):
        torch.matmul(x, y, out=out)
    torch.cuda.synchronize()
    times = []
    for _ in range(1000):
        start = time.perf_counter()
        torch.matmul(x, y, out=out)
        times.append((time.perf_counter() - start) * 1e6)
    torch.cuda.synchronize()
    fig("gemm_bf16_256_enqueue_us", statistics.median(times), "us")
    times = []
    for _ in range(1000):
        start = time.perf_counter()
        torch.matmul(x, y, out=out)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    fig("gemm_bf16_256_call_plus_sync_us", statistics.median(times), "us")
    check("torch bf16 NN 256 (host-cost loop)", x, y, out, 1e-3)
    print("DONE")


if __name__ == "__main__":
    main()
