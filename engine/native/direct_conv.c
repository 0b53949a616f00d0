/* Direct 2-D convolution on the CPU (float32), for engine.layers.conv_direct.
 *
 * im2col + GEMM copies every input value kh kw times and then has BLAS pack the copy again; with few
 * output channels (CIFAR-10's 32) that copying costs as much as the multiply. These kernels read the
 * input where it lies, as a channels-last copy of a group of images:
 * - forward: a tile of PB output positions by 2 vectors of output channels, summed in registers over
 *   (kernel row, run of kernel column x input channel values), one broadcast input value times two
 *   vectors of weights at a time; kernel rows that read only zero padding are skipped;
 * - the stride-1 data gradient: that forward, on dy, with the flipped weights (the caller packs them
 *   so, and pads dy by dilation (k - 1) - pad);
 * - the weight gradient: a tile of PG output channels (dy broadcast) by 2 vectors of a kernel row's
 *   run, summed over positions into a row per output channel; for first layers, whose runs of few
 *   channels would fill few lanes, vectors along the output rows instead (weight_gradient_rows).
 * A group of a grouped convolution is a convolution of a slice of each image's channels: the
 * geometry carries the steps from one image to the next.
 *
 * The caller (Python, through ctypes) owns every buffer, splits the batch over its threads and hands
 * each thread its own scratch (dc_scratch_floats). Nothing here allocates, and every loop's bounds
 * come from the geometry, whose arrays the caller has checked to be of its shapes. Each instruction
 * set (AVX-512, AVX2, the baseline) gets its own copy of the kernels, chosen once from what the CPU
 * reports. Build with contraction on (-ffp-contract=fast, setup.py): each sum is then one FMA. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "kernel_sets.h"

typedef int64_t idx;

typedef struct {
    idx c, h, w;           /* input channels, height, width (unpadded) */
    idx o;                 /* output channels */
    idx kh, kw, sh, sw, ph, pw, dh, dw; /* ph, pw: the padding above and left of the input */
    idx oh, ow;            /* output height and width */
    idx in_step, out_step; /* floats from one image to the next of the input and of the output (a
                              group's channels are a slice of each image's) */
    idx ph_end, pw_end;    /* the padding below and right of the input */
    idx out_plane, out_row, out_col; /* floats from one output channel, row, column to the next: a
                                        strided data gradient's phase writes every s-th value */
    idx hp, wp;            /* padded input height and width */
} geometry;

/* POSITION_BLOCK: positions a weight-gradient pass sums before its tiles move on (their inputs stay
 * in L1); GROUP_POSITIONS: the fewest positions a group of images holds (ResNet's 7 x 7 maps go 6
 * images at a time); SLACK: floats past a packed image that a tile may read (and not use). */
enum { POSITION_BLOCK = 512, GROUP_POSITIONS = 256, MAX_GROUP = 16, SLACK = 64 };

static geometry read_geometry(const idx *v)
{
    geometry g = {v[0],  v[1],  v[2],  v[3],  v[4],  v[5],  v[6],  v[7],  v[8],  v[9], v[10],
                  v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18], v[19], v[20], 0, 0};
    g.hp = g.h + g.ph + g.ph_end;
    g.wp = g.w + g.pw + g.pw_end;
    return g;
}

/* Floats of one channels-last padded image, with slack for tiles that read past the last channel: a
 * whole number of cache lines, so that each image of a group starts on one. */
static idx image_floats(const geometry *g) { return (g->hp * g->wp * g->c + SLACK + 15) / 16 * 16; }

/* Images packed and summed together: enough for GROUP_POSITIONS output positions. */
static idx group_images(const geometry *g)
{
    const idx positions = g->oh * g->ow, group = (GROUP_POSITIONS + positions - 1) / positions;
    return group < MAX_GROUP ? group : MAX_GROUP;
}

/* Where output position q's window starts in a packed image. */
static inline idx position_offset(const geometry *g, idx q)
{
    return ((q / g->ow) * g->sh * g->wp + (q % g->ow) * g->sw) * g->c;
}

/* The weight gradient's sums, per output channel: kh rows of `runs` runs of `run` values (the kernel
 * columns' channels, one run of kw C values where the columns are not dilated), each run padded to a
 * whole number of vector tiles. */
static void gradient_layout(const geometry *g, idx tile, idx *runs, idx *run, idx *run_pad)
{
    *runs = g->dw == 1 ? 1 : g->kw;
    *run = g->dw == 1 ? g->kw * g->c : g->c;
    *run_pad = (*run + tile - 1) / tile * tile;
}

typedef float v4 __attribute__((vector_size(16), aligned(4)));
typedef int v4i __attribute__((vector_size(16)));
#if defined(__clang__)
#define SHUFFLE(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define SHUFFLE(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4i){i, j, k, l})
#endif

/* out[k * ldo + r] = a[r * lda + k] for r < rows, k < columns: 16 x 16 blocks, whose lines of both
 * sides stay in L1, each moved as 4 x 4 transposes in registers (scalar at the edges). */
static void transpose(const float *a, idx lda, float *out, idx ldo, idx rows, idx columns)
{
    for (idx r0 = 0; r0 < rows; r0 += 16) {
        const idx r1 = rows - r0 < 16 ? rows : r0 + 16;
        for (idx k0 = 0; k0 < columns; k0 += 16) {
            const idx k1 = columns - k0 < 16 ? columns : k0 + 16;
            idx r = r0;
            for (; r + 4 <= r1; r += 4) {
                idx k = k0;
                for (; k + 4 <= k1; k += 4) {
                    const v4 x0 = *(const v4 *)(a + r * lda + k), x1 = *(const v4 *)(a + (r + 1) * lda + k);
                    const v4 x2 = *(const v4 *)(a + (r + 2) * lda + k), x3 = *(const v4 *)(a + (r + 3) * lda + k);
                    const v4 t0 = SHUFFLE(x0, x1, 0, 4, 1, 5), t1 = SHUFFLE(x0, x1, 2, 6, 3, 7);
                    const v4 t2 = SHUFFLE(x2, x3, 0, 4, 1, 5), t3 = SHUFFLE(x2, x3, 2, 6, 3, 7);
                    *(v4 *)(out + k * ldo + r) = SHUFFLE(t0, t2, 0, 1, 4, 5);
                    *(v4 *)(out + (k + 1) * ldo + r) = SHUFFLE(t0, t2, 2, 3, 6, 7);
                    *(v4 *)(out + (k + 2) * ldo + r) = SHUFFLE(t1, t3, 0, 1, 4, 5);
                    *(v4 *)(out + (k + 3) * ldo + r) = SHUFFLE(t1, t3, 2, 3, 6, 7);
                }
                for (; k < k1; k++)
                    for (idx q = r; q < r + 4; q++)
                        out[k * ldo + q] = a[q * lda + k];
            }
            for (; r < r1; r++)
                for (idx k = k0; k < k1; k++)
                    out[k * ldo + r] = a[r * lda + k];
        }
    }
}

/* The kernel rows [i0, i1) that read the image (not only its zero padding) for some output row in
 * [top, bottom]: the rest add nothing (the stride-1 data gradient of LeNet's conv2 pads dy by 4 on
 * each side of 8 rows, so a third of its kernel rows read only zeros). */
static void kernel_rows(const geometry *g, idx top, idx bottom, idx *i0, idx *i1)
{
    idx lo = 0, hi = g->kh;
    while (lo < hi && bottom * g->sh + lo * g->dh < g->ph)
        lo++;
    while (hi > lo && top * g->sh + (hi - 1) * g->dh >= g->ph + g->h)
        hi--;
    *i0 = lo;
    *i1 = hi;
}

/* x (C, H, W) -> out (hp, wp, C), zeros in the padding (each value written once). */
static void pack_image(const float *x, float *out, const geometry *g)
{
    const idx c_in = g->c, row = g->wp * c_in, left = g->pw * c_in, right = (g->wp - g->pw - g->w) * c_in;
    memset(out, 0, (size_t)(g->ph * row) * sizeof(float));
    for (idx y = 0; y < g->h; y++) {
        float *to = out + (y + g->ph) * row;
        memset(to, 0, (size_t)left * sizeof(float));
        transpose(x + y * g->w, g->h * g->w, to + left, c_in, c_in, g->w);
        memset(to + left + g->w * c_in, 0, (size_t)right * sizeof(float));
    }
    memset(out + (g->ph + g->h) * row, 0, (size_t)(image_floats(g) - (g->ph + g->h) * row) * sizeof(float));
}

/* a (rows, columns) -> out (columns, width): transposed, zeros past `rows`; the sums of rows
 * [first, stop) added to sums[row] (when given). */
static void pack_rows(const float *a, float *out, idx rows, idx columns, idx width, float *sums, idx first,
                      idx stop)
{
    for (idx k = 0; k < columns; k++)
        for (idx r = rows; r < width; r++)
            out[k * width + r] = 0.0f;
    transpose(a, columns, out, width, rows, columns);
    if (sums)
        for (idx r = first; r < stop; r++) {
            float sum = 0.0f;
            for (idx k = 0; k < columns; k++)
                sum += a[r * columns + k];
            sums[r] += sum;
        }
}

/* The weight gradient by rows (weight_gradient_rows): at most this many kernel columns. */
enum { ROWS_KERNEL = 5 };

/* The row width weight_gradient_rows packs x to: its vectors along a row may run past the last
 * output column by up to a vector. */
static idx row_width(const geometry *g, idx vl)
{
    const idx reach = (g->ow + vl - 1) / vl * vl + (g->kw - 1) * g->dw;
    return g->wp > reach ? g->wp : reach;
}

/* x (C, H, W) -> out (C, hp, width): zero-padded rows, channels kept apart. */
static void pack_plain(const float *x, float *out, const geometry *g, idx width)
{
    memset(out, 0, (size_t)(g->c * g->hp * width) * sizeof(float));
    for (idx c = 0; c < g->c; c++)
        for (idx y = 0; y < g->h; y++)
            memcpy(out + (c * g->hp + y + g->ph) * width + g->pw, x + (c * g->h + y) * g->w,
                   (size_t)g->w * sizeof(float));
}

/* The scratch pointer rounded up to a cache line (dc_scratch_floats leaves room for it). */
static float *aligned(float *scratch) { return (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63); }

#define KERNELS "direct_conv_kernels.h"
#include "each_set.h"

typedef void (*forward_fn)(const float *, const float *, const float *, float *, const geometry *, idx, idx,
                           idx, float *);
typedef void (*gradient_fn)(const float *, const float *, float *, float *, const geometry *, idx, idx, idx,
                            float *);
typedef void (*rows_fn)(const float *, const float *, float *, float *, const geometry *, idx, float *);

typedef struct {
    const char *name;
    idx lanes; /* floats per vector; a forward tile is 2 vectors of output channels */
    forward_fn forward;
    gradient_fn weight_gradient;
    rows_fn weight_gradient_rows;
} kernel_set;

static const kernel_set base_set = {"baseline", 4, base_forward, base_weight_gradient, base_weight_gradient_rows};
#if X86_SETS
static const kernel_set avx512_set = {"avx512", 16, avx512_forward, avx512_weight_gradient,
                                      avx512_weight_gradient_rows};
static const kernel_set avx2_set = {"avx2", 8, avx2_forward, avx2_weight_gradient, avx2_weight_gradient_rows};
#endif

KERNEL_CHOICE(kernel_set)

/* Output channels per forward tile of the kernel set in use: 2 vectors (OT in the kernels). */
static idx tile_channels(void) { return 2 * kernels()->lanes; }

/* --- the C interface (engine.layers.conv_direct) -------------------------------------------- */

/* The interface's version: engine.layers.conv_direct.ABI, raised with any change to these functions. */
idx dc_abi(void) { return 7; }

const char *dc_kernel_name(void) { return kernels()->name; }

/* Use the kernel set of that name from now on (tests run each one); 0 if this CPU cannot run it. */
int dc_select(const char *name) { return select_set(name); }

idx dc_tile_channels(void) { return tile_channels(); }

/* Floats of scratch one thread needs (forward and flipped data gradient: 0; weight gradient: 1). */
idx dc_scratch_floats(const idx *geometry_values, int weight_gradient)
{
    const geometry g = read_geometry(geometry_values);
    const idx o_pad = g.o + 16; /* at least the weight gradient's: O rounded up to PG (at most 16) */
    const idx group = group_images(&g), positions = group * g.oh * g.ow;
    idx floats = group * image_floats(&g);
    if (weight_gradient)
        floats += positions * o_pad + positions * (idx)(sizeof(idx) / sizeof(float)) + SLACK;
    return floats + 16; /* room to align it */
}

/* w (O, C, kh, kw) -> [tiles][kh][kw][C][tile], zeros past O. With `flip`, the weight of the stride-1
 * data gradient: out channels C, in channels O, the kernel turned round. Tiles [first, stop). With
 * `taps` (a strided data gradient's phase: the stored kernel's KH, KW, then the first row, row step,
 * first column, column step), the kh x kw sub-kernel of those taps of a KH x KW kernel. A tile's
 * input channel at a time: its lanes read kh kw values of each of the tile's rows of w. */
void dc_pack_weights(const float *w, float *out, idx o, idx c, idx kh, idx kw, int flip, idx first, idx stop,
                     const idx *taps)
{
    const idx tile = tile_channels(), outs = flip ? c : o, ins = flip ? o : c;
    const idx full[6] = {kh, kw, 0, 1, 0, 1};
    const idx *t_ = taps ? taps : full, stored = t_[0] * t_[1];
    for (idx t = first; t < stop; t++)
        for (idx b = 0; b < ins; b++)
            for (idx i = 0; i < kh; i++)
                for (idx j = 0; j < kw; j++) {
                    float *to = out + (((t * kh + i) * kw + j) * ins + b) * tile;
                    const idx row = flip ? kh - 1 - i : i, column = flip ? kw - 1 - j : j;
                    const idx at = (t_[2] + t_[3] * row) * t_[1] + t_[4] + t_[5] * column;
                    for (idx lane = 0; lane < tile; lane++) {
                        const idx a = t * tile + lane;
                        float v = 0.0f;
                        if (a < outs)
                            v = flip ? w[(b * c + a) * stored + at] : w[(a * c + b) * stored + at];
                        to[lane] = v;
                    }
                }
}

/* y (images, O, OH, OW) = conv(x) (+ bias) for output-channel tiles [first, stop). */
void dc_forward(const float *x, const float *w, const float *bias, float *y, const idx *geometry_values,
                idx images, idx first, idx stop, float *scratch)
{
    const geometry g = read_geometry(geometry_values);
    kernels()->forward(x, w, bias, y, &g, images, first, stop, aligned(scratch));
}

/* dw (dc_gradient_floats, in its layout) += the weight gradient of images x (C, H, W) and dy (O, OH,
 * OW), and db (O, when given) += dy's sums over images and positions: of output channels [first, stop)
 * (first a multiple of the set's PG). */
void dc_weight_gradient(const float *x, const float *dy, float *dw, float *db, const idx *geometry_values,
                        idx images, idx first, idx stop, float *scratch)
{
    const geometry g = read_geometry(geometry_values);
    kernels()->weight_gradient(x, dy, dw, db, &g, images, first, stop, aligned(scratch));
}

/* dw (O, C, kh, kw) += sums in dc_weight_gradient's layout: one output channel's row at a time. */
void dc_add_weight_gradient(const float *sums, float *dw, const idx *geometry_values)
{
    const geometry g = read_geometry(geometry_values);
    const idx tile = tile_channels(), kernel = g.kh * g.kw;
    idx runs, run, run_pad;
    gradient_layout(&g, tile, &runs, &run, &run_pad);
    for (idx a = 0; a < g.o; a++) {
        const float *from = sums + a * g.kh * runs * run_pad;
        float *to = dw + a * g.c * kernel;
        for (idx i = 0; i < g.kh; i++)
            for (idx j = 0; j < g.kw; j++) {
                const float *part = from + (i * runs + (runs == 1 ? 0 : j)) * run_pad + (runs == 1 ? j * g.c : 0);
                for (idx b = 0; b < g.c; b++)
                    to[b * kernel + i * g.kw + j] += part[b];
            }
    }
}

/* Floats of the weight gradient's sums (dc_weight_gradient's layout). */
idx dc_gradient_floats(const idx *geometry_values)
{
    const geometry g = read_geometry(geometry_values);
    idx runs, run, run_pad;
    gradient_layout(&g, tile_channels(), &runs, &run, &run_pad);
    return g.o * g.kh * runs * run_pad;
}

/* Floats per vector of the kernel set in use (weight_gradient_rows' sums hold one vector a weight). */
idx dc_lanes(void) { return kernels()->lanes; }

/* Whether dc_weight_gradient_rows takes this geometry: stride 1 along the rows, kw <= ROWS_KERNEL. */
int dc_rows_apply(const idx *geometry_values)
{
    const geometry g = read_geometry(geometry_values);
    return g.sw == 1 && g.kw <= ROWS_KERNEL;
}

/* Floats of scratch one thread needs for dc_weight_gradient_rows. */
idx dc_rows_scratch_floats(const idx *geometry_values)
{
    const geometry g = read_geometry(geometry_values);
    const idx vl = kernels()->lanes, owp = (g.ow + vl - 1) / vl * vl;
    return g.c * g.hp * row_width(&g, vl) + SLACK + g.o * g.oh * owp + 16;
}

/* sums [O][C][kh][kw][lanes] += the weight gradient of images x and dy, lane by lane (the caller adds
 * each vector's lanes into dW), and db (O, when given) += dy's sums. */
void dc_weight_gradient_rows(const float *x, const float *dy, float *sums, float *db, const idx *geometry_values,
                             idx images, float *scratch)
{
    const geometry g = read_geometry(geometry_values);
    kernels()->weight_gradient_rows(x, dy, sums, db, &g, images, aligned(scratch));
}

/* An importable module, so that setuptools builds this file and Python finds it; its functions are
 * called through ctypes, which releases the GIL for each call. */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_direct_conv",
                                    "Direct convolution kernels, called through ctypes.", -1, NULL,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__direct_conv(void) { return PyModule_Create(&module); }
