/* Includes KERNELS (a header of one instruction set's kernels) once per kernel set: AVX-512 and
 * AVX2 on x86 (X86_SETS, kernel_sets.h), and the baseline, with NAME(f) (the set's function names:
 * avx512_f, avx2_f, base_f), TARGET (its target attribute) and VL (floats per vector) defined. */

#define CAT(a, b) a##_##b
#define JOIN(a, b) CAT(a, b)

#if X86_SETS
#define NAME(f) JOIN(avx512, f)
#define TARGET __attribute__((target("avx512f,avx512vl,avx2,fma")))
#define VL 16
#include KERNELS
#undef NAME
#undef TARGET
#undef VL

#define NAME(f) JOIN(avx2, f)
#define TARGET __attribute__((target("avx2,fma")))
#define VL 8
#include KERNELS
#undef NAME
#undef TARGET
#undef VL
#endif

#define NAME(f) JOIN(base, f)
#define TARGET
#define VL 4
#include KERNELS
#undef NAME
#undef TARGET
#undef VL
