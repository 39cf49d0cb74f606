// The libm crate's binary32 algorithms (the CPU reference kernels' transcendentals) as device
// functions, so a CUDA kernel gives the CPU's bits: the same IEEE operations in the same order
// (NVRTC runs with --fmad=false, the emulator with -ffp-contract=off). Each follows the libm
// crate's Rust (a port of musl, itself from FreeBSD's msun):
//   Copyright (C) 1993, 2004 by Sun Microsystems, Inc. All rights reserved.
//   Permission to use, copy, modify, and distribute this software is freely granted, provided
//   that this notice is preserved.
// The macros at the end send the kernels' expf/logf/expm1f/log1pf/tanhf/erff/sinf/cosf/atan2f/
// powf calls here (docs/numerics.md). kernels.rs includes the file of the kernels' width, after
// libm_rem_pio2_large.cu (tl_rem_pio2_large, tl_bits64, tl_double).

__device__ __forceinline__ unsigned tl_bits32(float x) { return (unsigned)__float_as_int(x); }

__device__ __forceinline__ float tl_float(unsigned b) { return __int_as_float((int)b); }

__device__ inline float tl_scalbnf(float x, int n) {
    const float f_max = tl_float(0x7f000000u), mul = tl_float(0x00800000u) * tl_float(0x4b800000u);
    if (n > 127) {
        x *= f_max; n -= 127;
        if (n > 127) { x *= f_max; n -= 127; if (n > 127) n = 127; }
    } else if (n < -126) {
        x *= mul; n += 126 - 24;
        if (n < -126) { x *= mul; n += 126 - 24; if (n < -126) n = -126; }
    }
    return x * tl_float((unsigned)(127 + n) << 23);
}

__device__ inline float tl_expf(float x) {
    const float LN2_HI = 6.9314575195e-01f, LN2_LO = 1.4286067653e-06f, INV_LN2 = 1.4426950216e+00f;
    const float P1 = 1.6666625440e-1f, P2 = -2.7667332906e-3f;
    unsigned hx = tl_bits32(x);
    int sign = (int)(hx >> 31);
    hx &= 0x7fffffffu;
    if (hx >= 0x42aeac50u) {
        if (hx > 0x7f800000u) return x;
        if (hx >= 0x42b17218u && !sign) return x * tl_float(0x7f000000u);
        if (sign && hx >= 0x42cff1b5u) return 0.0f;
    }
    int k; float hi, lo;
    if (hx > 0x3eb17218u) {
        if (hx > 0x3f851592u) k = (int)(INV_LN2 * x + (sign ? -0.5f : 0.5f));
        else k = 1 - sign - sign;
        float kf = (float)k;
        hi = x - kf * LN2_HI;
        lo = kf * LN2_LO;
        x = hi - lo;
    } else if (hx > 0x39000000u) {
        k = 0; hi = x; lo = 0.0f;
    } else {
        return 1.0f + x;
    }
    float xx = x * x;
    float c = x - xx * (P1 + xx * P2);
    float y = 1.0f + (x * c / (2.0f - c) - lo + hi);
    return k == 0 ? y : tl_scalbnf(y, k);
}

__device__ inline float tl_logf(float x) {
    const float LN2_HI = 6.9313812256e-01f, LN2_LO = 9.0580006145e-06f;
    const float LG1 = 0.66666662693f, LG2 = 0.40000972152f, LG3 = 0.28498786688f, LG4 = 0.24279078841f;
    unsigned ix = tl_bits32(x);
    int k = 0;
    if (ix < 0x00800000u || (ix >> 31) != 0) {
        if ((ix << 1) == 0) return -1.0f / (x * x);
        if ((ix >> 31) != 0) return (x - x) / 0.0f;
        k -= 25;
        x *= tl_float(0x4c000000u);
        ix = tl_bits32(x);
    } else if (ix >= 0x7f800000u) {
        return x;
    } else if (ix == 0x3f800000u) {
        return 0.0f;
    }
    ix += 0x3f800000u - 0x3f3504f3u;
    k += (int)(ix >> 23) - 0x7f;
    ix = (ix & 0x007fffffu) + 0x3f3504f3u;
    x = tl_float(ix);
    float f = x - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float w = z * z;
    float t1 = w * (LG2 + w * LG4);
    float t2 = z * (LG1 + w * LG3);
    float r = t2 + t1;
    float hfsq = 0.5f * f * f;
    float dk = (float)k;
    return s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
}

__device__ inline float tl_expm1f(float x) {
    const float LN2_HI = 6.9313812256e-01f, LN2_LO = 9.0580006145e-06f, INV_LN2 = 1.4426950216e+00f;
    const float Q1 = -3.3333212137e-2f, Q2 = 1.5807170421e-3f;
    const float x1p127 = tl_float(0x7f000000u);
    unsigned hx = tl_bits32(x);
    bool sign = (hx >> 31) != 0;
    hx &= 0x7fffffffu;
    if (hx >= 0x4195b844u) {
        if (hx > 0x7f800000u) return x;
        if (sign) return -1.0f;
        if (hx > 0x42b17217u) return x * x1p127;
    }
    int k; float hi, lo, c = 0.0f;
    if (hx > 0x3eb17218u) {
        if (hx < 0x3F851592u) {
            if (!sign) { hi = x - LN2_HI; lo = LN2_LO; k = 1; }
            else { hi = x + LN2_HI; lo = -LN2_LO; k = -1; }
        } else {
            k = (int)(INV_LN2 * x + (sign ? -0.5f : 0.5f));
            float t = (float)k;
            hi = x - t * LN2_HI;
            lo = t * LN2_LO;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) {
        return x;
    } else {
        k = 0;
    }
    float hfx = 0.5f * x;
    float hxs = x * hfx;
    float r1 = 1.0f + hxs * (Q1 + hxs * Q2);
    float t = 3.0f - r1 * hfx;
    float e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0) return x - (x * e - hxs);
    e = x * (e - c) - c;
    e -= hxs;
    if (k == -1) return 0.5f * (x - e) - 0.5f;
    if (k == 1) {
        if (x < -0.25f) return -2.0f * (e - (x + 0.5f));
        return 1.0f + 2.0f * (x - e);
    }
    float twopk = tl_float((unsigned)((0x7f + k) << 23));
    if (k < 0 || k > 56) {
        float y = x - e + 1.0f;
        if (k == 128) y = y * 2.0f * x1p127;
        else y = y * twopk;
        return y - 1.0f;
    }
    float uf = tl_float((unsigned)((0x7f - k) << 23));
    if (k < 23) return (x - e + (1.0f - uf)) * twopk;
    return (x - (e + uf) + 1.0f) * twopk;
}

__device__ inline float tl_log1pf(float x) {
    const float LN2_HI = 6.9313812256e-01f, LN2_LO = 9.0580006145e-06f;
    const float LG1 = 0.66666662693f, LG2 = 0.40000972152f, LG3 = 0.28498786688f, LG4 = 0.24279078841f;
    unsigned ui = tl_bits32(x), ix = ui, iu;
    float f = 0.0f, c = 0.0f;
    int k = 1;
    if (ix < 0x3ed413d0u || (ix >> 31) > 0) {
        if (ix >= 0xbf800000u) {
            if (x == -1.0f) return x / 0.0f;
            return (x - x) / 0.0f;
        }
        if ((ix << 1) < (0x33800000u << 1)) return x;
        if (ix <= 0xbe95f619u) { k = 0; c = 0.0f; f = x; }
    } else if (ix >= 0x7f800000u) {
        return x;
    }
    if (k > 0) {
        ui = tl_bits32(1.0f + x);
        iu = ui;
        iu += 0x3f800000u - 0x3f3504f3u;
        k = (int)(iu >> 23) - 0x7f;
        if (k < 25) {
            c = k >= 2 ? 1.0f - (tl_float(ui) - x) : x - (tl_float(ui) - 1.0f);
            c /= tl_float(ui);
        } else {
            c = 0.0f;
        }
        iu = (iu & 0x007fffffu) + 0x3f3504f3u;
        ui = iu;
        f = tl_float(ui) - 1.0f;
    }
    float s = f / (2.0f + f);
    float z = s * s;
    float w = z * z;
    float t1 = w * (LG2 + w * LG4);
    float t2 = z * (LG1 + w * LG3);
    float r = t2 + t1;
    float hfsq = 0.5f * f * f;
    float dk = (float)k;
    return s * (hfsq + r) + (dk * LN2_LO + c) - hfsq + f + dk * LN2_HI;
}

__device__ inline float tl_tanhf(float x) {
    unsigned ix = tl_bits32(x);
    bool sign = (ix >> 31) != 0;
    ix &= 0x7fffffffu;
    x = tl_float(ix);
    unsigned w = ix;
    float tt;
    if (w > 0x3f0c9f54u) {
        if (w > 0x41200000u) tt = 1.0f + 0.0f / x;
        else { float t = tl_expm1f(2.0f * x); tt = 1.0f - 2.0f / (t + 2.0f); }
    } else if (w > 0x3e82c578u) {
        float t = tl_expm1f(2.0f * x); tt = t / (t + 2.0f);
    } else if (w >= 0x00800000u) {
        float t = tl_expm1f(-2.0f * x); tt = -t / (t + 2.0f);
    } else {
        tt = x;
    }
    return sign ? -tt : tt;
}

__device__ inline float tl_erff(float x) {
    const float ERX = 8.4506291151e-01f, EFX8 = 1.0270333290e+00f;
    const float PP0 = 1.2837916613e-01f, PP1 = -3.2504209876e-01f, PP2 = -2.8481749818e-02f;
    const float PP3 = -5.7702702470e-03f, PP4 = -2.3763017452e-05f;
    const float QQ1 = 3.9791721106e-01f, QQ2 = 6.5022252500e-02f, QQ3 = 5.0813062117e-03f;
    const float QQ4 = 1.3249473704e-04f, QQ5 = -3.9602282413e-06f;
    const float PA0 = -2.3621185683e-03f, PA1 = 4.1485610604e-01f, PA2 = -3.7220788002e-01f;
    const float PA3 = 3.1834661961e-01f, PA4 = -1.1089469492e-01f, PA5 = 3.5478305072e-02f;
    const float PA6 = -2.1663755178e-03f;
    const float QA1 = 1.0642088205e-01f, QA2 = 5.4039794207e-01f, QA3 = 7.1828655899e-02f;
    const float QA4 = 1.2617121637e-01f, QA5 = 1.3637083583e-02f, QA6 = 1.1984500103e-02f;
    const float RA0 = -9.8649440333e-03f, RA1 = -6.9385856390e-01f, RA2 = -1.0558626175e+01f;
    const float RA3 = -6.2375331879e+01f, RA4 = -1.6239666748e+02f, RA5 = -1.8460508728e+02f;
    const float RA6 = -8.1287437439e+01f, RA7 = -9.8143291473e+00f;
    const float SA1 = 1.9651271820e+01f, SA2 = 1.3765776062e+02f, SA3 = 4.3456588745e+02f;
    const float SA4 = 6.4538726807e+02f, SA5 = 4.2900814819e+02f, SA6 = 1.0863500214e+02f;
    const float SA7 = 6.5702495575e+00f, SA8 = -6.0424413532e-02f;
    const float RB0 = -9.8649431020e-03f, RB1 = -7.9928326607e-01f, RB2 = -1.7757955551e+01f;
    const float RB3 = -1.6063638306e+02f, RB4 = -6.3756646729e+02f, RB5 = -1.0250950928e+03f;
    const float RB6 = -4.8351919556e+02f;
    const float SB1 = 3.0338060379e+01f, SB2 = 3.2579251099e+02f, SB3 = 1.5367296143e+03f;
    const float SB4 = 3.1998581543e+03f, SB5 = 2.5530502930e+03f, SB6 = 4.7452853394e+02f;
    const float SB7 = -2.2440952301e+01f;
    unsigned ix = tl_bits32(x);
    int sign = (int)(ix >> 31);
    ix &= 0x7fffffffu;
    if (ix >= 0x7f800000u) return 1.0f - 2.0f * (float)sign + 1.0f / x;
    if (ix < 0x3f580000u) {
        if (ix < 0x31800000u) return 0.125f * (8.0f * x + EFX8 * x);
        float z = x * x;
        float r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
        float s = 1.0f + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
        float y = r / s;
        return x + x * y;
    }
    float y;
    if (ix < 0x40c00000u) {
        float erfc;
        float ax = tl_float(ix);
        if (ix < 0x3fa00000u) {
            float s = ax - 1.0f;
            float p = PA0 + s * (PA1 + s * (PA2 + s * (PA3 + s * (PA4 + s * (PA5 + s * PA6)))));
            float q = 1.0f + s * (QA1 + s * (QA2 + s * (QA3 + s * (QA4 + s * (QA5 + s * QA6)))));
            erfc = 1.0f - ERX - p / q;
        } else {
            float s = 1.0f / (ax * ax), r, big_s;
            if (ix < 0x4036db6du) {
                r = RA0 + s * (RA1 + s * (RA2 + s * (RA3 + s * (RA4 + s * (RA5 + s * (RA6 + s * RA7))))));
                big_s = 1.0f + s * (SA1 + s * (SA2 + s * (SA3 + s * (SA4 + s * (SA5 + s * (SA6 + s * (SA7 + s * SA8)))))));
            } else {
                r = RB0 + s * (RB1 + s * (RB2 + s * (RB3 + s * (RB4 + s * (RB5 + s * RB6)))));
                big_s = 1.0f + s * (SB1 + s * (SB2 + s * (SB3 + s * (SB4 + s * (SB5 + s * (SB6 + s * SB7))))));
            }
            float z = tl_float(ix & 0xffffe000u);
            erfc = tl_expf(-z * z - 0.5625f) * tl_expf((z - ax) * (z + ax) + r / big_s) / ax;
        }
        y = 1.0f - erfc;
    } else {
        y = 1.0f - tl_float(0x03800000u);
    }
    return sign ? -y : y;
}

// sinf and cosf: libm computes the kernels and the reduction in binary64.

__device__ inline float tl_k_sinf(double x) {
    const double S1 = -0.166666666416265235595, S2 = 0.0083333293858894631756;
    const double S3 = -0.000198393348360966317347, S4 = 0.0000027183114939898219064;
    double z = x * x;
    double w = z * z;
    double r = S3 + z * S4;
    double s = z * x;
    return (float)((x + s * (S1 + z * S2)) + s * w * r);
}

__device__ inline float tl_k_cosf(double x) {
    const double C0 = -0.499999997251031003120, C1 = 0.0416666233237390631894;
    const double C2 = -0.00138867637746099294692, C3 = 0.0000243904487962774090654;
    double z = x * x;
    double w = z * z;
    double r = C2 + z * C3;
    return (float)(((1.0 + z * C0) + w * C1) + (w * z) * r);
}

// x rem pi/2 in *y (binary64), returning the quotient (mod 8 for huge x).
__device__ inline int tl_rem_pio2f(float x, double* y) {
    const double TOINT = 6755399441055744.0;  // 1.5 / f64::EPSILON
    const double INV_PIO2 = 6.36619772367581382433e-01;
    const double PIO2_1 = 1.57079631090164184570e+00, PIO2_1T = 1.58932547735281966916e-08;
    double x64 = (double)x;
    unsigned ix = tl_bits32(x) & 0x7fffffffu;
    if (ix < 0x4dc90fdbu) {  // |x| ~< 2^28*(pi/2)
        double tmp = x64 * INV_PIO2 + TOINT;
        double f_n = tmp - TOINT;
        *y = x64 - f_n * PIO2_1 - f_n * PIO2_1T;
        return (int)f_n;
    }
    if (ix >= 0x7f800000u) {
        *y = x64 - x64;
        return 0;
    }
    // Scale x into [2^23, 2^24 - 1].
    bool sign = (tl_bits32(x) >> 31) != 0;
    int e0 = (int)((ix >> 23) - (0x7fu + 23u));
    double tx[1], ty[1];
    tx[0] = (double)tl_float(ix - (unsigned)(e0 << 23));
    int n = tl_rem_pio2_large(tx, 1, ty, e0, 0);
    if (sign) {
        *y = -ty[0];
        return -n;
    }
    *y = ty[0];
    return n;
}

__device__ inline float tl_sinf(float x) {
    const double S1_PIO2 = tl_double(0x3ff921fb54442d18ull), S2_PIO2 = tl_double(0x400921fb54442d18ull);
    const double S3_PIO2 = tl_double(0x4012d97c7f3321d2ull), S4_PIO2 = tl_double(0x401921fb54442d18ull);
    double x64 = (double)x;
    unsigned ix = tl_bits32(x);
    bool sign = (ix >> 31) != 0;
    ix &= 0x7fffffffu;
    if (ix <= 0x3f490fdau) {  // |x| ~<= pi/4
        if (ix < 0x39800000u) return x;  // |x| < 2^-12
        return tl_k_sinf(x64);
    }
    if (ix <= 0x407b53d1u) {  // |x| ~<= 5*pi/4
        if (ix <= 0x4016cbe3u) {  // |x| ~<= 3*pi/4
            if (sign) return -tl_k_cosf(x64 + S1_PIO2);
            return tl_k_cosf(x64 - S1_PIO2);
        }
        return tl_k_sinf(sign ? -(x64 + S2_PIO2) : -(x64 - S2_PIO2));
    }
    if (ix <= 0x40e231d5u) {  // |x| ~<= 9*pi/4
        if (ix <= 0x40afeddfu) {  // |x| ~<= 7*pi/4
            if (sign) return tl_k_cosf(x64 + S3_PIO2);
            return -tl_k_cosf(x64 - S3_PIO2);
        }
        return tl_k_sinf(sign ? x64 + S4_PIO2 : x64 - S4_PIO2);
    }
    if (ix >= 0x7f800000u) return x - x;  // sin(inf or NaN) is NaN
    double y;
    int n = tl_rem_pio2f(x, &y);
    switch (n & 3) {
        case 0: return tl_k_sinf(y);
        case 1: return tl_k_cosf(y);
        case 2: return tl_k_sinf(-y);
        default: return -tl_k_cosf(y);
    }
}

__device__ inline float tl_cosf(float x) {
    const double C1_PIO2 = tl_double(0x3ff921fb54442d18ull), C2_PIO2 = tl_double(0x400921fb54442d18ull);
    const double C3_PIO2 = tl_double(0x4012d97c7f3321d2ull), C4_PIO2 = tl_double(0x401921fb54442d18ull);
    double x64 = (double)x;
    unsigned ix = tl_bits32(x);
    bool sign = (ix >> 31) != 0;
    ix &= 0x7fffffffu;
    if (ix <= 0x3f490fdau) {  // |x| ~<= pi/4
        if (ix < 0x39800000u) return 1.0f;  // |x| < 2^-12
        return tl_k_cosf(x64);
    }
    if (ix <= 0x407b53d1u) {  // |x| ~<= 5*pi/4
        if (ix > 0x4016cbe3u) return -tl_k_cosf(sign ? x64 + C2_PIO2 : x64 - C2_PIO2);  // |x| ~> 3*pi/4
        if (sign) return tl_k_sinf(x64 + C1_PIO2);
        return tl_k_sinf(C1_PIO2 - x64);
    }
    if (ix <= 0x40e231d5u) {  // |x| ~<= 9*pi/4
        if (ix > 0x40afeddfu) return tl_k_cosf(sign ? x64 + C4_PIO2 : x64 - C4_PIO2);  // |x| ~> 7*pi/4
        if (sign) return tl_k_sinf(-x64 - C3_PIO2);
        return tl_k_sinf(x64 - C3_PIO2);
    }
    if (ix >= 0x7f800000u) return x - x;  // cos(inf or NaN) is NaN
    double y;
    int n = tl_rem_pio2f(x, &y);
    switch (n & 3) {
        case 0: return tl_k_cosf(y);
        case 1: return tl_k_sinf(-y);
        case 2: return -tl_k_cosf(y);
        default: return tl_k_sinf(y);
    }
}

// atanf's tables: atan(0.5), atan(1), atan(1.5), atan(inf) split high and low, and the
// polynomial's coefficients.
__device__ const float tl_atanf_hi[4] = {4.6364760399e-01f, 7.8539812565e-01f, 9.8279368877e-01f, 1.5707962513e+00f};
__device__ const float tl_atanf_lo[4] = {5.0121582440e-09f, 3.7748947079e-08f, 3.4473217170e-08f, 7.5497894159e-08f};
__device__ const float tl_atanf_t[5] = {3.3333328366e-01f, -1.9999158382e-01f, 1.4253635705e-01f,
                                        -1.0648017377e-01f, 6.1687607318e-02f};

__device__ inline float tl_atanf(float x) {
    const float x1p_120 = tl_float(0x03800000u);
    unsigned ix = tl_bits32(x);
    bool sign = (ix >> 31) != 0;
    ix &= 0x7fffffffu;
    if (ix >= 0x4c800000u) {  // |x| >= 2^26
        if (x != x) return x;
        float z = tl_atanf_hi[3] + x1p_120;
        return sign ? -z : z;
    }
    int id;
    if (ix < 0x3ee00000u) {  // |x| < 0.4375
        if (ix < 0x39800000u) return x;  // |x| < 2^-12
        id = -1;
    } else {
        x = fabsf(x);
        if (ix < 0x3f980000u) {  // |x| < 1.1875
            if (ix < 0x3f300000u) {  // 7/16 <= |x| < 11/16
                x = (2.0f * x - 1.0f) / (2.0f + x);
                id = 0;
            } else {  // 11/16 <= |x| < 19/16
                x = (x - 1.0f) / (x + 1.0f);
                id = 1;
            }
        } else if (ix < 0x401c0000u) {  // |x| < 2.4375
            x = (x - 1.5f) / (1.0f + 1.5f * x);
            id = 2;
        } else {  // 2.4375 <= |x| < 2^26
            x = -1.0f / x;
            id = 3;
        }
    }
    float z = x * x;
    float w = z * z;
    float s1 = z * (tl_atanf_t[0] + w * (tl_atanf_t[2] + w * tl_atanf_t[4]));
    float s2 = w * (tl_atanf_t[1] + w * tl_atanf_t[3]);
    if (id < 0) return x - x * (s1 + s2);
    z = tl_atanf_hi[id] - ((x * (s1 + s2) - tl_atanf_lo[id]) - x);
    return sign ? -z : z;
}

__device__ inline float tl_atan2f(float y, float x) {
    const float PI = 3.1415927410e+00f, PI_LO = -8.7422776573e-08f;
    if (x != x || y != y) return x + y;
    unsigned ix = tl_bits32(x), iy = tl_bits32(y);
    if (ix == 0x3f800000u) return tl_atanf(y);  // x = 1
    unsigned m = ((iy >> 31) & 1u) | ((ix >> 30) & 2u);  // 2*sign(x) + sign(y)
    ix &= 0x7fffffffu;
    iy &= 0x7fffffffu;
    if (iy == 0) {
        switch (m) {
            case 0: case 1: return y;  // atan(+-0, +anything) = +-0
            case 2: return PI;  // atan(+0, -anything) = pi
            default: return -PI;  // atan(-0, -anything) = -pi
        }
    }
    if (ix == 0) return (m & 1u) != 0 ? -PI / 2.0f : PI / 2.0f;
    if (ix == 0x7f800000u) {
        if (iy == 0x7f800000u) {
            switch (m) {
                case 0: return PI / 4.0f;
                case 1: return -PI / 4.0f;
                case 2: return 3.0f * PI / 4.0f;
                default: return -3.0f * PI / 4.0f;
            }
        }
        switch (m) {
            case 0: return 0.0f;
            case 1: return -0.0f;
            case 2: return PI;
            default: return -PI;
        }
    }
    // |y/x| > 2^26
    if (ix + (26u << 23) < iy || iy == 0x7f800000u) return (m & 1u) != 0 ? -PI / 2.0f : PI / 2.0f;
    // atan(|y/x|); 0 for |y/x| < 2^-26 with x < 0
    float z = ((m & 2u) != 0 && iy + (26u << 23) < ix) ? 0.0f : tl_atanf(fabsf(y / x));
    switch (m) {
        case 0: return z;  // atan(+, +)
        case 1: return -z;  // atan(-, +)
        case 2: return PI - (z - PI_LO);  // atan(+, -)
        default: return (z - PI_LO) - PI;  // atan(-, -)
    }
}

// powf: log2|x| in two pieces t1 + t2, y * log2|x| = n + y' in simulated extra precision, then
// 2^n * 2^y'. Its tables: bp[k] and log2(bp[k]) split high and low.
__device__ const float tl_powf_bp[2] = {1.0f, 1.5f};
__device__ const float tl_powf_dp_h[2] = {0.0f, 5.84960938e-01f};  // 0x3f15c000
__device__ const float tl_powf_dp_l[2] = {0.0f, 1.56322085e-06f};  // 0x35d1cfdc

__device__ inline float tl_powf(float x, float y) {
    const float TWO24 = 16777216.0f, huge = 1.0e30f, tiny = 1.0e-30f, OVT = 4.2995665694e-08f;
    const float L1 = 6.0000002384e-01f, L2 = 4.2857143283e-01f, L3 = 3.3333334327e-01f;
    const float L4 = 2.7272811532e-01f, L5 = 2.3066075146e-01f, L6 = 2.0697501302e-01f;
    const float P1 = 1.6666667163e-01f, P2 = -2.7777778450e-03f, P3 = 6.6137559770e-05f;
    const float P4 = -1.6533901999e-06f, P5 = 4.1381369442e-08f;
    const float LG2 = 6.9314718246e-01f, LG2_H = 6.93145752e-01f, LG2_L = 1.42860654e-06f;
    const float CP = 9.6179670095e-01f, CP_H = 9.6191406250e-01f, CP_L = -1.1736857402e-04f;
    const float IVLN2 = 1.4426950216e+00f, IVLN2_H = 1.4426879883e+00f, IVLN2_L = 7.0526075433e-06f;
    int hx = (int)tl_bits32(x), hy = (int)tl_bits32(y), ix = hx & 0x7fffffff, iy = hy & 0x7fffffff;
    if (iy == 0 || hx == 0x3f800000) return 1.0f;  // x**0 = 1 and 1**y = 1, even for a NaN
    if (ix > 0x7f800000 || iy > 0x7f800000) return x + y;  // NaN if either is NaN
    // For x < 0: yisint is 0 if y is not an integer, 1 if an odd one, 2 if an even one.
    int yisint = 0;
    if (hx < 0 && iy >= 0x4b800000) yisint = 2;
    else if (hx < 0 && iy >= 0x3f800000) {
        int k = (iy >> 23) - 0x7f, j = iy >> (23 - k);
        if ((j << (23 - k)) == iy) yisint = 2 - (j & 1);
    }
    // y is +-inf: (-1)**+-inf is 1, (|x|>1)**+-inf = inf, 0, (|x|<1)**+-inf = 0, inf
    if (iy == 0x7f800000) return ix == 0x3f800000 ? 1.0f : ix > 0x3f800000 ? (hy >= 0 ? y : 0.0f) : (hy >= 0 ? 0.0f : -y);
    if (iy == 0x3f800000) return hy >= 0 ? x : 1.0f / x;  // y is +-1
    if (hy == 0x40000000) return x * x;  // y is 2
    if (hy == 0x3f000000 && hx >= 0) return sqrtf(x);  // y is 0.5, x >= +0
    float ax = fabsf(x);
    if (ix == 0x7f800000 || ix == 0 || ix == 0x3f800000) {  // x is +-0, +-inf, +-1
        float z = hy < 0 ? 1.0f / ax : ax;
        if (hx < 0 && ((ix - 0x3f800000) | yisint) == 0) z = (z - z) / (z - z);  // (-1)**non-int is NaN
        else if (hx < 0 && yisint == 1) z = -z;  // (x<0)**odd = -(|x|**odd)
        return z;
    }
    if (hx < 0 && yisint == 0) return (x - x) / (x - x);  // (x<0)**(non-int) is NaN
    float sn = hx < 0 && yisint == 1 ? -1.0f : 1.0f;  // the sign of the result
    float t1, t2;
    if (iy > 0x4d000000) {  // |y| > 2^27: over/underflow unless |1-x| <= 2^-20
        if (ix < 0x3f7ffff8) return hy < 0 ? sn * huge * huge : sn * tiny * tiny;
        if (ix > 0x3f800007) return hy > 0 ? sn * huge * huge : sn * tiny * tiny;
        float t = ax - 1.0f;  // log(x) by x - x^2/2 + x^3/3 - x^4/4
        float w = (t * t) * (0.5f - t * (0.333333333333f - t * 0.25f));
        float u = IVLN2_H * t, v = t * IVLN2_L - w * IVLN2;
        t1 = tl_float(tl_bits32(u + v) & 0xfffff000u);
        t2 = v - (t1 - u);
    } else {
        int n = 0;
        if (ix < 0x00800000) { ax *= TWO24; n -= 24; ix = (int)tl_bits32(ax); }  // subnormal x
        n += (ix >> 23) - 0x7f;
        int j = ix & 0x007fffff, k = 0;
        ix = j | 0x3f800000;
        if (j > 0x1cc471 && j < 0x5db3d7) k = 1;  // sqrt(3/2) < |x| < sqrt(3); else k = 0
        else if (j >= 0x5db3d7) { n += 1; ix -= 0x00800000; }
        ax = tl_float((unsigned)ix);
        // s = s_h + s_l = (x-1)/(x+1) or (x-1.5)/(x+1.5); t_h = ax + bp[k], high
        float u = ax - tl_powf_bp[k], v = 1.0f / (ax + tl_powf_bp[k]), s = u * v;
        float s_h = tl_float(tl_bits32(s) & 0xfffff000u);
        unsigned is = (((unsigned)ix >> 1) & 0xfffff000u) | 0x20000000u;
        float t_h = tl_float(is + 0x00400000u + ((unsigned)k << 21));
        float t_l = ax - (t_h - tl_powf_bp[k]);
        float s_l = v * ((u - s_h * t_h) - s_h * t_l);
        // log(ax), then u + v = s*(1+...), then 2/(3log2)*(s+...), cp_h + cp_l = 2/(3*log2)
        float s2 = s * s;
        float r = s2 * s2 * (L1 + s2 * (L2 + s2 * (L3 + s2 * (L4 + s2 * (L5 + s2 * L6)))));
        r += s_l * (s_h + s);
        s2 = s_h * s_h;
        t_h = tl_float(tl_bits32(3.0f + s2 + r) & 0xfffff000u);
        t_l = r - ((t_h - 3.0f) - s2);
        u = s_h * t_h;
        v = s_l * t_h + t_l * s;
        float p_h = tl_float(tl_bits32(u + v) & 0xfffff000u), p_l = v - (p_h - u);
        float z_h = CP_H * p_h, z_l = CP_L * p_h + p_l * CP + tl_powf_dp_l[k];
        float t = (float)n;  // log2(ax) = (s+...)*2/(3*log2) = n + dp_h + z_h + z_l
        t1 = tl_float(tl_bits32(((z_h + z_l) + tl_powf_dp_h[k]) + t) & 0xfffff000u);
        t2 = z_l - (((t1 - t) - tl_powf_dp_h[k]) - z_h);
    }
    float y1 = tl_float(tl_bits32(y) & 0xfffff000u);  // (y1 + y2) * (t1 + t2), y = y1 + y2
    float p_l = (y - y1) * t1 + y * t2, p_h = y1 * t1, z = p_l + p_h;
    int j = (int)tl_bits32(z);
    if (j > 0x43000000 || (j == 0x43000000 && p_l + OVT > z - p_h)) return sn * huge * huge;  // z > 128
    if (j != 0x43000000 && ((j & 0x7fffffff) > 0x43160000 || ((unsigned)j == 0xc3160000u && p_l <= z - p_h)))
        return sn * tiny * tiny;  // z < -150
    // 2**(p_h + p_l); for |z| > 0.5, n = [z + 0.5]
    int i = j & 0x7fffffff, k = (i >> 23) - 0x7f, n = 0;
    if (i > 0x3f000000) {
        n = j + (0x00800000 >> (k + 1));
        k = ((n & 0x7fffffff) >> 23) - 0x7f;  // the new k for n
        float t = tl_float((unsigned)n & ~(0x007fffffu >> k));
        n = ((n & 0x007fffff) | 0x00800000) >> (23 - k);
        if (j < 0) n = -n;
        p_h -= t;
    }
    float t = tl_float(tl_bits32(p_l + p_h) & 0xffff8000u);
    float u = t * LG2_H, v = (p_l - (t - p_h)) * LG2 + t * LG2_L;
    z = u + v;
    float w = v - (z - u);
    t = z * z;
    t1 = z - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    float r = (z * t1) / (t1 - 2.0f) - (w + z * w);
    z = 1.0f - (r - z);
    j = (int)(tl_bits32(z) + ((unsigned)n << 23));
    return sn * ((j >> 23) <= 0 ? tl_scalbnf(z, n) : tl_float((unsigned)j));  // scalbnf: subnormal output
}

// Every later call of these in a kernel is the libm crate's algorithm.
#define expf tl_expf
#define logf tl_logf
#define expm1f tl_expm1f
#define log1pf tl_log1pf
#define tanhf tl_tanhf
#define erff tl_erff
#define sinf tl_sinf
#define cosf tl_cosf
#define atan2f tl_atan2f
#define powf tl_powf
