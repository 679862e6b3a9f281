// A 2-D tile copy through TMA (sm_90): each block of one warp copies one BOX_W x BOX_H tile of
// floats from `src` to `dst`. Thread 0 loads the tile into shared memory with
// cp.async.bulk.tensor (completing on an mbarrier), then stores it with the bulk tensor store.
// Out-of-bounds parts of edge tiles are zero-filled on the load and clipped on the store.
// Used through tma/common.rs by the tma_copy example, the TMA GPU tests and benches/link.rs.

struct alignas(64) TensorMap { unsigned long long opaque[16]; };

constexpr unsigned BOX_W = 64;
constexpr unsigned BOX_H = 32;
constexpr unsigned TILE_BYTES = BOX_W * BOX_H * sizeof(float);

extern "C" __global__ void tma_copy(const __grid_constant__ TensorMap src,
                                    const __grid_constant__ TensorMap dst) {
    __shared__ alignas(128) float tile[BOX_H * BOX_W];
    __shared__ alignas(8) unsigned long long barrier;
    if (threadIdx.x != 0) return;
    const int x = blockIdx.x * BOX_W;
    const int y = blockIdx.y * BOX_H;
    const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
    const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    const unsigned long long src_map = reinterpret_cast<unsigned long long>(&src);
    const unsigned long long dst_map = reinterpret_cast<unsigned long long>(&dst);

    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(TILE_BYTES) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem), "l"(src_map), "r"(x), "r"(y), "r"(bar) : "memory");
    asm volatile("{\n\t"
                 ".reg .pred P1;\n\t"
                 "LAB_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
                 "@P1 bra DONE;\n\t"
                 "bra LAB_WAIT;\n\t"
                 "DONE:\n\t"
                 "}" :: "r"(bar), "r"(0u) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(dst_map), "r"(x), "r"(y), "r"(smem) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
