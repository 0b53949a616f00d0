/* One instruction set's direct-convolution kernels: included by direct_conv.c once per set, with
 * NAME(f) (the set's function names), TARGET (its target attribute), VL (floats per vector) and
 * PB (positions, or channels, per register tile) defined. A tile holds PB x 2 vectors of sums. */

typedef float NAME(vec) __attribute__((vector_size(VL * 4), aligned(4)));
#define VEC NAME(vec)
#define OT (2 * VL) /* output channels per tile */

/* Forward: the sums of one tile, PB output positions (offsets `base` into the channels-last input)
 * by OT output channels; w is the tile's packed weight [kh kw][C][OT]. */
TARGET static inline void NAME(forward_tile)(const float *x, const idx *base, const float *w,
                                             const geometry *g, VEC acc[PB][2])
{
    const idx c_in = g->c, step_i = g->dh * g->wp * c_in, step_j = g->dw * c_in;
    const float *ptr[PB];
    for (int b = 0; b < PB; b++) {
        acc[b][0] = (VEC){0};
        acc[b][1] = (VEC){0};
        ptr[b] = x + base[b];
    }
    for (idx i = 0; i < g->kh; i++) {
        for (idx j = 0; j < g->kw; j++) {
            const idx offset = i * step_i + j * step_j;
            const float *wk = w + (i * g->kw + j) * c_in * OT;
            for (idx c = 0; c < c_in; c++) {
                const VEC w0 = *(const VEC *)(wk + c * OT), w1 = *(const VEC *)(wk + c * OT + VL);
#pragma GCC unroll 32
                for (int b = 0; b < PB; b++) {
                    const float s = ptr[b][offset + c];
                    acc[b][0] += s * w0;
                    acc[b][1] += s * w1;
                }
            }
        }
    }
}

/* y (images, O, OH, OW) = conv(x (images, C, H, W)) (+ bias), weights packed by dc_pack_weights: the
 * output channels of tiles [first, stop). */
TARGET static void NAME(forward)(const float *x, const float *w, const float *bias, float *y,
                                 const geometry *g, idx images, idx first, idx stop, float *scratch)
{
    const idx positions = g->oh * g->ow;
    const idx tile_weights = g->kh * g->kw * g->c * OT;
    for (idx n = 0; n < images; n++) {
        pack_image(x + n * g->c * g->h * g->w, scratch, g);
        float *yn = y + n * g->o * positions;
        for (idx t = first; t < stop; t++) {
            const float *wt = w + t * tile_weights;
            const idx o0 = t * OT, o_count = g->o - o0 < OT ? g->o - o0 : OT;
            for (idx p0 = 0; p0 < positions; p0 += PB) {
                const idx valid = positions - p0 < PB ? positions - p0 : PB;
                idx base[PB];
                for (int b = 0; b < PB; b++) {
                    const idx p = p0 + (b < valid ? b : valid - 1);
                    base[b] = ((p / g->ow) * g->sh * g->wp + (p % g->ow) * g->sw) * g->c;
                }
                VEC acc[PB][2];
                NAME(forward_tile)(scratch, base, wt, g, acc);
                for (idx k = 0; k < o_count; k++) {
                    const float add = bias ? bias[o0 + k] : 0.0f;
                    float *row = yn + (o0 + k) * positions + p0;
                    for (idx b = 0; b < valid; b++)
                        row[b] = acc[b][k / VL][k % VL] + add;
                }
            }
        }
    }
}

/* dw [kh kw][C][O rounded up to OT] += sum over images and positions of x's window values times dy. */
TARGET static void NAME(weight_gradient)(const float *x, const float *dy, float *dw, const geometry *g,
                                         idx images, float *scratch)
{
    const idx positions = g->oh * g->ow, o_pad = (g->o + OT - 1) / OT * OT, c_in = g->c;
    float *xcl = scratch;
    float *dycl = scratch + image_floats(g);
    idx *offsets = (idx *)(dycl + positions * o_pad);
    for (idx p = 0; p < positions; p++)
        offsets[p] = ((p / g->ow) * g->sh * g->wp + (p % g->ow) * g->sw) * c_in;
    for (idx n = 0; n < images; n++) {
        pack_image(x + n * c_in * g->h * g->w, xcl, g);
        pack_rows(dy + n * g->o * positions, dycl, g->o, positions, o_pad);
        for (idx p0 = 0; p0 < positions; p0 += POSITION_BLOCK) {
            const idx p1 = positions - p0 < POSITION_BLOCK ? positions : p0 + POSITION_BLOCK;
            for (idx i = 0; i < g->kh; i++) {
                for (idx j = 0; j < g->kw; j++) {
                    const idx offset = i * g->dh * g->wp * c_in + j * g->dw * c_in;
                    float *dwk = dw + (i * g->kw + j) * c_in * o_pad;
                    for (idx c0 = 0; c0 < c_in; c0 += PB) {
                        const idx valid = c_in - c0 < PB ? c_in - c0 : PB;
                        for (idx o0 = 0; o0 < o_pad; o0 += OT) {
                            VEC acc[PB][2];
                            for (int b = 0; b < PB; b++)
                                acc[b][0] = acc[b][1] = (VEC){0};
                            for (idx p = p0; p < p1; p++) {
                                const float *xp = xcl + offsets[p] + offset + c0;
                                const VEC d0 = *(const VEC *)(dycl + p * o_pad + o0);
                                const VEC d1 = *(const VEC *)(dycl + p * o_pad + o0 + VL);
#pragma GCC unroll 32
                                for (int b = 0; b < PB; b++) {
                                    acc[b][0] += xp[b] * d0;
                                    acc[b][1] += xp[b] * d1;
                                }
                            }
                            for (idx b = 0; b < valid; b++) {
                                VEC *out = (VEC *)(dwk + (c0 + b) * o_pad + o0);
                                out[0] += acc[b][0];
                                out[1] += acc[b][1];
                            }
                        }
                    }
                }
            }
        }
    }
}

#undef VEC
#undef OT
