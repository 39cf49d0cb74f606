// The libm crate's binary64 pow (the CPU reference kernels' pow) as a device function, so a
// CUDA kernel gives the CPU's bits: the same IEEE operations in the same order (NVRTC runs with
// --fmad=false, the emulator with -ffp-contract=off). It follows the libm crate's Rust (a port
// of musl, itself from FreeBSD's msun):
//   Copyright (C) 2004 by Sun Microsystems, Inc. All rights reserved.
//   Permission to use, copy, modify, and distribute this software is freely granted, provided
//   that this notice is preserved.
// The macro at the end sends the kernels' pow calls here (docs/numerics.md). kernels.rs includes
// the file for binary64 after libm_f64.cu (and libm_rem_pio2_large.cu: tl_bits64, tl_double,
// tl_scalbn).

// The word helpers of the crate: the high 32 bits, and x with its high or low word replaced.
__device__ __forceinline__ unsigned tl_high_word(double x) { return (unsigned)(tl_bits64(x) >> 32); }

__device__ __forceinline__ double tl_with_high_word(double x, unsigned hi) {
    return tl_double((tl_bits64(x) & 0xffffffffull) | ((unsigned long long)hi << 32));
}

__device__ __forceinline__ double tl_with_low_word(double x, unsigned lo) {
    return tl_double((tl_bits64(x) & 0xffffffff00000000ull) | (unsigned long long)lo);
}

// pow: log2|x| in two pieces t1 + t2 (t1 with 29 trailing zeros), y * log2|x| = n + y' in
// simulated extra precision, then 2^n * 2^y'. Its tables: bp[k] and log2(bp[k]) split high
// and low.
__device__ const double tl_pow_bp[2] = {1.0, 1.5};
__device__ const double tl_pow_dp_h[2] = {0.0, 5.84962487220764160156e-01};  // 0x3fe2b803_40000000
__device__ const double tl_pow_dp_l[2] = {0.0, 1.35003920212974897128e-08};  // 0x3E4CFDEB_43CFD006

__device__ inline double tl_pow(double x, double y) {
    const double TWO53 = 9007199254740992.0, huge = 1.0e300, tiny = 1.0e-300;
    const double OVT = 8.0085662595372944372e-017;  // -(1024-log2(ovfl+.5ulp))
    // (3/2)*(log(x)-2s-2/3*s**3) and 2^x's polynomials
    const double L1 = 5.99999999999994648725e-01, L2 = 4.28571428578550184252e-01;
    const double L3 = 3.33333329818377432918e-01, L4 = 2.72728123808534006489e-01;
    const double L5 = 2.30660745775561754067e-01, L6 = 2.06975017800338417784e-01;
    const double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03;
    const double P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06;
    const double P5 = 4.13813679705723846039e-08;
    const double LG2 = 6.93147180559945286227e-01, LG2_H = 6.93147182464599609375e-01;
    const double LG2_L = -1.90465429995776804525e-09;
    const double CP = 9.61796693925975554329e-01;  // 2/(3ln2)
    const double CP_H = 9.61796700954437255859e-01, CP_L = -7.02846165095275826516e-09;
    const double IVLN2 = 1.44269504088896338700e+00;  // 1/ln2
    const double IVLN2_H = 1.44269502162933349609e+00, IVLN2_L = 1.92596299112661746887e-08;
    double t1, t2;
    int hx = (int)(tl_bits64(x) >> 32), hy = (int)(tl_bits64(y) >> 32);
    unsigned lx = (unsigned)tl_bits64(x), ly = (unsigned)tl_bits64(y);
    int ix = hx & 0x7fffffff;
    int iy = hy & 0x7fffffff;
    if (((unsigned)iy | ly) == 0) return 1.0;  // x**0 = 1, even if x is NaN
    if (hx == 0x3ff00000 && lx == 0) return 1.0;  // 1**y = 1, even if y is NaN
    // NaN if either is NaN
    if (ix > 0x7ff00000 || (ix == 0x7ff00000 && lx != 0) || iy > 0x7ff00000 || (iy == 0x7ff00000 && ly != 0))
        return x + y;
    // For x < 0: yisint is 0 if y is not an integer, 1 if an odd one, 2 if an even one.
    int yisint = 0, k, j;
    if (hx < 0) {
        if (iy >= 0x43400000) {
            yisint = 2;
        } else if (iy >= 0x3ff00000) {
            k = (iy >> 20) - 0x3ff;  // the exponent
            if (k > 20) {
                unsigned jl = ly >> (52 - k);
                if ((jl << (52 - k)) == ly) yisint = 2 - (int)(jl & 1u);
            } else if (ly == 0) {
                j = iy >> (20 - k);
                if ((j << (20 - k)) == iy) yisint = 2 - (j & 1);
            }
        }
    }
    if (ly == 0) {  // special values of y
        if (iy == 0x7ff00000) {  // y is +-inf
            if (((ix - 0x3ff00000) | (int)lx) == 0) return 1.0;  // (-1)**+-inf is 1
            if (ix >= 0x3ff00000) return hy >= 0 ? y : 0.0;  // (|x|>1)**+-inf = inf, 0
            return hy >= 0 ? 0.0 : -y;  // (|x|<1)**+-inf = 0, inf
        }
        if (iy == 0x3ff00000) return hy >= 0 ? x : 1.0 / x;  // y is +-1
        if (hy == 0x40000000) return x * x;  // y is 2
        if (hy == 0x3fe00000 && hx >= 0) return sqrt(x);  // y is 0.5, x >= +0
    }
    double ax = fabs(x);
    if (lx == 0 && (ix == 0x7ff00000 || ix == 0 || ix == 0x3ff00000)) {  // x is +-0, +-inf, +-1
        double z = ax;
        if (hy < 0) z = 1.0 / z;
        if (hx < 0) {
            if (((ix - 0x3ff00000) | yisint) == 0) z = (z - z) / (z - z);  // (-1)**non-int is NaN
            else if (yisint == 1) z = -z;  // (x<0)**odd = -(|x|**odd)
        }
        return z;
    }
    double s = 1.0;  // the sign of the result
    if (hx < 0) {
        if (yisint == 0) return (x - x) / (x - x);  // (x<0)**(non-int) is NaN
        if (yisint == 1) s = -1.0;
    }
    if (iy > 0x41e00000) {  // |y| > 2^31
        if (iy > 0x43f00000) {  // |y| > 2^64: must over/underflow
            if (ix <= 0x3fefffff) return hy < 0 ? huge * huge : tiny * tiny;
            if (ix >= 0x3ff00000) return hy > 0 ? huge * huge : tiny * tiny;
        }
        // over/underflow if x is not close to one
        if (ix < 0x3fefffff) return hy < 0 ? s * huge * huge : s * tiny * tiny;
        if (ix > 0x3ff00000) return hy > 0 ? s * huge * huge : s * tiny * tiny;
        // now |1-x| <= 2^-20: log(x) by x - x^2/2 + x^3/3 - x^4/4
        double t = ax - 1.0;  // 20 trailing zeros
        double w = (t * t) * (0.5 - t * (0.3333333333333333333333 - t * 0.25));
        double u = IVLN2_H * t;  // IVLN2_H has 21 significant bits
        double v = t * IVLN2_L - w * IVLN2;
        t1 = tl_with_low_word(u + v, 0);
        t2 = v - (t1 - u);
    } else {
        int n = 0;
        if (ix < 0x00100000) {  // subnormal x
            ax *= TWO53;
            n -= 53;
            ix = (int)tl_high_word(ax);
        }
        n += (ix >> 20) - 0x3ff;
        j = ix & 0x000fffff;
        ix = j | 0x3ff00000;  // normalize ix
        if (j <= 0x3988E) {  // |x| < sqrt(3/2)
            k = 0;
        } else if (j < 0xBB67A) {  // |x| < sqrt(3)
            k = 1;
        } else {
            k = 0;
            n += 1;
            ix -= 0x00100000;
        }
        ax = tl_with_high_word(ax, (unsigned)ix);
        // ss = s_h + s_l = (x-1)/(x+1) or (x-1.5)/(x+1.5)
        double u = ax - tl_pow_bp[k];
        double v = 1.0 / (ax + tl_pow_bp[k]);
        double ss = u * v;
        double s_h = tl_with_low_word(ss, 0);
        // t_h = ax + bp[k], high
        double t_h = tl_with_high_word(0.0, (((unsigned)ix >> 1) | 0x20000000u) + 0x00080000u + ((unsigned)k << 18));
        double t_l = ax - (t_h - tl_pow_bp[k]);
        double s_l = v * ((u - s_h * t_h) - s_h * t_l);
        // log(ax)
        double s2 = ss * ss;
        double r = s2 * s2 * (L1 + s2 * (L2 + s2 * (L3 + s2 * (L4 + s2 * (L5 + s2 * L6)))));
        r += s_l * (s_h + ss);
        s2 = s_h * s_h;
        t_h = tl_with_low_word(3.0 + s2 + r, 0);
        t_l = r - ((t_h - 3.0) - s2);
        // u + v = ss*(1+...)
        u = s_h * t_h;
        v = s_l * t_h + t_l * ss;
        // 2/(3log2)*(ss+...)
        double p_h = tl_with_low_word(u + v, 0);
        double p_l = v - (p_h - u);
        double z_h = CP_H * p_h;  // cp_h + cp_l = 2/(3*log2)
        double z_l = CP_L * p_h + p_l * CP + tl_pow_dp_l[k];
        // log2(ax) = (ss+...)*2/(3*log2) = n + dp_h + z_h + z_l
        double t = (double)n;
        t1 = tl_with_low_word(((z_h + z_l) + tl_pow_dp_h[k]) + t, 0);
        t2 = z_l - (((t1 - t) - tl_pow_dp_h[k]) - z_h);
    }
    // split y into y1 + y2 and compute (y1 + y2) * (t1 + t2)
    double y1 = tl_with_low_word(y, 0);
    double p_l = (y - y1) * t1 + y * t2;
    double p_h = y1 * t1;
    double z = p_l + p_h;
    j = (int)(tl_bits64(z) >> 32);
    int i = (int)tl_bits64(z);
    if (j >= 0x40900000) {  // z >= 1024
        if (((j - 0x40900000) | i) != 0) return s * huge * huge;  // z > 1024: overflow
        if (p_l + OVT > z - p_h) return s * huge * huge;  // overflow
    } else if ((j & 0x7fffffff) >= 0x4090cc00) {  // z <= -1075
        if ((((unsigned)j - 0xc090cc00u) | (unsigned)i) != 0) return s * tiny * tiny;  // z < -1075: underflow
        if (p_l <= z - p_h) return s * tiny * tiny;  // underflow
    }
    // 2**(p_h + p_l)
    i = j & 0x7fffffff;
    k = (i >> 20) - 0x3ff;
    int n = 0;
    if (i > 0x3fe00000) {  // |z| > 0.5: n = [z + 0.5]
        n = j + (0x00100000 >> (k + 1));
        k = ((n & 0x7fffffff) >> 20) - 0x3ff;  // the new k for n
        double t = tl_with_high_word(0.0, (unsigned)(n & ~(0x000fffff >> k)));
        n = ((n & 0x000fffff) | 0x00100000) >> (20 - k);
        if (j < 0) n = -n;
        p_h -= t;
    }
    double t = tl_with_low_word(p_l + p_h, 0);
    double u = t * LG2_H;
    double v = (p_l - (t - p_h)) * LG2 + t * LG2_L;
    z = u + v;
    double w = v - (z - u);
    t = z * z;
    t1 = z - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    double r = (z * t1) / (t1 - 2.0) - (w + z * w);
    z = 1.0 - (r - z);
    j = (int)(tl_high_word(z) + ((unsigned)n << 20));
    if ((j >> 20) <= 0) z = tl_scalbn(z, n);  // subnormal output
    else z = tl_with_high_word(z, (unsigned)j);
    return s * z;
}

// Every later call of pow in a kernel is the libm crate's algorithm.
#define pow tl_pow
