// Softmax, NLL loss, convolution (im2col / col2im around cuBLAS) and pooling. Each kernel gives
// one thread one output and folds left from 0 in the CPU reference's order (backend/cpu/
// softmax.rs, pool.rs, conv.rs, ops/loss.rs), so the non-GEMM results repeat the CPU's bits
// wherever the math functions agree. Gradients that the CPU scatters are gathered here.

// -inf for an empty max-pool window (NVRTC has no INFINITY macro): -1/0 is exactly -inf, and
// spelled through $T it keeps each dtype's source free of the other type.
#define NN_NEG_INF (-($T)1 / ($T)0)

// ---- softmax over the middle axis of [outer, len, inner] ----
// Two passes so every thread owns one output: the lane statistics (one thread per lane), then
// one thread per element. stats[lane] = max, stats[lanes + lane] = Σ exp (or its log).

// The CPU starts its max at -inf; with len >= 1 its first step always yields x[0], so start
// there. A NaN replaces the running max (the CPU rule `v > m || isnan(v)`).
extern "C" __global__ void softmax_stats_$S(const $T* __restrict__ x, $T* __restrict__ stats,
                                           u64 n, u64 len, u64 inner, u64 log_out) {
    GRID_LOOP(lane, n) {
        u64 o = lane / inner;
        u64 base = o * len * inner + (lane - o * inner);
        $T m = x[base];
        for (u64 l = 1; l < len; ++l) {
            $T v = x[base + l * inner];
            if (v > m || isnan(v)) m = v;
        }
        $T s = ($T)0;
        for (u64 l = 0; l < len; ++l) s = s + exp$F(x[base + l * inner] - m);
        stats[lane] = m;
        stats[n + lane] = log_out ? log$F(s) : s;
    }
}

// y = exp(x - m) / s, or (x - m) - log(s); n = outer * len * inner, lanes = outer * inner.
extern "C" __global__ void softmax_apply_$S(const $T* __restrict__ x, const $T* __restrict__ stats,
                                           $T* __restrict__ y, u64 n, u64 len, u64 inner,
                                           u64 lanes, u64 log_out) {
    GRID_LOOP(k, n) {
        u64 o = k / (len * inner);
        u64 lane = o * inner + (k % inner);
        $T m = stats[lane];
        $T s = stats[lanes + lane];
        y[k] = log_out ? (x[k] - m) - s : exp$F(x[k] - m) / s;
    }
}

// Per lane Σ g (log-softmax) or Σ g·y (softmax), folded in l order.
extern "C" __global__ void softmax_grad_stats_$S(const $T* __restrict__ y, const $T* __restrict__ g,
                                                $T* __restrict__ stats, u64 n, u64 len, u64 inner,
                                                u64 log_out) {
    GRID_LOOP(lane, n) {
        u64 o = lane / inner;
        u64 base = o * len * inner + (lane - o * inner);
        $T s = ($T)0;
        for (u64 l = 0; l < len; ++l) {
            u64 k = base + l * inner;
            s = s + (log_out ? g[k] : g[k] * y[k]);
        }
        stats[lane] = s;
    }
}

// g - exp(y)·s through log-softmax, y·(g - s) through softmax.
extern "C" __global__ void softmax_grad_apply_$S(const $T* __restrict__ y, const $T* __restrict__ g,
                                                const $T* __restrict__ stats, $T* __restrict__ out,
                                                u64 n, u64 len, u64 inner, u64 log_out) {
    GRID_LOOP(k, n) {
        u64 o = k / (len * inner);
        $T s = stats[o * inner + (k % inner)];
        out[k] = log_out ? g[k] - exp$F(y[k]) * s : y[k] * (g[k] - s);
    }
}

// ---- negative log-likelihood over [rows, classes] with one target class per row ----

// One thread: -(Σ_r logp[r, t_r]) / div, the sum in row order over the rows whose target is
// not ~0 (an ignored row, backend/cpu/loss.rs nll); div is the counted rows rounded to $T on the
// host like the CPU's from_f64.
extern "C" __global__ void nll_$S(const $T* __restrict__ logp, const u64* __restrict__ target,
                                 $T* __restrict__ y, u64 n, u64 rows, u64 classes, $T div) {
    GRID_LOOP(i, n) {
        $T acc = ($T)0;
        for (u64 r = 0; r < rows; ++r)
            if (target[r] != ~(u64)0) acc = acc + logp[r * classes + target[r]];
        y[i] = -acc / div;
    }
}

// out[r, c] = 0 + w at the target (0 + w, not w: it turns -0 into +0 as the CPU's add does),
// else 0 (an ignored row's target ~0 matches no column); w = -(g / div).
extern "C" __global__ void nll_grad_$S(const $T* __restrict__ g, const u64* __restrict__ target,
                                      $T* __restrict__ out, u64 n, u64 classes, $T div) {
    GRID_LOOP(i, n) {
        u64 r = i / classes;
        $T w = -(g[0] / div);
        out[i] = (target[r] == i - r * classes) ? ($T)0 + w : ($T)0;
    }
}

// ---- matrix products with the CPU reference's fold ----

// C[b, i, j] = Σ_p A(i, p)·B(p, j) over batch b (A and B row-major, A [m, k] or, with ta, its
// transpose stored [k, m]; B [k, n] or, with tb, stored [n, k]; batch strides sa, sb, sc, 0 to
// broadcast): each output one fold over p from 0 in index order, a separate multiply and add
// (no FMA: NVRTC runs with --fmad=false), as the CPU reference kernels and the emulator's
// product fold. One thread per output; n = batch·m·n.
extern "C" __global__ void gemm_exact_$S(const $T* __restrict__ a, const $T* __restrict__ b,
                                        $T* __restrict__ c, u64 n, u64 m, u64 cols, u64 k, u64 ta,
                                        u64 tb, u64 sa, u64 sb, u64 sc) {
    GRID_LOOP(t, n) {
        u64 j = t % cols, r = t / cols;
        u64 i = r % m, batch = r / m;
        const $T* ab = a + batch * sa;
        const $T* bb = b + batch * sb;
        $T acc = ($T)0;
        for (u64 p = 0; p < k; ++p) {
            $T x = ta ? ab[p * m + i] : ab[i * k + p];
            $T y = tb ? bb[j * k + p] : bb[p * cols + j];
            acc = acc + x * y;
        }
        c[batch * sc + i * cols + j] = acc;
    }
}

// The same products, each thread computing an 8 x 8 tile of outputs (rows i0.., columns j0..):
// per p it loads 8 values of A and 8 of B and runs the 64 folds one step each, so loads per
// multiply-add drop 8-fold against one output per thread, and every output's fold is still
// acc = acc + A(i, p)·B(p, j) over p from 0 in index order: the same bits. Neighbouring
// threads take neighbouring column tiles of the same rows (A's loads are one broadcast per
// warp; a thread's 8 B values are neighbours, or k apart when B is transposed). Rows and
// columns past the edges load a clamped valid element and store nothing. No shared memory or barriers (the emulator runs threads one after another).
// n = batch·ceil(m/8)·ceil(cols/8).
#define GEMM_TILE 8
// Full unrolling keeps the 64 accumulators in registers (NVRTC); the host compiler of the
// emulator has no such pragma and needs none.
#ifdef __CUDACC_RTC__
#define GEMM_UNROLL _Pragma("unroll")
#else
#define GEMM_UNROLL
#endif
extern "C" __global__ void gemm_exact_tiled_$S(const $T* __restrict__ a, const $T* __restrict__ b,
                                              $T* __restrict__ c, u64 n, u64 m, u64 cols, u64 k,
                                              u64 ta, u64 tb, u64 sa, u64 sb, u64 sc) {
    u64 ntiles = (cols + GEMM_TILE - 1) / GEMM_TILE, mtiles = (m + GEMM_TILE - 1) / GEMM_TILE;
    GRID_LOOP(t, n) {
        u64 j0 = (t % ntiles) * GEMM_TILE, r = t / ntiles;
        u64 i0 = (r % mtiles) * GEMM_TILE, batch = r / mtiles;
        const $T* ab = a + batch * sa;
        const $T* bb = b + batch * sb;
        u64 rows[GEMM_TILE], cs[GEMM_TILE];
GEMM_UNROLL
        for (int q = 0; q < GEMM_TILE; ++q) {
            rows[q] = (i0 + q < m) ? i0 + q : m - 1;
            cs[q] = (j0 + q < cols) ? j0 + q : cols - 1;
        }
        $T acc[GEMM_TILE][GEMM_TILE];
GEMM_UNROLL
        for (int r2 = 0; r2 < GEMM_TILE; ++r2)
GEMM_UNROLL
            for (int c2 = 0; c2 < GEMM_TILE; ++c2) acc[r2][c2] = ($T)0;
        for (u64 p = 0; p < k; ++p) {
            $T x[GEMM_TILE], y[GEMM_TILE];
GEMM_UNROLL
            for (int q = 0; q < GEMM_TILE; ++q) {
                x[q] = ta ? ab[p * m + rows[q]] : ab[rows[q] * k + p];
                y[q] = tb ? bb[cs[q] * k + p] : bb[p * cols + cs[q]];
            }
GEMM_UNROLL
            for (int r2 = 0; r2 < GEMM_TILE; ++r2)
GEMM_UNROLL
                for (int c2 = 0; c2 < GEMM_TILE; ++c2) acc[r2][c2] = acc[r2][c2] + x[r2] * y[c2];
        }
GEMM_UNROLL
        for (int r2 = 0; r2 < GEMM_TILE; ++r2)
GEMM_UNROLL
            for (int c2 = 0; c2 < GEMM_TILE; ++c2)
                if (i0 + r2 < m && j0 + c2 < cols) c[batch * sc + (i0 + r2) * cols + j0 + c2] = acc[r2][c2];
    }
}

// Large products (at least GEMM_BM rows and GEMM_BN columns) in block tiles of GEMM_BM x
// GEMM_BN outputs: the block's 256 threads stage
// slices of GEMM_BK values of k from A and B in shared memory, then each thread runs 8 x 8 of
// the tile's folds one step per staged k (thread (tx, ty) of a 16 x 16 grid takes rows
// ty + 16 r and columns tx + 16 c, so a warp's shared reads are broadcasts or consecutive
// words). Every output's fold is still acc = acc + A(i, p)·B(p, j) from +0 over p in index
// order, a separate multiply and add: the same bits as `gemm_exact`. Staged values past k are
// never read (the fold stops at k); values past m or cols feed only outputs that are not
// stored. `tiles` = batch·ceil(m/GEMM_BM)·ceil(cols/GEMM_BN); blockDim.x must be 256.
#define GEMM_BM 128
#define GEMM_BN 128
#define GEMM_BK 8
extern "C" __global__ void gemm_exact_block_$S(const $T* __restrict__ a, const $T* __restrict__ b,
                                              $T* __restrict__ c, u64 tiles, u64 m, u64 cols,
                                              u64 k, u64 ta, u64 tb, u64 sa, u64 sb, u64 sc) {
    __shared__ $T as[GEMM_BK][GEMM_BM];
    __shared__ $T bs[GEMM_BK][GEMM_BN];
    const u64 mt = (m + GEMM_BM - 1) / GEMM_BM, nt = (cols + GEMM_BN - 1) / GEMM_BN;
    const unsigned tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const u64 j0 = (tile % nt) * GEMM_BN, r = tile / nt;
        const u64 i0 = (r % mt) * GEMM_BM, batch = r / mt;
        const $T* ab = a + batch * sa;
        const $T* bb = b + batch * sb;
        $T acc[8][8];
GEMM_UNROLL
        for (int r2 = 0; r2 < 8; ++r2)
GEMM_UNROLL
            for (int c2 = 0; c2 < 8; ++c2) acc[r2][c2] = ($T)0;
        for (u64 p0 = 0; p0 < k; p0 += GEMM_BK) {
            // Stage A(i0.., p0..) and B(p0.., j0..): 1024 values each, 4 per thread, neighbouring
            // threads reading neighbouring addresses of either layout.
            for (unsigned e = 0; e < 4; ++e) {
                const unsigned idx = tid + 256 * e;
                const unsigned il = ta ? idx % GEMM_BM : idx / GEMM_BK;
                const unsigned pa = ta ? idx / GEMM_BM : idx % GEMM_BK;
                const u64 i = i0 + il, pi = p0 + pa;
                as[pa][il] = (i < m && pi < k) ? (ta ? ab[pi * m + i] : ab[i * k + pi]) : ($T)0;
                const unsigned jl = tb ? idx / GEMM_BK : idx % GEMM_BN;
                const unsigned pb = tb ? idx % GEMM_BK : idx / GEMM_BN;
                const u64 j = j0 + jl, pj = p0 + pb;
                bs[pb][jl] = (j < cols && pj < k) ? (tb ? bb[j * k + pj] : bb[pj * cols + j]) : ($T)0;
            }
            __syncthreads();
            const unsigned kk = (k - p0 < GEMM_BK) ? (unsigned)(k - p0) : GEMM_BK;
            for (unsigned q = 0; q < kk; ++q) {
                $T x[8], y[8];
GEMM_UNROLL
                for (int r2 = 0; r2 < 8; ++r2) x[r2] = as[q][ty + 16 * r2];
GEMM_UNROLL
                for (int c2 = 0; c2 < 8; ++c2) y[c2] = bs[q][tx + 16 * c2];
GEMM_UNROLL
                for (int r2 = 0; r2 < 8; ++r2)
GEMM_UNROLL
                    for (int c2 = 0; c2 < 8; ++c2) acc[r2][c2] = acc[r2][c2] + x[r2] * y[c2];
            }
            __syncthreads();  // the next slice overwrites what this one read
        }
GEMM_UNROLL
        for (int r2 = 0; r2 < 8; ++r2)
GEMM_UNROLL
            for (int c2 = 0; c2 < 8; ++c2) {
                const u64 i = i0 + ty + 16 * r2, j = j0 + tx + 16 * c2;
                if (i < m && j < cols) c[batch * sc + i * cols + j] = acc[r2][c2];
            }
    }
}

// ---- 2-D convolution on [N, C, H, W] ----
// All images' columns side by side: cols[q, nb·P + p] with q = (c·KH + ky)·KW + kx and
// p = oy·OW + ox (P = OH·OW); padding cells are 0. n = C·KH·KW · N·P.
extern "C" __global__ void im2col_$S(const $T* __restrict__ x, $T* __restrict__ cols, u64 n,
                                    u64 batch, u64 c, u64 h, u64 w, u64 kh, u64 kw, u64 stride,
                                    u64 pad, u64 oh, u64 ow) {
    GRID_LOOP(i, n) {
        u64 plane = oh * ow;
        u64 np = batch * plane;
        u64 q = i / np;
        u64 rest = i - q * np;
        u64 nb = rest / plane;
        u64 p = rest - nb * plane;
        u64 oy = p / ow;
        u64 ox = p - oy * ow;
        u64 ch = q / (kh * kw);
        u64 kk = q - ch * (kh * kw);
        u64 ky = kk / kw;
        u64 kx = kk - ky * kw;
        u64 r = oy * stride + ky;
        u64 s = ox * stride + kx;
        $T v = ($T)0;
        if (r >= pad && r - pad < h && s >= pad && s - pad < w)
            v = x[((nb * c + ch) * h + (r - pad)) * w + (s - pad)];
        cols[i] = v;
    }
}

// The GEMM's [OC, N·P] result to y [N, OC, P], plus the bias when there is one (the CPU adds
// it after the product: y = t + b).
extern "C" __global__ void conv_out_$S(const $T* __restrict__ t, const $T* __restrict__ b,
                                      $T* __restrict__ y, u64 n, u64 batch, u64 oc, u64 plane) {
    GRID_LOOP(i, n) {
        u64 nb = i / (oc * plane);
        u64 rest = i - nb * (oc * plane);
        u64 o = rest / plane;
        u64 p = rest - o * plane;
        $T v = t[o * (batch * plane) + nb * plane + p];
        y[i] = b ? v + b[o] : v;
    }
}

// gY [N, OC, P] to [OC, N·P], the layout the gradient GEMMs take.
extern "C" __global__ void conv_gout_cnp_$S(const $T* __restrict__ g, $T* __restrict__ y, u64 n,
                                           u64 batch, u64 oc, u64 plane) {
    GRID_LOOP(i, n) {
        u64 np = batch * plane;
        u64 o = i / np;
        u64 rest = i - o * np;
        u64 nb = rest / plane;
        u64 p = rest - nb * plane;
        y[i] = g[(nb * oc + o) * plane + p];
    }
}

// The adjoint of im2col as a gather: each input cell folds, from 0, the column entries that
// read it. The CPU's col2im adds them in (c, ky, kx, oy, ox) order; for one cell (c, iy, ix)
// ky fixes oy and kx fixes ox, so that order is (ky, kx). n = N·C·H·W.
extern "C" __global__ void col2im_$S(const $T* __restrict__ gcols, $T* __restrict__ gx, u64 n,
                                    u64 batch, u64 c, u64 h, u64 w, u64 kh, u64 kw, u64 stride,
                                    u64 pad, u64 oh, u64 ow) {
    GRID_LOOP(i, n) {
        u64 ix = i % w;
        u64 t = i / w;
        u64 iy = t % h;
        t = t / h;
        u64 ch = t % c;
        u64 nb = t / c;
        u64 plane = oh * ow;
        u64 np = batch * plane;
        u64 r = iy + pad;
        u64 s = ix + pad;
        $T acc = ($T)0;
        for (u64 ky = 0; ky < kh && ky <= r; ++ky) {
            if ((r - ky) % stride != 0) continue;
            u64 oy = (r - ky) / stride;
            if (oy >= oh) continue;
            for (u64 kx = 0; kx < kw && kx <= s; ++kx) {
                if ((s - kx) % stride != 0) continue;
                u64 ox = (s - kx) / stride;
                if (ox >= ow) continue;
                u64 q = (ch * kh + ky) * kw + kx;
                acc = acc + gcols[q * np + nb * plane + oy * ow + ox];
            }
        }
        gx[i] = acc;
    }
}

// ---- pooling over [planes, H, W] ----
// Tap k of a window along one axis reads cell o·stride - pad + k·dil; the taps inside the image
// are k in [*lo, *hi) (PoolDims::taps). Cell of tap k: o·stride + k·dil - pad.
__device__ __forceinline__ void nn_taps(u64 o, u64 k, u64 stride, u64 pad, u64 dil, u64 size,
                                        u64* lo, u64* hi) {
    u64 start = o * stride;  // + pad
    u64 l = start >= pad ? 0 : (pad - start + dil - 1) / dil;
    u64 h = start >= pad + size ? 0 : (pad + size - start + dil - 1) / dil;
    if (h > k) h = k;
    *lo = l < h ? l : h;
    *hi = h;
}

// The outputs along one axis whose windows have a tap on input position r: those o with
// o·stride = r + pad - k·dil for some tap k, clipped to [0, on). Returns the first candidate;
// *last is one past; callers check the tap condition (nn_on_tap).
__device__ __forceinline__ u64 nn_covering(u64 r, u64 k, u64 stride, u64 pad, u64 dil, u64 on,
                                           u64* last) {
    u64 rp = r + pad;
    u64 reach = (k - 1) * dil;
    u64 first = rp > reach ? (rp - reach + stride - 1) / stride : 0;
    u64 end = rp / stride + 1;
    if (end > on) end = on;
    *last = end > first ? end : first;
    return first;
}

__device__ __forceinline__ bool nn_on_tap(u64 r, u64 o, u64 k, u64 stride, u64 pad, u64 dil) {
    u64 rp = r + pad, start = o * stride;
    return rp >= start && (rp - start) % dil == 0 && (rp - start) / dil < k;
}

// Average pooling's divisor at (oy, ox), as PoolDims::avg_divisor: mode 0 the window clipped
// to the padded input, 1 clipped to the image, 2 the fixed value.
__device__ __forceinline__ u64 nn_avg_span(u64 o, u64 k, u64 stride, u64 pad, u64 size,
                                           u64 valid) {
    u64 start = o * stride;  // + pad, so the padded input is [0, size + 2·pad)
    u64 end = start + k;
    if (end > size + 2 * pad) end = size + 2 * pad;
    if (valid) {
        u64 lo = start > pad ? start : pad;
        u64 hi = end < size + pad ? end : size + pad;
        return hi > lo ? hi - lo : 0;
    }
    return end > start ? end - start : 0;
}

__device__ __forceinline__ long long nn_avg_divisor(u64 oy, u64 ox, u64 h, u64 w, u64 kh, u64 kw,
                                              u64 sh, u64 sw, u64 ph, u64 pw, u64 mode,
                                              u64 fixed) {
    if (mode == 2) return (long long)fixed;  // the i64 divisor's bits
    return (long long)nn_avg_span(oy, kh, sh, ph, h, mode) * nn_avg_span(ox, kw, sw, pw, w, mode);
}

// Max and the first winner in row-major tap order (index within the plane; u64 max for an
// empty window). A NaN wins over any number and then keeps the place (CPU max_pool).
extern "C" __global__ void max_pool_$S(const $T* __restrict__ x, $T* __restrict__ y,
                                      u64* __restrict__ arg, u64 n, u64 h, u64 w, u64 kh, u64 kw, u64 sh, u64 sw, u64 ph, u64 pw, u64 dh, u64 dw, u64 oh, u64 ow) {
    GRID_LOOP(i, n) {
        u64 ox = i % ow;
        u64 t = i / ow;
        u64 oy = t % oh;
        u64 p = t / oh;
        const $T* xp = x + p * h * w;
        u64 r0, r1, c0, c1;
        nn_taps(oy, kh, sh, ph, dh, h, &r0, &r1);
        nn_taps(ox, kw, sw, pw, dw, w, &c0, &c1);
        $T best = NN_NEG_INF;
        u64 bi = ~0ULL;
        for (u64 ky = r0; ky < r1; ++ky) {
            u64 r = oy * sh + ky * dh - ph;
            for (u64 kx = c0; kx < c1; ++kx) {
                u64 c = ox * sw + kx * dw - pw;
                $T v = xp[r * w + c];
                if (bi == ~0ULL || max_beats(v, best)) {
                    best = v;
                    bi = r * w + c;
                }
            }
        }
        y[i] = best;
        arg[i] = bi;
    }
}

// Each input cell folds, from 0 and in increasing output order, the gradients of the outputs
// that chose it (only outputs with a tap on the cell can). n = planes·H·W.
extern "C" __global__ void max_pool_grad_$S(const $T* __restrict__ g, const u64* __restrict__ arg,
                                           $T* __restrict__ gx, u64 n, u64 h, u64 w, u64 kh, u64 kw, u64 sh, u64 sw, u64 ph, u64 pw, u64 dh, u64 dw, u64 oh, u64 ow) {
    GRID_LOOP(i, n) {
        u64 c = i % w;
        u64 t = i / w;
        u64 r = t % h;
        u64 p = t / h;
        u64 cell = r * w + c;
        u64 y1, x1;
        u64 y0 = nn_covering(r, kh, sh, ph, dh, oh, &y1);
        u64 x0 = nn_covering(c, kw, sw, pw, dw, ow, &x1);
        $T acc = ($T)0;
        for (u64 oy = y0; oy < y1; ++oy) {
            for (u64 ox = x0; ox < x1; ++ox) {
                u64 o = (p * oh + oy) * ow + ox;
                if (arg[o] == cell) acc = acc + g[o];
            }
        }
        gx[i] = acc;
    }
}

// Window sum folded in row-major order, over the divisor of nn_avg_divisor (CPU avg_pool).
extern "C" __global__ void avg_pool_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n,
                                      u64 h, u64 w, u64 kh, u64 kw, u64 sh, u64 sw, u64 ph, u64 pw, u64 dh, u64 dw, u64 oh, u64 ow, u64 div_mode, u64 div_fixed) {
    GRID_LOOP(i, n) {
        u64 ox = i % ow;
        u64 t = i / ow;
        u64 oy = t % oh;
        u64 p = t / oh;
        const $T* xp = x + p * h * w;
        u64 r0, r1, c0, c1;
        nn_taps(oy, kh, sh, ph, dh, h, &r0, &r1);
        nn_taps(ox, kw, sw, pw, dw, w, &c0, &c1);
        $T s = ($T)0;
        for (u64 ky = r0; ky < r1; ++ky) {
            u64 r = oy * sh + ky * dh - ph;
            for (u64 kx = c0; kx < c1; ++kx) s = s + xp[r * w + ox * sw + kx * dw - pw];
        }
        long long div = nn_avg_divisor(oy, ox, h, w, kh, kw, sh, sw, ph, pw, div_mode, div_fixed);
        y[i] = s / ($T)div;
    }
}

// Each input cell folds g/div of the outputs with a tap on it, in increasing output order: the
// order in which the CPU's scatter loop reaches the cell.
extern "C" __global__ void avg_pool_grad_$S(const $T* __restrict__ g, $T* __restrict__ gx, u64 n,
                                           u64 h, u64 w, u64 kh, u64 kw, u64 sh, u64 sw, u64 ph, u64 pw, u64 dh, u64 dw, u64 oh, u64 ow, u64 div_mode, u64 div_fixed) {
    GRID_LOOP(i, n) {
        u64 c = i % w;
        u64 t = i / w;
        u64 r = t % h;
        u64 p = t / h;
        u64 y1, x1;
        u64 y0 = nn_covering(r, kh, sh, ph, dh, oh, &y1);
        u64 x0 = nn_covering(c, kw, sw, pw, dw, ow, &x1);
        $T acc = ($T)0;
        for (u64 oy = y0; oy < y1; ++oy) {
            if (!nn_on_tap(r, oy, kh, sh, ph, dh)) continue;
            for (u64 ox = x0; ox < x1; ++ox) {
                if (!nn_on_tap(c, ox, kw, sw, pw, dw)) continue;
                long long div = nn_avg_divisor(oy, ox, h, w, kh, kw, sh, sw, ph, pw, div_mode, div_fixed);
                acc = acc + g[(p * oh + oy) * ow + ox] / ($T)div;
            }
        }
        gx[i] = acc;
    }
}
