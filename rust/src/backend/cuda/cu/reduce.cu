// Reductions. One thread owns one output and folds left from 0 in increasing index order, as
// the CPU reference does (docs/numerics.md): no atomics, no tree, so results repeat bit for bit.

// y[o] = Σ_r x[out(o) + red(r)]: `out` maps outputs to their first source element, `red`
// walks the reduced positions (row-major). Covers sum over all, one axis, and sum_to_shape.
extern "C" __global__ void sum_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n,
                                 Gather out, Gather red, u64 rn) {
    GRID_LOOP(o, n) {
        const $T* p = x + gather_offset(out, o);
        $T acc = ($T)0;
        if (red.rank == 1) {
            u64 s = red.strides[0];
            for (u64 r = 0; r < rn; ++r) acc = acc + p[r * s];
        } else {
            for (u64 r = 0; r < rn; ++r) acc = acc + p[gather_offset(red, r)];
        }
        y[o] = acc;
    }
}

// Long reductions in two levels: thread t folds chunk t % chunks of output t / chunks (left
// to right from 0); `sum` then folds each output's chunk partials in order. The split depends
// only on the sizes, so results still repeat bit for bit.
extern "C" __global__ void sum_chunks_$S(const $T* __restrict__ x, $T* __restrict__ partial,
                                        u64 n, Gather out, Gather red, u64 rn, u64 chunk,
                                        u64 chunks) {
    GRID_LOOP(t, n) {
        u64 o = t / chunks;
        u64 c = t - o * chunks;
        const $T* p = x + gather_offset(out, o);
        u64 end = (c + 1) * chunk < rn ? (c + 1) * chunk : rn;
        $T acc = ($T)0;
        if (red.rank == 1) {
            u64 s = red.strides[0];
            for (u64 r = c * chunk; r < end; ++r) acc = acc + p[r * s];
        } else {
            for (u64 r = c * chunk; r < end; ++r) acc = acc + p[gather_offset(red, r)];
        }
        partial[t] = acc;
    }
}

// Running sums along the middle axis of [outer, len, inner]: thread o owns one lane and folds
// it in index order (from the far end when `reverse`), y[k] = y[k -/+ 1] + x[k], as the CPU.
extern "C" __global__ void cumsum_$S(const $T* __restrict__ x, $T* __restrict__ y, u64 n,
                                    u64 len, u64 inner, u64 reverse) {
    GRID_LOOP(o, n) {
        u64 a = o / inner;
        u64 b = o - a * inner;
        u64 base = a * len * inner + b;
        if (len == 0) continue;
        if (reverse) {
            $T acc = x[base + (len - 1) * inner];
            y[base + (len - 1) * inner] = acc;
            for (u64 l = len - 1; l-- > 0;) {
                acc = acc + x[base + l * inner];
                y[base + l * inner] = acc;
            }
        } else {
            $T acc = x[base];
            y[base] = acc;
            for (u64 l = 1; l < len; ++l) {
                acc = acc + x[base + l * inner];
                y[base + l * inner] = acc;
            }
        }
    }
}

// Max over the middle axis of [outer, len, inner] and the index of the first maximum; a NaN
// wins over any number (the CPU rule). n = outer * inner, len >= 1.
extern "C" __global__ void max_axis_$S(const $T* __restrict__ x, $T* __restrict__ y,
                                      u64* __restrict__ arg, u64 n, u64 len, u64 inner) {
    GRID_LOOP(o, n) {
        u64 a = o / inner;
        u64 b = o - a * inner;
        const $T* p = x + a * len * inner + b;
        $T best = p[0];
        u64 bi = 0;
        for (u64 l = 1; l < len; ++l) {
            $T v = p[l * inner];
            if (max_beats(v, best)) {
                best = v;
                bi = l;
            }
        }
        y[o] = best;
        arg[o] = bi;
    }
}

// The gradient of max: g[r] written at its winner in y (already zero), viewed as
// [outer, len, inner]; winners are distinct positions, so no two threads write one place.
extern "C" __global__ void max_axis_grad_$S(const $T* __restrict__ g, const u64* __restrict__ arg,
                                           $T* __restrict__ y, u64 n, u64 len, u64 inner) {
    GRID_LOOP(r, n) {
        u64 o = r / inner;
        u64 i = r - o * inner;
        y[(o * len + arg[r]) * inner + i] = g[r];
    }
}
