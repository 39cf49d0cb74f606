// Data movement: strided copies (permute, broadcast, slice), host-planned gathers and the
// deterministic scatter-add (each output folds its sources in a fixed order; no atomics).

// y[i] = x at the strided position of i: permute, broadcast_to, slice, any strided view.
extern "C" __global__ void gather_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n, Gather g) {
    GRID_LOOP(i, n) { y[i] = x[gather_offset(g, i)]; }
}

// y[i] = x[idx[i]] for offsets planned on the host (index_select, gather, embedding).
extern "C" __global__ void take_$S(const $T* __restrict__ x, const u64* __restrict__ idx,
                                  $T* __restrict__ y, u64 n) {
    GRID_LOOP(i, n) { y[i] = x[idx[i]]; }
}

// y[p] = base[p] (or 0) + src[cols[rowptr[p]]] + ... in the listed order: the CPU's sequential
// scatter-add, inverted on the host into per-output lists (CSR) so no two threads write one place.
extern "C" __global__ void scatter_csr_$S(const $T* __restrict__ base, const $T* __restrict__ src,
                                         const u64* __restrict__ rowptr,
                                         const u64* __restrict__ cols, $T* __restrict__ y, u64 n) {
    GRID_LOOP(p, n) {
        $T acc = base ? base[p] : ($T)0;
        for (u64 j = rowptr[p]; j < rowptr[p + 1]; ++j) acc = acc + src[cols[j]];
        y[p] = acc;
    }
}

// x viewed as [outer, len, inner] copied into y viewed as [outer, ylen, inner] at row yoff
// (concat pieces, slice gradients); n = outer * len * inner.
extern "C" __global__ void copy_block_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n,
                                        u64 len, u64 inner, u64 ylen, u64 yoff) {
    GRID_LOOP(i, n) {
        u64 block = len * inner;
        u64 o = i / block;
        u64 r = i - o * block;
        y[(o * ylen + yoff) * inner + r] = x[i];
    }
}

// y[pos[i]] = x[i] into a buffer already filled (positions are distinct).
extern "C" __global__ void put_$S(const $T* __restrict__ x, const u64* __restrict__ pos,
                                 $T* __restrict__ y, u64 n) {
    GRID_LOOP(i, n) { y[pos[i]] = x[i]; }
}
