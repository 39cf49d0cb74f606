// The libm crate's multi-precision reduction of a huge argument by pi/2 (rem_pio2_large, its
// k_rem_pio2), shared by f32 sin/cos (rem_pio2f, |x| >= 2^28*pi/2) and f64 sin/cos (rem_pio2,
// |x| >= 2^20*pi/2), with the binary64 helpers both widths need: the same IEEE operations in
// the same order (NVRTC runs with --fmad=false, the emulator with -ffp-contract=off). It follows
// the libm crate's Rust (a port of musl, itself from FreeBSD's msun):
//   Copyright (C) 1993, 2004 by Sun Microsystems, Inc. All rights reserved.
//   Permission to use, copy, modify, and distribute this software is freely granted, provided
//   that this notice is preserved.
// kernels.rs includes this file before libm_f32.cu or libm_f64.cu.

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

// 2/pi in 24-bit chunks: chunk i is tl_ipio2[i] * 2^(-24(i+1)). The first 66 of the crate's
// 690 (its table on 32-bit targets): binary64's largest exponent reads no further than index 60.
__device__ const int tl_ipio2[66] = {
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163, 0xABDEBB, 0xC561B7,
    0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129, 0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C,
    0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C, 0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11,
    0x8B5A0A, 0x6D1F6D, 0x367ECF, 0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7,
    0x8A5292, 0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3, 0x91615E,
    0xE61B08, 0x659985, 0x5F14A0, 0x68408D, 0xFFD880, 0x4D7327, 0x310606, 0x1556CA, 0x73A8C9, 0x60E27B, 0xC08C6B,
};

// pi/2 in 24-bit pieces.
__device__ const double tl_pio2[8] = {
    1.57079625129699707031e+00, 7.54978941586159635335e-08, 5.39030252995776476554e-15,
    3.28200341580791294123e-22, 1.27065575308067607349e-29, 1.22933308981111328932e-36,
    2.73370053816464559624e-44, 2.16741683877804819444e-51,
};

// x[0..nx) are the 24-bit chunks of |input| * 2^-e0; writes the remainder mod pi/2 to y (y[0]
// for prec 0; y[0] + y[1] for prec 1 and 2; y[0] + y[1] + y[2] for prec 3) and returns the
// quotient mod 8.
__device__ inline int tl_rem_pio2_large(const double* x, int nx, double* y, int e0, int prec) {
    const double x1p24 = tl_double(0x4170000000000000ull), x1p_24 = tl_double(0x3e70000000000000ull);
    double f[20], fq[20], q[20];
    int iq[20];
    double fw, z;
    int n, ih;
    const int jk = prec == 0 ? 3 : prec == 3 ? 6 : 4;
    const int jp = jk;
    // jx, jv, q0 (q0 < 3).
    const int jx = nx - 1;
    int jv = (e0 - 3) / 24;
    if (jv < 0) jv = 0;
    int q0 = e0 - 24 * (jv + 1);
    // f[0] to f[jx + jk], where f[jx + jk] = ipio2[jv + jk].
    int j = jv - jx;
    const int m = jx + jk;
    for (int i = 0; i <= m; i++, j++) f[i] = j < 0 ? 0.0 : (double)tl_ipio2[j];
    // q[0], q[1], ... q[jk].
    for (int i = 0; i <= jk; i++) {
        fw = 0.0;
        for (int jj = 0; jj <= jx; jj++) fw += x[jj] * f[jx + i - jj];
        q[i] = fw;
    }
    int jz = jk;
    for (;;) {
        // Distill q[] into iq[] reversingly.
        int i = 0;
        z = q[jz];
        for (int jj = jz; jj >= 1; jj--) {
            fw = (double)(int)(x1p_24 * z);
            iq[i] = (int)(z - x1p24 * fw);
            z = q[jj - 1] + fw;
            i++;
        }
        // n.
        z = tl_scalbn(z, q0);
        z -= 8.0 * floor(z * 0.125);
        n = (int)z;
        z -= (double)n;
        ih = 0;
        if (q0 > 0) {
            i = iq[jz - 1] >> (24 - q0);
            n += i;
            iq[jz - 1] -= i << (24 - q0);
            ih = iq[jz - 1] >> (23 - q0);
        } else if (q0 == 0) {
            ih = iq[jz - 1] >> 23;
        } else if (z >= 0.5) {
            ih = 2;
        }
        if (ih > 0) {  // q > 0.5
            n += 1;
            int carry = 0;
            for (int ii = 0; ii < jz; ii++) {  // 1 - q
                int jj = iq[ii];
                if (carry == 0) {
                    if (jj != 0) { carry = 1; iq[ii] = 0x1000000 - jj; }
                } else {
                    iq[ii] = 0xffffff - jj;
                }
            }
            if (q0 > 0) {
                if (q0 == 1) iq[jz - 1] &= 0x7fffff;
                else if (q0 == 2) iq[jz - 1] &= 0x3fffff;
            }
            if (ih == 2) {
                z = 1.0 - z;
                if (carry != 0) z -= tl_scalbn(1.0, q0);
            }
        }
        // Recompute with more terms when every chunk cancelled.
        if (z == 0.0) {
            int jj = 0;
            for (int ii = jz - 1; ii >= jk; ii--) jj |= iq[ii];
            if (jj == 0) {
                int k = 1;
                while (iq[jk - k] == 0) k++;
                for (int ii = jz + 1; ii <= jz + k; ii++) {
                    f[jx + ii] = (double)tl_ipio2[jv + ii];
                    fw = 0.0;
                    for (int jt = 0; jt <= jx; jt++) fw += x[jt] * f[jx + ii - jt];
                    q[ii] = fw;
                }
                jz += k;
                continue;
            }
        }
        break;
    }
    // Chop off zero terms, or break z into 24-bit chunks.
    if (z == 0.0) {
        jz -= 1;
        q0 -= 24;
        while (iq[jz] == 0) { jz--; q0 -= 24; }
    } else {
        z = tl_scalbn(z, -q0);
        if (z >= x1p24) {
            fw = (double)(int)(x1p_24 * z);
            iq[jz] = (int)(z - x1p24 * fw);
            jz += 1;
            q0 += 24;
            iq[jz] = (int)fw;
        } else {
            iq[jz] = (int)z;
        }
    }
    // The integer chunks as floating-point values.
    fw = tl_scalbn(1.0, q0);
    for (int i = jz; i >= 0; i--) {
        q[i] = fw * (double)iq[i];
        fw *= x1p_24;
    }
    // pio2[0..=jp] * q[jz..=0].
    for (int i = jz; i >= 0; i--) {
        fw = 0.0;
        for (int k = 0; k <= jp && k <= jz - i; k++) fw += tl_pio2[k] * q[i + k];
        fq[jz - i] = fw;
    }
    // Compress fq[] into y[].
    if (prec == 0) {
        fw = 0.0;
        for (int i = jz; i >= 0; i--) fw += fq[i];
        y[0] = ih == 0 ? fw : -fw;
    } else if (prec == 1 || prec == 2) {
        fw = 0.0;
        for (int i = jz; i >= 0; i--) fw += fq[i];
        y[0] = ih == 0 ? fw : -fw;
        fw = fq[0] - fw;
        for (int i = 1; i <= jz; i++) fw += fq[i];
        y[1] = ih == 0 ? fw : -fw;
    } else if (prec == 3) {
        for (int i = jz; i >= 1; i--) {
            fw = fq[i - 1] + fq[i];
            fq[i] += fq[i - 1] - fw;
            fq[i - 1] = fw;
        }
        for (int i = jz; i >= 2; i--) {
            fw = fq[i - 1] + fq[i];
            fq[i] += fq[i - 1] - fw;
            fq[i - 1] = fw;
        }
        fw = 0.0;
        for (int i = jz; i >= 2; i--) fw += fq[i];
        if (ih == 0) { y[0] = fq[0]; y[1] = fq[1]; y[2] = fw; }
        else { y[0] = -fq[0]; y[1] = -fq[1]; y[2] = -fw; }
    }
    return n & 7;
}
