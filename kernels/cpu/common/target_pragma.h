// PD_TARGET_PUSH("avx2,fma") ... PD_TARGET_POP: compile the functions in between for an instruction set
// the build does not target (callers check the CPU first, pd/core/cpu_features.h). GCC's
// `#pragma GCC target` is ignored by clang, which takes a `#pragma clang attribute` instead.
#pragma once

#define PD_DO_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define PD_TARGET_PUSH(t) PD_DO_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#define PD_TARGET_POP PD_DO_PRAGMA(clang attribute pop)
#else
#define PD_TARGET_PUSH(t) PD_DO_PRAGMA(GCC push_options) PD_DO_PRAGMA(GCC target(t))
#define PD_TARGET_POP PD_DO_PRAGMA(GCC pop_options)
#endif
