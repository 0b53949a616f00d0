/* One instruction set's channel-normalisation kernels: included by channel_norm.c once per set, with
 * NAME(f) (the set's function names), TARGET (its target attribute) and VL (floats per vector)
 * defined. */

typedef float NAME(vec) __attribute__((vector_size(VL * 4), aligned(4)));
#define VEC NAME(vec)

typedef int NAME(ivec) __attribute__((vector_size(VL * 4), aligned(4)));
#define IVEC NAME(ivec)

/* v where `keep` (a comparison's lanes: all ones or zero), else 0. */
TARGET static inline VEC NAME(masked)(VEC v, IVEC keep) { return (VEC)((IVEC)v & keep); }

TARGET static inline float NAME(lanes_sum)(VEC v)
{
    float s = 0;
    for (int i = 0; i < VL; i++)
        s += v[i];
    return s;
}

/* sum(a) and, where b is given, sum(a * b) over one channel's n rows of s values (rows `step` apart),
 * in two vectors of sums each, so that consecutive adds do not wait on each other; where `keep` is
 * given, a counts only where keep > 0 (a ReLU's gradient, keep its output). */
TARGET static void NAME(channel_sums)(const float *a, const float *b, const float *keep, idx n, idx s, idx step,
                                      float *sum, float *dot)
{
    VEC s0 = {0}, s1 = {0}, d0 = {0}, d1 = {0};
    const VEC zero = {0};
    float sum_tail = 0, dot_tail = 0;
    for (idx r = 0; r < n; r++) {
        const float *pa = a + r * step, *pb = b ? b + r * step : NULL, *pk = keep ? keep + r * step : NULL;
        idx i = 0;
        for (; i + 2 * VL <= s; i += 2 * VL) {
            VEC a0 = *(const VEC *)(pa + i), a1 = *(const VEC *)(pa + i + VL);
            if (pk) {
                a0 = NAME(masked)(a0, *(const VEC *)(pk + i) > zero);
                a1 = NAME(masked)(a1, *(const VEC *)(pk + i + VL) > zero);
            }
            s0 += a0;
            s1 += a1;
            if (pb) {
                d0 += a0 * *(const VEC *)(pb + i);
                d1 += a1 * *(const VEC *)(pb + i + VL);
            }
        }
        for (; i < s; i++) {
            const float v = pk && !(pk[i] > 0) ? 0.0f : pa[i];
            sum_tail += v;
            if (pb)
                dot_tail += v * pb[i];
        }
    }
    *sum = NAME(lanes_sum)(s0 + s1) + sum_tail;
    if (dot)
        *dot = NAME(lanes_sum)(d0 + d1) + dot_tail;
}

/* sum((a - centre)^2) over one channel's n rows of s values. */
TARGET static float NAME(channel_squares)(const float *a, float centre, idx n, idx s, idx step)
{
    const VEC c = (VEC){0} + centre;
    VEC s0 = {0}, s1 = {0};
    float tail = 0;
    for (idx r = 0; r < n; r++) {
        const float *pa = a + r * step;
        idx i = 0;
        for (; i + 2 * VL <= s; i += 2 * VL) {
            const VEC a0 = *(const VEC *)(pa + i) - c, a1 = *(const VEC *)(pa + i + VL) - c;
            s0 += a0 * a0;
            s1 += a1 * a1;
        }
        for (; i < s; i++)
            tail += (pa[i] - centre) * (pa[i] - centre);
    }
    return NAME(lanes_sum)(s0 + s1) + tail;
}

TARGET static void NAME(forward)(const float *x, float *x_norm, float *y, idx n, idx c, idx s, idx c0, idx c1,
                                 int batch, float eps, float *mean, float *var, float *std,
                                 const float *scale, const float *bias, int relu)
{
    const idx step = c * s;
    const float count = (float)(n * s);
    for (idx ch = c0; ch < c1; ch++) {
        const float *xc = x + ch * s;
        float *nc = x_norm + ch * s, *yc = y + ch * s;
        if (batch) {
            float sum;
            NAME(channel_sums)(xc, NULL, NULL, n, s, step, &sum, NULL);
            mean[ch] = sum / count;
            var[ch] = NAME(channel_squares)(xc, mean[ch], n, s, step) / count;
        }
        std[ch] = sqrtf(var[ch] + eps);
        const float m = mean[ch], d = std[ch];
        const float g = scale ? scale[ch] : 1.0f, b = bias ? bias[ch] : 0.0f;
        const VEC mv = (VEC){0} + m, dv = (VEC){0} + d, gv = (VEC){0} + g, bv = (VEC){0} + b, zero = {0};
        const int affine = scale != NULL, copy = yc != nc;
        for (idx r = 0; r < n; r++) {
            const float *px = xc + r * step;
            float *pn = nc + r * step, *py = yc + r * step;
            idx i = 0;
            for (; i + VL <= s; i += VL) {
                const VEC v = (*(const VEC *)(px + i) - mv) / dv;
                *(VEC *)(pn + i) = v;
                if (affine) {
                    const VEC t = v * gv + bv; /* a ReLU's max(t, 0) keeps NaN, as Caffe's std::max */
                    *(VEC *)(py + i) = relu ? NAME(masked)(t, ~(t < zero)) : t;
                } else if (copy)
                    *(VEC *)(py + i) = v;
            }
            for (; i < s; i++) {
                const float v = (px[i] - m) / d;
                pn[i] = v;
                if (affine) {
                    const float t = v * g + b;
                    py[i] = relu && t < 0 ? 0.0f : t;
                } else if (copy)
                    py[i] = v;
            }
        }
    }
}

TARGET static void NAME(backward)(const float *dy, const float *x_norm, float *dx, idx n, idx c, idx s, idx c0,
                                  idx c1, int batch, const float *std, const float *scale, float *d_scale,
                                  float *d_bias, const float *keep)
{
    const idx step = c * s;
    const float count = (float)(n * s);
    for (idx ch = c0; ch < c1; ch++) {
        const float *gc = dy + ch * s, *nc = x_norm + ch * s, *kc = keep ? keep + ch * s : NULL;
        float sum = 0, dot = 0;
        if (batch || d_scale || d_bias)
            NAME(channel_sums)(gc, nc, kc, n, s, step, &sum, &dot);
        if (d_scale)
            d_scale[ch] += dot;
        if (d_bias)
            d_bias[ch] += sum;
        if (!dx)
            continue;
        const float k = (scale ? scale[ch] : 1.0f) / std[ch];
        const float mean_dy = batch ? sum / count : 0, mean_dot = batch ? dot / count : 0;
        const VEC kv = (VEC){0} + k, mv = (VEC){0} + mean_dy, pv = (VEC){0} + mean_dot, zero = {0};
        float *dc = dx + ch * s;
        for (idx r = 0; r < n; r++) {
            const float *pg = gc + r * step, *pn = nc + r * step, *pk = kc ? kc + r * step : NULL;
            float *pd = dc + r * step;
            idx i = 0;
            for (; i + VL <= s; i += VL) {
                VEC g = *(const VEC *)(pg + i);
                if (pk)
                    g = NAME(masked)(g, *(const VEC *)(pk + i) > zero);
                *(VEC *)(pd + i) = kv * (g - mv - *(const VEC *)(pn + i) * pv);
            }
            for (; i < s; i++) {
                const float g = pk && !(pk[i] > 0) ? 0.0f : pg[i];
                pd[i] = k * (g - mean_dy - pn[i] * mean_dot);
            }
        }
    }
}

#undef VEC
#undef IVEC
