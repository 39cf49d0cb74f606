// Elementwise kernels with scalar parameters, fills, masks and dtype casts. Each mirrors the
// CPU reference (ops/elementwise.rs) operation for operation.

extern "C" __global__ void pow_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n, $T e) {
    GRID_LOOP(i, n) { y[i] = pow$F(x[i], e); }
}

// g * (e * x^(e-1)), with e-1 rounded to $T on the host like the CPU does.
extern "C" __global__ void pow_grad_$S(const $T* __restrict__ x, const $T* __restrict__ g,
                                      $T* __restrict__ y, u64 n, $T e, $T em1) {
    GRID_LOOP(i, n) { y[i] = g[i] * (e * pow$F(x[i], em1)); }
}

// NaN stays NaN: it is neither below lo nor above hi.
extern "C" __global__ void clamp_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n,
                                   $T lo, $T hi, u64 has_lo, u64 has_hi) {
    GRID_LOOP(i, n) {
        $T v = x[i];
        if (has_lo && v < lo) v = lo;
        if (has_hi && v > hi) v = hi;
        y[i] = v;
    }
}

extern "C" __global__ void clamp_grad_$S(const $T* __restrict__ x, const $T* __restrict__ g,
                                        $T* __restrict__ y, u64 n, $T lo, $T hi, u64 has_lo,
                                        u64 has_hi) {
    GRID_LOOP(i, n) {
        $T v = x[i];
        bool inside = (!has_lo || v >= lo) && (!has_hi || v <= hi);
        y[i] = inside ? g[i] : ($T)0;
    }
}

extern "C" __global__ void fill_$S($T* __restrict__ y, u64 n, $T v) {
    GRID_LOOP(i, n) { y[i] = v; }
}

// mask holds one u64 per element (already broadcast on the host): nonzero means fill.
extern "C" __global__ void masked_fill_$S(const $T* __restrict__ x, const u64* __restrict__ mask,
                                         $T* __restrict__ y, u64 n, $T v) {
    GRID_LOOP(i, n) { y[i] = mask[i] ? v : x[i]; }
}

// The other dtype, rounding to nearest when narrowing (a C cast does exactly that).
extern "C" __global__ void cast_$S(const $T* __restrict__ x, $O* __restrict__ y, u64 n) {
    GRID_LOOP(i, n) { y[i] = ($O)x[i]; }
}

// Gradient weights of maximum/minimum: 1 where a wins (or is NaN), 0.5 on ties, else 0.
extern "C" __global__ void select_weight_max_$S(const $T* __restrict__ x, const $T* __restrict__ z,
                                               $T* __restrict__ y, u64 n, Gather gx, Gather gz) {
    GRID_LOOP(i, n) {
        $T a = x[gather_offset(gx, i)];
        $T b = z[gather_offset(gz, i)];
        y[i] = (a == b) ? ($T)0.5 : ((a > b || isnan(a)) ? ($T)1 : ($T)0);
    }
}

extern "C" __global__ void select_weight_min_$S(const $T* __restrict__ x, const $T* __restrict__ z,
                                               $T* __restrict__ y, u64 n, Gather gx, Gather gz) {
    GRID_LOOP(i, n) {
        $T a = x[gather_offset(gx, i)];
        $T b = z[gather_offset(gz, i)];
        y[i] = (a == b) ? ($T)0.5 : ((a < b || isnan(a)) ? ($T)1 : ($T)0);
    }
}

// The counter-based generator of rng.rs: low 32 bits of splitmix64(key + i).
__device__ __forceinline__ unsigned tlrs_sample_u32(u64 key, u64 i) {
    u64 z = key + i + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (unsigned)(z ^ (z >> 31));
}

// Inverted-dropout scales: `scale` where keep > u(key, i) (u in binary64 on a 2^-32 grid), else 0.
extern "C" __global__ void dropout_mask_$S($T* __restrict__ y, u64 n, u64 key, double keep,
                                          double scale) {
    GRID_LOOP(i, n) {
        double u = (double)tlrs_sample_u32(key, i) * 2.3283064365386962890625e-10;
        y[i] = (keep > u) ? ($T)scale : ($T)0;
    }
}

// RuntimeInit uniform fill, as init.rs computes it: lo + u * width with u the 32-bit sample
// converted to $T (exact for double; one rounding for float, so it may be 1) times 2^-32 (exact).
extern "C" __global__ void init_uniform_$S($T* __restrict__ y, u64 n, u64 key, $T lo, $T width) {
    GRID_LOOP(i, n) {
        $T u = ($T)tlrs_sample_u32(key, i) * ($T)2.3283064365386962890625e-10;
        y[i] = lo + u * width;
    }
}
