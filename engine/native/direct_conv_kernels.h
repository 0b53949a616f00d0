/* One instruction set's direct-convolution kernels: included by direct_conv.c once per set
 * (each_set.h), with NAME(f) (the set's function names), TARGET (its target attribute) and VL (floats
 * per vector) defined. PB: the forward's output positions per register tile, which holds PB x 2
 * vectors of sums (12 x 2 of AVX-512's 32 registers, 6 x 2 of AVX2's 16). PG: the weight
 * gradient's output channels per tile (PG x 2 vectors of sums): 8 with AVX-512, which divides the
 * power-of-two channel counts of most nets (12 left a tile of 32 or 64 channels 11% empty: at 8,
 * 56x56x64's weight gradient takes 4.1 ms against 4.6, CIFAR-10 quick's conv2 2.8 against 3.2; the
 * others tie). */

#if VL == 16
#define PB 12
#define PG 8
#else
#define PB 6
#define PG 6
#endif

typedef float NAME(vec) __attribute__((vector_size(VL * 4), aligned(4)));
#define VEC NAME(vec)
#define OT (2 * VL) /* output channels per tile */

/* Forward: the sums of one tile, PB output positions (offsets `base` into the packed images) by OT
 * output channels, over kernel rows [i0, i1); w is the tile's packed weight [kh][kw C][OT] (a run of
 * kw C values per kernel row where the columns are not dilated, else [kh][kw][C]). */
TARGET static inline void NAME(forward_tile)(const float *x, const idx *base, const float *w,
                                             const geometry *g, idx i0, idx i1, VEC acc[PB][2])
{
    const idx runs = g->dw == 1 ? 1 : g->kw, length = g->dw == 1 ? g->kw * g->c : g->c;
    const idx step_i = g->dh * g->wp * g->c, step_j = g->dw * g->c;
    const float *ptr[PB];
    for (int b = 0; b < PB; b++) {
        acc[b][0] = (VEC){0};
        acc[b][1] = (VEC){0};
        ptr[b] = x + base[b];
    }
    for (idx i = i0; i < i1; i++) {
        for (idx j = 0; j < runs; j++) {
            const idx offset = i * step_i + j * step_j;
            const float *wk = w + (i * runs + j) * length * OT;
            for (idx k = 0; k < length; k++) {
                const VEC w0 = *(const VEC *)(wk + k * OT), w1 = *(const VEC *)(wk + k * OT + VL);
#pragma GCC unroll 32
                for (int b = 0; b < PB; b++) {
                    const float s = ptr[b][offset + k];
                    acc[b][0] += s * w0;
                    acc[b][1] += s * w1;
                }
            }
        }
    }
}

/* y (images, O, OH, OW) = conv(x (images, C, H, W)) (+ bias), weights packed by dc_pack_weights: the
 * output channels of tiles [first, stop). Images go a group at a time (group_images), their
 * positions one sequence, so that small maps still fill whole tiles. */
TARGET static void NAME(forward)(const float *x, const float *w, const float *bias, float *y,
                                 const geometry *g, idx images, idx first, idx stop, float *scratch)
{
    const idx positions = g->oh * g->ow, image = image_floats(g);
    const idx tile_weights = g->kh * g->kw * g->c * OT, group = group_images(g);
    for (idx n0 = 0; n0 < images; n0 += group) {
        const idx count = images - n0 < group ? images - n0 : group, total = count * positions;
        for (idx n = 0; n < count; n++)
            pack_image(x + (n0 + n) * g->in_step, scratch + n * image, g);
        for (idx t = first; t < stop; t++) {
            const float *wt = w + t * tile_weights;
            const idx o0 = t * OT, o_count = g->o - o0 < OT ? g->o - o0 : OT;
            for (idx p0 = 0; p0 < total; p0 += PB) {
                const idx valid = total - p0 < PB ? total - p0 : PB;
                idx base[PB], out[PB], top = g->oh, bottom = 0;
                for (int b = 0; b < PB; b++) {
                    const idx p = p0 + (b < valid ? b : valid - 1), n = p / positions, q = p % positions;
                    base[b] = n * image + position_offset(g, q);
                    out[b] = (n0 + n) * g->out_step + o0 * g->out_plane + (q / g->ow) * g->out_row +
                             (q % g->ow) * g->out_col;
                    top = q / g->ow < top ? q / g->ow : top;
                    bottom = q / g->ow > bottom ? q / g->ow : bottom;
                }
                idx i0, i1;
                kernel_rows(g, top, bottom, &i0, &i1);
                VEC acc[PB][2];
                NAME(forward_tile)(scratch, base, wt, g, i0, i1, acc);
                for (idx k = 0; k < o_count; k++) {
                    const float add = bias ? bias[o0 + k] : 0.0f;
                    for (idx b = 0; b < valid; b++)
                        y[out[b] + k * g->out_plane] = acc[b][k / VL][k % VL] + add;
                }
            }
        }
    }
}

/* dw [O][kh][runs][run rounded up to OT] (gradient_layout) += the sum over images and positions of
 * dy's values times x's window values, for output channels [first, stop): a tile of PG output channels (dy broadcast) by OT values of a
 * run (kernel columns and channels, contiguous in the packed image; one vector load each). */
TARGET static void NAME(weight_gradient)(const float *x, const float *dy, float *dw, float *db,
                                         const geometry *g, idx images, idx first, idx stop, float *scratch)
{
    const idx positions = g->oh * g->ow, image = image_floats(g), group = group_images(g);
    const idx o_pad = (g->o + PG - 1) / PG * PG;
    idx runs, run, run_pad;
    gradient_layout(g, OT, &runs, &run, &run_pad);
    float *xcl = scratch;
    float *dycl = scratch + group * image; /* image is a whole number of cache lines */
    idx *offsets = (idx *)(dycl + group * positions * o_pad);
    for (idx p = 0; p < group * positions; p++)
        offsets[p] = (p / positions) * image + position_offset(g, p % positions);
    for (idx n0 = 0; n0 < images; n0 += group) {
        const idx count = images - n0 < group ? images - n0 : group, total = count * positions;
        for (idx n = 0; n < count; n++) {
            pack_image(x + (n0 + n) * g->in_step, xcl + n * image, g);
            float *rows = dycl + n * positions * o_pad;
            pack_rows(dy + (n0 + n) * g->out_step, rows, g->o, positions, o_pad, db, first, stop);
        }
        for (idx p0 = 0; p0 < total; p0 += POSITION_BLOCK) {
            const idx p1 = total - p0 < POSITION_BLOCK ? total : p0 + POSITION_BLOCK;
            for (idx o0 = first; o0 < stop; o0 += PG) {
                const idx valid = stop - o0 < PG ? stop - o0 : PG;
                for (idx i = 0; i < g->kh; i++) {
                    for (idx j = 0; j < runs; j++) {
                        const idx offset = i * g->dh * g->wp * g->c + j * g->dw * g->c;
                        float *row = dw + (o0 * g->kh * runs + i * runs + j) * run_pad;
                        const idx o_step = g->kh * runs * run_pad;
                        for (idx k0 = 0; k0 < run; k0 += OT) {
                            VEC acc[PG][2];
                            for (int b = 0; b < PG; b++)
                                acc[b][0] = acc[b][1] = (VEC){0};
                            for (idx p = p0; p < p1; p++) {
                                const float *xp = xcl + offsets[p] + offset + k0;
                                const float *d = dycl + p * o_pad + o0;
                                const VEC x0 = *(const VEC *)xp, x1 = *(const VEC *)(xp + VL);
#pragma GCC unroll 32
                                for (int b = 0; b < PG; b++) {
                                    acc[b][0] += d[b] * x0;
                                    acc[b][1] += d[b] * x1;
                                }
                            }
                            for (idx b = 0; b < valid; b++) {
                                VEC *sum = (VEC *)(row + b * o_step + k0);
                                sum[0] += acc[b][0];
                                sum[1] += acc[b][1];
                            }
                        }
                    }
                }
            }
        }
    }
}

/* The weight gradient of a layer with few input channels and stride 1 along the rows (first layers:
 * a run of kw C values would fill few of a tile's lanes): vectors along the output row instead.
 * sums [O][C][kh][kw][VL] += per lane, dy's values times x's, for the images' positions; the caller
 * adds each vector's lanes. x is packed plain (C, rows, row width) with zero padding, dy with its
 * rows zero-padded to whole vectors; RB output channels by kw kernel columns of vectors per tile. */
#define RB (PB / 3)
TARGET static void NAME(weight_gradient_rows)(const float *x, const float *dy, float *sums, float *db,
                                              const geometry *g, idx images, float *scratch)
{
    const idx owp = (g->ow + VL - 1) / VL * VL, width = row_width(g, VL), rows = g->hp;
    float *xp = scratch, *dyp = scratch + g->c * rows * width + SLACK;
    for (idx n = 0; n < images; n++) {
        pack_plain(x + n * g->in_step, xp, g, width);
        const float *dyn = dy + n * g->out_step;
        for (idx r = 0; r < g->o * g->oh; r++) {
            memcpy(dyp + r * owp, dyn + r * g->ow, (size_t)g->ow * sizeof(float));
            for (idx k = g->ow; k < owp; k++)
                dyp[r * owp + k] = 0.0f;
        }
        if (db)
            for (idx o = 0; o < g->o; o++) {
                float sum = 0.0f;
                for (idx k = 0; k < g->oh * g->ow; k++)
                    sum += dyn[o * g->oh * g->ow + k];
                db[o] += sum;
            }
        for (idx o0 = 0; o0 < g->o; o0 += RB)
            for (idx c = 0; c < g->c; c++)
                for (idx i = 0; i < g->kh; i++) {
                    VEC acc[RB][ROWS_KERNEL];
                    for (int b = 0; b < RB; b++)
                        for (int j = 0; j < ROWS_KERNEL; j++)
                            acc[b][j] = (VEC){0};
                    for (idx oy = 0; oy < g->oh; oy++) {
                        const float *xr = xp + (c * rows + oy * g->sh + i * g->dh) * width;
                        const float *dr[RB];
                        for (int b = 0; b < RB; b++)
                            dr[b] = dyp + ((o0 + b < g->o ? o0 + b : o0) * g->oh + oy) * owp;
                        for (idx ox = 0; ox < owp; ox += VL) {
                            VEC d[RB];
                            for (int b = 0; b < RB; b++)
                                d[b] = *(const VEC *)(dr[b] + ox);
#pragma GCC unroll 8
                            for (int j = 0; j < ROWS_KERNEL; j++) {
                                if (j < g->kw) {
                                    const VEC v = *(const VEC *)(xr + ox + j * g->dw);
#pragma GCC unroll 8
                                    for (int b = 0; b < RB; b++)
                                        acc[b][j] += d[b] * v;
                                }
                            }
                        }
                    }
                    for (idx b = 0; b < RB && o0 + b < g->o; b++)
                        for (idx j = 0; j < g->kw; j++) {
                            VEC *sum = (VEC *)(sums + ((((o0 + b) * g->c + c) * g->kh + i) * g->kw + j) * VL);
                            *sum += acc[b][j];
                        }
                }
    }
}
#undef RB

#undef VEC
#undef OT
#undef PB
#undef PG
