/* Choosing among a compiled library's kernel sets: each C file here carries its kernels once per
 * instruction set (AVX-512, AVX2, the baseline), and runs the best one this CPU supports, or the one
 * a test selects by name. A library lists its sets best first, the baseline last, as pointers to
 * structs whose first field is the set's name. */

#include <string.h>

/* Whether this CPU runs the instruction set of that name ("avx512", "avx2", "baseline"). */
static int cpu_runs(const char *name)
{
    if (strcmp(name, "baseline") == 0)
        return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (strcmp(name, "avx512") == 0)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    if (strcmp(name, "avx2") == 0)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return 0;
}

/* The first of `count` sets (best first) that this CPU runs, of that name where `name` is given;
 * NULL if none. */
static const void *choose_set(const void *const *sets, int count, const char *name)
{
    for (int i = 0; i < count; i++) {
        const char *set_name = *(const char *const *)sets[i];
        if ((name == NULL || strcmp(set_name, name) == 0) && cpu_runs(set_name))
            return sets[i];
    }
    return NULL;
}

/* Whether the x86 sets are built: the files include their AVX-512 and AVX2 copies under this. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define X86_SETS 1
#else
#define X86_SETS 0
#endif

/* A library's choice of kernel set, for its struct TYPE of them (avx512_set, avx2_set, base_set
 * defined): all_sets (best first) and SET_COUNT; kernels(), the set in use (the best this CPU runs,
 * until a test selects another); select_set(name), which selects one and says whether it could. */
#if X86_SETS
#define X86_SET_LIST &avx512_set, &avx2_set,
#else
#define X86_SET_LIST
#endif
#define KERNEL_CHOICE(TYPE)                                                          \
    static const TYPE *const all_sets[] = {X86_SET_LIST &base_set};                 \
    enum { SET_COUNT = sizeof all_sets / sizeof *all_sets };                         \
    static const TYPE *active;                                                       \
    static const TYPE *kernels(void)                                                 \
    {                                                                                \
        if (!active)                                                                 \
            active = choose_set((const void *const *)all_sets, SET_COUNT, NULL);     \
        return active;                                                               \
    }                                                                                \
    static int select_set(const char *name)                                          \
    {                                                                                \
        const TYPE *chosen = choose_set((const void *const *)all_sets, SET_COUNT, name); \
        active = chosen ? chosen : active;                                           \
        return chosen != NULL;                                                       \
    }
