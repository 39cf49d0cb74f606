// The libm crate's binary64 algorithms (the CPU reference kernels' transcendentals) as device
// functions, so a CUDA kernel gives the CPU's bits: the same IEEE operations in the same order
// (NVRTC runs with --fmad=false, the emulator with -ffp-contract=off). Each follows the libm
// crate's Rust (a port of musl, itself from FreeBSD's msun):
//   Copyright (C) 1993, 2004 by Sun Microsystems, Inc. All rights reserved.
//   Permission to use, copy, modify, and distribute this software is freely granted, provided
//   that this notice is preserved.
// The macros at the end send the kernels' exp/log/expm1/log1p/tanh/erf calls here; sin, cos and pow still
// use the platform's (docs/numerics.md). kernels.rs includes the file of the kernels' width.

__device__ __forceinline__ unsigned long long tl_bits64(double x) { return (unsigned long long)__double_as_longlong(x); }

__device__ __forceinline__ double tl_double(unsigned long long b) { return __longlong_as_double((long long)b); }

// scalbn (libm's generic form): prescale by at most two steps, then one exact power of two.

__device__ inline double tl_scalbn(double x, int n) {
    const double f_max = tl_double(0x7fe0000000000000ull);
    const double mul = tl_double(0x0010000000000000ull) * tl_double(0x4340000000000000ull);
    if (n > 1023) {
        x *= f_max; n -= 1023;
        if (n > 1023) { x *= f_max; n -= 1023; if (n > 1023) n = 1023; }
    } else if (n < -1022) {
        x *= mul; n += 1022 - 53;
        if (n < -1022) { x *= mul; n += 1022 - 53; if (n < -1022) n = -1022; }
    }
    return x * tl_double((unsigned long long)(1023 + n) << 52);
}

__device__ inline double tl_exp(double x) {
    const double LN2HI = 6.93147180369123816490e-01, LN2LO = 1.90821492927058770002e-10;
    const double INVLN2 = 1.44269504088896338700e+00;
    const double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03;
    const double P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06;
    const double P5 = 4.13813679705723846039e-08;
    unsigned hx = (unsigned)(tl_bits64(x) >> 32);
    int sign = (int)(hx >> 31);
    hx &= 0x7fffffffu;
    if (hx >= 0x4086232bu) {
        if (x != x) return x;
        if (x > 709.782712893383973096) return x * tl_double(0x7fe0000000000000ull);
        if (x < -708.39641853226410622 && x < -745.13321910194110842) return 0.0;
    }
    int k; double hi, lo;
    if (hx > 0x3fd62e42u) {
        if (hx >= 0x3ff0a2b2u) k = (int)(INVLN2 * x + (sign ? -0.5 : 0.5));
        else k = 1 - sign - sign;
        hi = x - (double)k * LN2HI;
        lo = (double)k * LN2LO;
        x = hi - lo;
    } else if (hx > 0x3e300000u) {
        k = 0; hi = x; lo = 0.0;
    } else {
        return 1.0 + x;
    }
    double xx = x * x;
    double c = x - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
    double y = 1.0 + (x * c / (2.0 - c) - lo + hi);
    return k == 0 ? y : tl_scalbn(y, k);
}

__device__ inline double tl_log(double x) {
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
    const double LG1 = 6.666666666666735130e-01, LG2 = 3.999999999940941908e-01;
    const double LG3 = 2.857142874366239149e-01, LG4 = 2.222219843214978396e-01;
    const double LG5 = 1.818357216161805012e-01, LG6 = 1.531383769920937332e-01;
    const double LG7 = 1.479819860511658591e-01;
    unsigned long long ui = tl_bits64(x);
    unsigned hx = (unsigned)(ui >> 32);
    int k = 0;
    if (hx < 0x00100000u || (hx >> 31) != 0) {
        if ((ui << 1) == 0) return -1.0 / (x * x);
        if ((hx >> 31) != 0) return (x - x) / 0.0;
        k -= 54;
        x *= tl_double(0x4350000000000000ull);
        ui = tl_bits64(x);
        hx = (unsigned)(ui >> 32);
    } else if (hx >= 0x7ff00000u) {
        return x;
    } else if (hx == 0x3ff00000u && (ui << 32) == 0) {
        return 0.0;
    }
    hx += 0x3ff00000u - 0x3fe6a09eu;
    k += (int)(hx >> 20) - 0x3ff;
    hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
    ui = ((unsigned long long)hx << 32) | (ui & 0xffffffffull);
    x = tl_double(ui);
    double f = x - 1.0;
    double hfsq = 0.5 * f * f;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (LG2 + w * (LG4 + w * LG6));
    double t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    double r = t2 + t1;
    double dk = (double)k;
    return s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
}

__device__ inline double tl_expm1(double x) {
    const double O_THRESHOLD = 7.09782712893383973096e+02;
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
    const double INVLN2 = 1.44269504088896338700e+00;
    const double Q1 = -3.33333333333331316428e-02, Q2 = 1.58730158725481460165e-03;
    const double Q3 = -7.93650757867487942473e-05, Q4 = 4.00821782732936239552e-06;
    const double Q5 = -2.01099218183624371326e-07;
    unsigned long long ui = tl_bits64(x);
    unsigned hx = (unsigned)((ui >> 32) & 0x7fffffffull);
    int sign = (int)(ui >> 63);
    if (hx >= 0x4043687Au) {
        if (x != x) return x;
        if (sign != 0) return -1.0;
        if (x > O_THRESHOLD) return x * tl_double(0x7fe0000000000000ull);
    }
    int k; double hi, lo, c, t;
    if (hx > 0x3fd62e42u) {
        if (hx < 0x3FF0A2B2u) {
            if (sign == 0) { hi = x - LN2_HI; lo = LN2_LO; k = 1; }
            else { hi = x + LN2_HI; lo = -LN2_LO; k = -1; }
        } else {
            k = (int)(INVLN2 * x + (sign != 0 ? -0.5 : 0.5));
            t = (double)k;
            hi = x - t * LN2_HI;
            lo = t * LN2_LO;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x3c900000u) {
        return x;
    } else {
        c = 0.0; k = 0;
    }
    double hfx = 0.5 * x;
    double hxs = x * hfx;
    double r1 = 1.0 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    t = 3.0 - r1 * hfx;
    double e = hxs * ((r1 - t) / (6.0 - x * t));
    if (k == 0) return x - (x * e - hxs);
    e = x * (e - c) - c;
    e -= hxs;
    if (k == -1) return 0.5 * (x - e) - 0.5;
    if (k == 1) {
        if (x < -0.25) return -2.0 * (e - (x + 0.5));
        return 1.0 + 2.0 * (x - e);
    }
    double twopk = tl_double((unsigned long long)(0x3ff + k) << 52);
    double y;
    if (k < 0 || k > 56) {
        y = x - e + 1.0;
        if (k == 1024) y = y * 2.0 * tl_double(0x7fe0000000000000ull);
        else y = y * twopk;
        return y - 1.0;
    }
    double uf = tl_double((unsigned long long)(0x3ff - k) << 52);
    if (k < 20) y = (x - e + (1.0 - uf)) * twopk;
    else y = (x - (e + uf) + 1.0) * twopk;
    return y;
}

__device__ inline double tl_log1p(double x) {
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
    const double LG1 = 6.666666666666735130e-01, LG2 = 3.999999999940941908e-01;
    const double LG3 = 2.857142874366239149e-01, LG4 = 2.222219843214978396e-01;
    const double LG5 = 1.818357216161805012e-01, LG6 = 1.531383769920937332e-01;
    const double LG7 = 1.479819860511658591e-01;
    unsigned long long ui = tl_bits64(x);
    double f = 0.0, c = 0.0;
    unsigned hx = (unsigned)(ui >> 32), hu;
    int k = 1;
    if (hx < 0x3fda827au || (hx >> 31) > 0) {
        if (hx >= 0xbff00000u) {
            if (x == -1.0) return x / 0.0;
            return (x - x) / 0.0;
        }
        if ((hx << 1) < (0x3ca00000u << 1)) return x;
        if (hx <= 0xbfd2bec4u) { k = 0; c = 0.0; f = x; }
    } else if (hx >= 0x7ff00000u) {
        return x;
    }
    if (k > 0) {
        ui = tl_bits64(1.0 + x);
        hu = (unsigned)(ui >> 32);
        hu += 0x3ff00000u - 0x3fe6a09eu;
        k = (int)(hu >> 20) - 0x3ff;
        if (k < 54) {
            c = k >= 2 ? 1.0 - (tl_double(ui) - x) : x - (tl_double(ui) - 1.0);
            c /= tl_double(ui);
        } else {
            c = 0.0;
        }
        hu = (hu & 0x000fffffu) + 0x3fe6a09eu;
        ui = ((unsigned long long)hu << 32) | (ui & 0xffffffffull);
        f = tl_double(ui) - 1.0;
    }
    double hfsq = 0.5 * f * f;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (LG2 + w * (LG4 + w * LG6));
    double t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    double r = t2 + t1;
    double dk = (double)k;
    return s * (hfsq + r) + (dk * LN2_LO + c) - hfsq + f + dk * LN2_HI;
}

__device__ inline double tl_tanh(double x) {
    unsigned long long ui = tl_bits64(x);
    bool sign = (ui >> 63) != 0;
    ui &= 0x7fffffffffffffffull;
    x = tl_double(ui);
    unsigned w = (unsigned)(ui >> 32);
    double t;
    if (w > 0x3fe193eau) {
        if (w > 0x40340000u) t = 1.0 - 0.0 / x;
        else { t = tl_expm1(2.0 * x); t = 1.0 - 2.0 / (t + 2.0); }
    } else if (w > 0x3fd058aeu) {
        t = tl_expm1(2.0 * x); t = t / (t + 2.0);
    } else if (w >= 0x00100000u) {
        t = tl_expm1(-2.0 * x); t = -t / (t + 2.0);
    } else {
        t = x;
    }
    return sign ? -t : t;
}

__device__ inline double tl_erf(double x) {
    const double ERX = 8.45062911510467529297e-01, EFX8 = 1.02703333676410069053e+00;
    const double PP0 = 1.28379167095512558561e-01, PP1 = -3.25042107247001499370e-01;
    const double PP2 = -2.84817495755985104766e-02, PP3 = -5.77027029648944159157e-03;
    const double PP4 = -2.37630166566501626084e-05;
    const double QQ1 = 3.97917223959155352819e-01, QQ2 = 6.50222499887672944485e-02;
    const double QQ3 = 5.08130628187576562776e-03, QQ4 = 1.32494738004321644526e-04;
    const double QQ5 = -3.96022827877536812320e-06;
    const double PA0 = -2.36211856075265944077e-03, PA1 = 4.14856118683748331666e-01;
    const double PA2 = -3.72207876035701323847e-01, PA3 = 3.18346619901161753674e-01;
    const double PA4 = -1.10894694282396677476e-01, PA5 = 3.54783043256182359371e-02;
    const double PA6 = -2.16637559486879084300e-03;
    const double QA1 = 1.06420880400844228286e-01, QA2 = 5.40397917702171048937e-01;
    const double QA3 = 7.18286544141962662868e-02, QA4 = 1.26171219808761642112e-01;
    const double QA5 = 1.36370839120290507362e-02, QA6 = 1.19844998467991074170e-02;
    const double RA0 = -9.86494403484714822705e-03, RA1 = -6.93858572707181764372e-01;
    const double RA2 = -1.05586262253232909814e+01, RA3 = -6.23753324503260060396e+01;
    const double RA4 = -1.62396669462573470355e+02, RA5 = -1.84605092906711035994e+02;
    const double RA6 = -8.12874355063065934246e+01, RA7 = -9.81432934416914548592e+00;
    const double SA1 = 1.96512716674392571292e+01, SA2 = 1.37657754143519042600e+02;
    const double SA3 = 4.34565877475229228821e+02, SA4 = 6.45387271733267880336e+02;
    const double SA5 = 4.29008140027567833386e+02, SA6 = 1.08635005541779435134e+02;
    const double SA7 = 6.57024977031928170135e+00, SA8 = -6.04244152148580987438e-02;
    const double RB0 = -9.86494292470009928597e-03, RB1 = -7.99283237680523006574e-01;
    const double RB2 = -1.77579549177547519889e+01, RB3 = -1.60636384855821916062e+02;
    const double RB4 = -6.37566443368389627722e+02, RB5 = -1.02509513161107724954e+03;
    const double RB6 = -4.83519191608651397019e+02;
    const double SB1 = 3.03380607434824582924e+01, SB2 = 3.25792512996573918826e+02;
    const double SB3 = 1.53672958608443695994e+03, SB4 = 3.19985821950859553908e+03;
    const double SB5 = 2.55305040643316442583e+03, SB6 = 4.74528541206955367215e+02;
    const double SB7 = -2.24409524465858183362e+01;
    unsigned ix = (unsigned)(tl_bits64(x) >> 32);
    int sign = (int)(ix >> 31);
    ix &= 0x7fffffffu;
    if (ix >= 0x7ff00000u) return 1.0 - 2.0 * (double)sign + 1.0 / x;
    if (ix < 0x3feb0000u) {
        if (ix < 0x3e300000u) return 0.125 * (8.0 * x + EFX8 * x);
        double z = x * x;
        double r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
        double s = 1.0 + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
        double y = r / s;
        return x + x * y;
    }
    double y;
    if (ix < 0x40180000u) {
        double erfc;
        double ax = tl_double(tl_bits64(x) & 0x7fffffffffffffffull);
        if (ix < 0x3ff40000u) {
            double s = ax - 1.0;
            double p = PA0 + s * (PA1 + s * (PA2 + s * (PA3 + s * (PA4 + s * (PA5 + s * PA6)))));
            double q = 1.0 + s * (QA1 + s * (QA2 + s * (QA3 + s * (QA4 + s * (QA5 + s * QA6)))));
            erfc = 1.0 - ERX - p / q;
        } else {
            double s = 1.0 / (ax * ax), r, big_s;
            if (ix < 0x4006db6du) {
                r = RA0 + s * (RA1 + s * (RA2 + s * (RA3 + s * (RA4 + s * (RA5 + s * (RA6 + s * RA7))))));
                big_s = 1.0 + s * (SA1 + s * (SA2 + s * (SA3 + s * (SA4 + s * (SA5 + s * (SA6 + s * (SA7 + s * SA8)))))));
            } else {
                r = RB0 + s * (RB1 + s * (RB2 + s * (RB3 + s * (RB4 + s * (RB5 + s * RB6)))));
                big_s = 1.0 + s * (SB1 + s * (SB2 + s * (SB3 + s * (SB4 + s * (SB5 + s * (SB6 + s * SB7))))));
            }
            double z = tl_double(tl_bits64(ax) & 0xffffffff00000000ull);
            erfc = tl_exp(-z * z - 0.5625) * tl_exp((z - ax) * (z + ax) + r / big_s) / ax;
        }
        y = 1.0 - erfc;
    } else {
        y = 1.0 - tl_double(0x0010000000000000ull);
    }
    return sign ? -y : y;
}

// Every later call of these in a kernel is the libm crate's algorithm.
#define exp tl_exp
#define log tl_log
#define expm1 tl_expm1
#define log1p tl_log1p
#define tanh tl_tanh
#define erf tl_erf
