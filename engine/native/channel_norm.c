/* Batch normalisation per channel on the CPU (float32), with the Scale layer that follows it folded
 * in, for engine.layers.channel_norm.
 *
 * numpy's BatchNorm makes seven passes over the blob and the Scale after it three more, each one a
 * trip to memory for a blob larger than the caches (ResNet's conv1 at batch 8: 25 MB). Here a
 * channel's values (N rows of S) are read from memory once and the passes after the first find them
 * in the core's cache:
 * - forward: mean, then the variance of the centred values (Caffe's two passes), then
 *   x_norm = (x - mean) / sqrt(var + eps) and y = x_norm * scale + bias (y = x_norm without a
 *   Scale) in one pass; with global statistics, the given mean and variance;
 * - backward: sum(dy) and sum(dy * x_norm) in one pass, which give the Scale's gradients and
 *   BatchNorm's, then dx = scale / std * (dy - mean(dy) - x_norm * mean(dy * x_norm)) in one more
 *   (scale / std * dy with global statistics).
 * Each call takes a range of channels: the caller splits the channels over its threads. Every
 * channel is its own: no sum crosses channels, so the thread count changes no result. In place
 * (y the same memory as x, dx as dy) is allowed: each value is read before it is written.
 *
 * Nothing here allocates or holds Python objects; the caller (Python, through ctypes) owns every
 * buffer and has checked their sizes. The sums are in float32, in lanes of vectors added at the end,
 * as BLAS's dot products are in Caffe. Each instruction set (AVX-512, AVX2, the baseline) gets its
 * own copy of the kernels (channel_norm_kernels.h), chosen once from what the CPU reports: the
 * divisions and the passes from the cache are bound by arithmetic (56 x 56 x 64 at batch 8: 0.24 ms
 * a forward with AVX-512, 1.03 with the baseline's SSE2). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernel_sets.h"

typedef int64_t idx;

enum { ABI = 2 };

#define KERNELS "channel_norm_kernels.h"
#include "each_set.h"

typedef void (*forward_fn)(const float *, float *, float *, idx, idx, idx, idx, idx, int, float, float *,
                           float *, float *, const float *, const float *, int);
typedef void (*backward_fn)(const float *, const float *, float *, idx, idx, idx, idx, idx, int,
                            const float *, const float *, float *, float *, const float *);

typedef struct {
    const char *name;
    forward_fn forward;
    backward_fn backward;
} kernel_set;

static const kernel_set base_set = {"baseline", base_forward, base_backward};
#if X86_SETS
static const kernel_set avx512_set = {"avx512", avx512_forward, avx512_backward};
static const kernel_set avx2_set = {"avx2", avx2_forward, avx2_backward};
#endif

KERNEL_CHOICE(kernel_set)

idx cn_abi(void) { return ABI; }

const char *cn_kernel_name(void) { return kernels()->name; }

/* Run the kernel set of that name from now on (the tests run each one); 0 if this CPU cannot. */
int cn_select(const char *name) { return select_set(name); }

/* Channels [c0, c1) of x (n, c, s): mean[] and var[] (the biased variance) from the batch where
 * `batch`, else read from them; std[] = sqrt(var + eps); x_norm = (x - mean) / std; y = x_norm *
 * scale + bias where scale is given (bias may be NULL), then max(y, 0) where `relu` (a ReLU after
 * the Scale), else y = x_norm (y may be x_norm itself). */
void cn_forward(const float *x, float *x_norm, float *y, idx n, idx c, idx s, idx c0, idx c1, int batch,
                float eps, float *mean, float *var, float *std, const float *scale, const float *bias, int relu)
{
    kernels()->forward(x, x_norm, y, n, c, s, c0, c1, batch, eps, mean, var, std, scale, bias, relu);
}

/* Channels [c0, c1): with g = dy, or dy where keep > 0 and 0 elsewhere where `keep` is given (the
 * gradient through a ReLU after the Scale, keep its output): d_scale[] += sum(g * x_norm) and
 * d_bias[] += sum(g) where given (the Scale's gradients); where dx is given, dx = scale / std *
 * (g - mean(g) - x_norm * mean(g * x_norm)) with `batch` statistics, else scale / std * g (scale 1
 * where NULL). dx may be dy itself. */
void cn_backward(const float *dy, const float *x_norm, float *dx, idx n, idx c, idx s, idx c0, idx c1,
                 int batch, const float *std, const float *scale, float *d_scale, float *d_bias,
                 const float *keep)
{
    kernels()->backward(dy, x_norm, dx, n, c, s, c0, c1, batch, std, scale, d_scale, d_bias, keep);
}

/* A module Python can find, and ctypes then opens: it defines no Python functions. */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_channel_norm",
                                    "Channel normalisation kernels, called through ctypes.", -1, NULL,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__channel_norm(void) { return PyModule_Create(&module); }
