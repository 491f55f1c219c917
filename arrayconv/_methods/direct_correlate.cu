// The direct method's CUDA kernel (arrayconv._methods._direct_cuda). Compiled by NVRTC with
// T (the element type) and THREADS, OB, R, SEGMENT, K0, K1, K2 defined before it
// (arrayconv._runtime.cuda.full_source).
extern "C" __global__ void __launch_bounds__(THREADS) direct_correlate(
    const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
    int n_maps, int G, int Cg, int Og, int OgPad,
    int S0, int S1, int S2, int N0, int N1, int N2,
    int st0, int st1, int st2, int d0, int d1, int d2, int p0, int p1, int p2)
{
    // counts of outputs in 64 bits: a grid-stride step past 2**31 must not wrap
    const long long n_out = (long long)N0 * N1 * N2;
    const int runs = (N2 + R - 1) / R;  // each thread: R neighbours along the last axis
    const long long n_work = (long long)N0 * N1 * runs;
    const long long in_map = (long long)S0 * S1 * S2;
    const int taps = K0 * K1 * K2;
    const int oblocks = OgPad / OB;
    for (int z = blockIdx.y; z < n_maps; z += gridDim.y) {
        const int ob = z % oblocks, bg = z / oblocks, g = bg % G;  // bg = b * G + g
        const T* xg = x + (long long)bg * Cg * in_map;
        const T* wg = w + (long long)g * Cg * taps * OgPad + ob * OB;
        T* yg = y + ((long long)bg * Og + ob * OB) * n_out;
        for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_work; item += (long long)gridDim.x * blockDim.x) {
            const long long row_index = item / runs;  // i0 * N1 + i1
            const int i2 = (int)(item - row_index * runs) * R, i1 = (int)(row_index % N1), i0 = (int)(row_index / N1);
            T acc[OB][R];
            #pragma unroll
            for (int j = 0; j < OB; ++j)
                #pragma unroll
                for (int r = 0; r < R; ++r) acc[j][r] = T(0);
            for (int c = 0; c < Cg; ++c) {
                const T* xc = xg + c * in_map;
                const T* wc = wg + (long long)c * taps * OgPad;
                for (int k0 = 0; k0 < K0; ++k0) {
                    const int j0 = i0 * st0 + k0 * d0 - p0;
                    if (j0 < 0 || j0 >= S0) continue;
                    for (int k1 = 0; k1 < K1; ++k1) {
                        const int j1 = i1 * st1 + k1 * d1 - p1;
                        if (j1 < 0 || j1 >= S1) continue;
                        const T* row = xc + ((long long)j0 * S1 + j1) * S2;
                        const T* wrow = wc + ((k0 * K1 + k1) * K2) * OgPad;
#if SEGMENT
                        // unit stride and dilation on the last axis: the R outputs read one
                        // segment of R + K2 - 1 inputs, loaded once into registers
                        T seg[R + K2 - 1];
                        #pragma unroll
                        for (int s = 0; s < R + K2 - 1; ++s) {
                            const int j2 = i2 - p2 + s;
                            seg[s] = (j2 >= 0 && j2 < S2) ? row[j2] : T(0);
                        }
                        #pragma unroll
                        for (int k2 = 0; k2 < K2; ++k2)
                            #pragma unroll
                            for (int j = 0; j < OB; ++j) {
                                const T wv = wrow[k2 * OgPad + j];
                                #pragma unroll
                                for (int r = 0; r < R; ++r) acc[j][r] += seg[r + k2] * wv;
                            }
#else
                        for (int k2 = 0; k2 < K2; ++k2)
                            #pragma unroll
                            for (int r = 0; r < R; ++r) {
                                const int j2 = (i2 + r) * st2 + k2 * d2 - p2;
                                if (j2 < 0 || j2 >= S2) continue;
                                const T v = row[j2];
                                #pragma unroll
                                for (int j = 0; j < OB; ++j) acc[j][r] += v * wrow[k2 * OgPad + j];
                            }
#endif
                    }
                }
            }
            T* yo = yg + row_index * N2 + i2;
            #pragma unroll
            for (int j = 0; j < OB; ++j)
                if (ob * OB + j < Og)
                    #pragma unroll
                    for (int r = 0; r < R; ++r)
                        if (i2 + r < N2) yo[(long long)j * n_out + r] = acc[j][r];
        }
    }
}
