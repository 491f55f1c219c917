// patch_conv's CUDA kernel (arrayconv._methods._patch_cuda). Compiled by NVRTC with T (the
// element type) and THREADS, C, H, W, KH, KW, PH, PW, SH, SW, OH, OW, HP, WP, D, DT, RD, PT,
// XSTRIDE, WALIGN defined before it (arrayconv._runtime.cuda.full_source).
struct __align__(WALIGN) Filters { T v[RD]; };  // the RD weights a thread reads together

extern "C" __global__ void __launch_bounds__(THREADS) patch_correlate(
    const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, long long P)
{
    extern __shared__ __align__(16) unsigned char smem[];
    T* ws = reinterpret_cast<T*>(smem);   // [C][KH][KW][DT]
    T* xs = ws + C * KH * KW * DT;        // [PT][XSTRIDE], each patch [C][HP][WP]
    const int d_base = blockIdx.y * DT;
    for (int i = threadIdx.x; i < C * KH * KW * DT; i += blockDim.x) {
        const int dd = i % DT, ck = i / DT, d = d_base + dd;
        ws[i] = d < D ? w[(long long)d * (C * KH * KW) + ck] : T(0);
    }
    const int qy = threadIdx.x % OH;
    const int pl = (threadIdx.x / OH) % PT;
    const int dg = threadIdx.x / (OH * PT);
    for (long long p0 = (long long)blockIdx.x * PT; p0 < P; p0 += (long long)gridDim.x * PT) {
        __syncthreads();
        for (int i = threadIdx.x; i < PT * C * HP * WP; i += blockDim.x) {
            const int xx = i % WP, yy = (i / WP) % HP, pc = i / (HP * WP);
            const int pi = pc / C, c = pc % C, sy = yy - PH, sx = xx - PW;
            const long long p = p0 + pi;
            T v = T(0);
            if (p < P && sy >= 0 && sy < H && sx >= 0 && sx < W)
                v = x[((p * C + c) * H + sy) * W + sx];
            xs[pi * XSTRIDE + (c * HP + yy) * WP + xx] = v;
        }
        __syncthreads();
        T acc[RD][OW];
        #pragma unroll
        for (int r = 0; r < RD; ++r)
            #pragma unroll
            for (int q = 0; q < OW; ++q) acc[r][q] = T(0);
        const T* xp = xs + pl * XSTRIDE;
        for (int c = 0; c < C; ++c) {
            #pragma unroll
            for (int ky = 0; ky < KH; ++ky) {
                const T* xr = xp + (c * HP + qy * SH + ky) * WP;
                T row[WP];
                #pragma unroll
                for (int i = 0; i < WP; ++i) row[i] = xr[i];
                const T* wv = ws + (c * KH + ky) * KW * DT + dg * RD;
                #pragma unroll
                for (int kx = 0; kx < KW; ++kx) {
                    const Filters wk = *reinterpret_cast<const Filters*>(wv + kx * DT);  // vector loads
                    #pragma unroll
                    for (int r = 0; r < RD; ++r) {
                        const T wr = wk.v[r];
                        #pragma unroll
                        for (int q = 0; q < OW; ++q) acc[r][q] += wr * row[q * SW + kx];
                    }
                }
            }
        }
        const long long p = p0 + pl;
        if (p < P) {
            #pragma unroll
            for (int r = 0; r < RD; ++r) {
                const int d = d_base + dg * RD + r;
                if (d < D) {
                    T* yo = y + ((p * D + d) * OH + qy) * OW;
                    #pragma unroll
                    for (int q = 0; q < OW; ++q) yo[q] = acc[r][q];
                }
            }
        }
    }
}
