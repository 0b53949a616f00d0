/* One instruction set's MAX pooling kernels: included by max_pool.c once per set, with NAME(f) (the
 * set's function names), TARGET (its target attribute) and VL (floats per vector) defined. */

typedef float NAME(vec) __attribute__((vector_size(VL * 4), aligned(4)));
typedef int32_t NAME(ivec) __attribute__((vector_size(VL * 4), aligned(4)));
#define VEC NAME(vec)
#define IVEC NAME(ivec)

/* a where m (a comparison's lanes: all ones), else b. */
TARGET static inline VEC NAME(pick)(IVEC m, VEC a, VEC b) { return (VEC)(((IVEC)a & m) | ((IVEC)b & ~m)); }
TARGET static inline IVEC NAME(pick_index)(IVEC m, IVEC a, IVEC b) { return (a & m) | (b & ~m); }

/* Planes [p0, p1) of x (planes of H x W): y (PH x PW a plane) = each window's largest value from
 * -FLT_MAX, the first in raster order on ties, NaN passed over, and index its h W + w (-1: none). By
 * rows, then down them: each input row's window maxima (with their columns), then for each output
 * row the first strictly larger of its window's rows, top to bottom: the raster order's first
 * maximum, as each row's own is its first. Full windows of a row (stride 1) go a vector at a time. */
/* The maxima of VL full windows of a row, starting at columns w0 .. w0 + VL - 1. */
TARGET static inline void NAME(windows)(const float *row, idx w0, idx kw, IVEC lane, float *best_out,
                                        int32_t *at_out)
{
    VEC best = (VEC){0} + LOWEST;
    IVEC at = (IVEC){0} - 1;
    for (idx j = 0; j < kw; j++) {
        const VEC v = *(const VEC *)(row + w0 + j);
        const IVEC m = v > best;
        best = NAME(pick)(m, v, best);
        at = NAME(pick_index)(m, lane + (int32_t)(w0 + j), at);
    }
    *(VEC *)(best_out + w0) = best;
    *(IVEC *)(at_out + w0) = at;
}

/* Output row r's VL columns from q: the first strictly larger of its window's rows [start, stop). */
TARGET static inline void NAME(down)(const float *row_best, const int32_t *row_at, idx start, idx stop, idx q,
                                     const pool_geometry *g, float *out, int32_t *out_at)
{
    VEC best = (VEC){0} + LOWEST;
    IVEC at = (IVEC){0} - 1;
    for (idx h = start; h < stop; h++) {
        const VEC v = *(const VEC *)(row_best + h * g->pw + q);
        const IVEC m = v > best;
        best = NAME(pick)(m, v, best);
        at = NAME(pick_index)(m, *(const IVEC *)(row_at + h * g->pw + q) + (int32_t)(h * g->w), at);
    }
    *(VEC *)(out + q) = best;
    *(IVEC *)(out_at + q) = at;
}

/* Planes [p0, p1) of x (planes of H x W): y (PH x PW a plane) = each window's largest value from
 * -FLT_MAX, the first in raster order on ties, NaN passed over, and index its h W + w (-1: none). By
 * rows, then down them: each input row's window maxima (with their columns), then for each output
 * row the first strictly larger of its window's rows, top to bottom: the raster order's first
 * maximum, as each row's own is its first. Full windows of a row (stride 1) and output columns go a
 * vector at a time, the last vector overlapping the one before where the count is not a multiple. */
TARGET static void NAME(forward)(const float *x, float *y, int32_t *index, const pool_geometry *g, idx p0,
                                 idx p1, float *scratch)
{
    const idx h_in = g->h, w_in = g->w, ph_out = g->ph, pw_out = g->pw, full = g->w - g->kw + 1;
    float *row_best = scratch, *window_best = scratch + 2 * h_in * pw_out;
    int32_t *row_at = (int32_t *)(scratch + h_in * pw_out), *window_at = (int32_t *)(window_best + w_in + VL);
    /* output columns [q_full, q_end): windows wholly inside the row (those before start in the
     * padding on the left, those after reach past the row's end) */
    idx q_full = 0, q_end = pw_out;
    while (q_full < pw_out && q_full * g->sw - g->pad_w < 0)
        q_full++;
    while (q_end > q_full && (q_end - 1) * g->sw - g->pad_w + g->kw > w_in)
        q_end--;
    IVEC lane;
    for (int i = 0; i < VL; i++)
        lane[i] = i;
    for (idx p = p0; p < p1; p++) {
        const float *plane = x + p * h_in * w_in;
        for (idx h = 0; h < h_in; h++) {
            const float *row = plane + h * w_in;
            if (full >= VL) {
                for (idx w0 = 0; w0 < full; w0 += VL)
                    NAME(windows)(row, w0 + VL <= full ? w0 : full - VL, g->kw, lane, window_best, window_at);
            } else
                for (idx w0 = 0; w0 < full; w0++)
                    window_max(row, w0, w0 + g->kw, window_best + w0, window_at + w0);
            float *best = row_best + h * pw_out;
            int32_t *at = row_at + h * pw_out;
            for (idx q = 0; q < q_full; q++) { /* windows clipped at the left */
                const idx stop = q * g->sw - g->pad_w + g->kw;
                window_max(row, 0, stop < w_in ? stop : w_in, best + q, at + q);
            }
            for (idx q = q_full; q < q_end; q++) { /* full windows: every sw-th of the row's */
                best[q] = window_best[q * g->sw - g->pad_w];
                at[q] = window_at[q * g->sw - g->pad_w];
            }
            for (idx q = q_end; q < pw_out; q++) { /* clipped at the right, or past the row */
                const idx start = q * g->sw - g->pad_w, stop = start + g->kw;
                window_max(row, start > 0 ? start : 0, stop < w_in ? stop : w_in, best + q, at + q);
            }
        }
        float *out = y + p * ph_out * pw_out;
        int32_t *out_at = index + p * ph_out * pw_out;
        for (idx r = 0; r < ph_out; r++) {
            idx start = r * g->sh - g->pad_h, stop = start + g->kh;
            stop = stop < h_in ? stop : h_in;
            start = start > 0 ? start : 0;
            if (pw_out >= VL) {
                for (idx q = 0; q < pw_out; q += VL)
                    NAME(down)(row_best, row_at, start, stop, q + VL <= pw_out ? q : pw_out - VL, g,
                               out + r * pw_out, out_at + r * pw_out);
                continue;
            }
            for (idx q = 0; q < pw_out; q++) {
                float best = LOWEST;
                int32_t at = -1;
                for (idx h = start; h < stop; h++) {
                    const float v = row_best[h * pw_out + q];
                    const int m = v > best;
                    best = m ? v : best;
                    at = m ? row_at[h * pw_out + q] + (int32_t)(h * w_in) : at;
                }
                out[r * pw_out + q] = best;
                out_at[r * pw_out + q] = at;
            }
        }
    }
}

#undef VEC
#undef IVEC
