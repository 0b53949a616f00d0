/* MAX pooling on the CPU (float32), for engine.layers.max_pool.
 *
 * numpy pools over the frame's phase planes (engine.layers.pooling_cpu): a copy of the input into
 * the planes, then a pass over them per kernel offset. These kernels read each input row once: the
 * window maxima along it (a vector of windows at a time), then down the rows, with Caffe's rules
 * (from -FLT_MAX, the first maximum in raster order, NaN never chosen) and its index h W + w of the
 * chosen element (-1 where none was). The backward adds each output's gradient onto its chosen
 * element, in the outputs' raster order as Caffe's loop.
 *
 * Each call takes a range of planes (one image's channel each): the caller splits the planes over
 * its threads and hands each thread its own scratch (mp_scratch_floats). Nothing here allocates or
 * holds Python objects; the caller (Python, through ctypes) owns every buffer and has checked their
 * sizes, and every index written is inside its plane. Each instruction set (AVX-512, AVX2, the
 * baseline) gets its own copy of the forward, chosen once from what the CPU reports. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "kernel_sets.h"

typedef int64_t idx;

enum { ABI = 1 };
static const float LOWEST = -FLT_MAX; /* Caffe's MAX pooling starts from -FLT_MAX */

typedef struct {
    idx h, w, ph, pw; /* input and output height and width */
    idx kh, kw, sh, sw, pad_h, pad_w;
} pool_geometry;

static pool_geometry read_geometry(const idx *v)
{
    const pool_geometry g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
    return g;
}

/* The first largest of row[start, stop) from -FLT_MAX, and its column (-1: none). */
static inline void window_max(const float *row, idx start, idx stop, float *best, int32_t *at)
{
    float b = LOWEST;
    int32_t a = -1;
    for (idx w = start; w < stop; w++) {
        const int m = row[w] > b; /* without a branch: random data mispredicts half of them */
        b = m ? row[w] : b;
        a = m ? (int32_t)w : a;
    }
    *best = b;
    *at = a;
}

#define KERNELS "max_pool_kernels.h"
#include "each_set.h"

typedef void (*forward_fn)(const float *, float *, int32_t *, const pool_geometry *, idx, idx, float *);

typedef struct {
    const char *name;
    idx lanes; /* floats per vector */
    forward_fn forward;
} kernel_set;

static const kernel_set base_set = {"baseline", 4, base_forward};
#if X86_SETS
static const kernel_set avx512_set = {"avx512", 16, avx512_forward};
static const kernel_set avx2_set = {"avx2", 8, avx2_forward};
#endif

KERNEL_CHOICE(kernel_set)

idx mp_abi(void) { return ABI; }

const char *mp_kernel_name(void) { return kernels()->name; }

/* Run the kernel set of that name from now on (the tests run each one); 0 if this CPU cannot. */
int mp_select(const char *name) { return select_set(name); }

/* Floats of one thread's scratch: the row maxima and their columns (H x PW each), and one row's
 * window maxima and columns (W and a vector's slack each). */
idx mp_scratch_floats(const idx *geometry_values)
{
    const pool_geometry g = read_geometry(geometry_values);
    return 2 * g.h * g.pw + 2 * (g.w + 16);
}

/* y and index (planes of PH x PW) of planes [p0, p1) of x (planes of H x W), geometry
 * [H, W, PH, PW, kh, kw, sh, sw, pad_h, pad_w]. */
void mp_forward(const float *x, float *y, int32_t *index, const idx *geometry_values, idx p0, idx p1,
                float *scratch)
{
    const pool_geometry g = read_geometry(geometry_values);
    /* Output rows narrower than a vector would go value by value: a narrower set the CPU runs takes
     * them (LeNet's 12 columns: AVX2's 8 lanes, 4x faster than AVX-512's scalar rows). */
    const kernel_set *set = kernels();
    for (int i = 0; i < SET_COUNT; i++)
        if (all_sets[i]->lanes < set->lanes && set->lanes > g.pw && cpu_runs(all_sets[i]->name))
            set = all_sets[i];
    set->forward(x, y, index, &g, p0, p1, scratch);
}

/* dx of planes [p0, p1) = 0, then dx[index] += dy for each output with an index (>= 0), in raster
 * order. */
void mp_backward(const float *dy, const int32_t *index, float *dx, const idx *geometry_values, idx p0, idx p1)
{
    const pool_geometry g = read_geometry(geometry_values);
    const idx plane = g.h * g.w, outputs = g.ph * g.pw;
    for (idx p = p0; p < p1; p++) {
        float *d = dx + p * plane;
        const float *gy = dy + p * outputs;
        const int32_t *at = index + p * outputs;
        memset(d, 0, (size_t)plane * sizeof(float));
        for (idx o = 0; o < outputs; o++)
            if (at[o] >= 0)
                d[at[o]] += gy[o];
    }
}

/* A module Python can find, and ctypes then opens: it defines no Python functions. */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_max_pool",
                                    "MAX pooling kernels, called through ctypes.", -1, NULL,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__max_pool(void) { return PyModule_Create(&module); }
