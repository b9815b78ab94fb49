// The floating-point mode of a thread, which a model's run sets
// (mlcc_model_set_flush_denormals: denormals flushed to zero) and the
// thread pool's workers take from the thread that starts a loop. On x86 the
// MXCSR register (FTZ: denormal results become zero; DAZ: denormal inputs
// read as zero); elsewhere nothing changes (denormals are kept).
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define MLCC_RT_MXCSR 1
#endif

namespace mlcc::rt {

using FloatMode = uint32_t;

inline FloatMode floatMode() {
#ifdef MLCC_RT_MXCSR
  return _mm_getcsr();
#else
  return 0;
#endif
}

inline void setFloatMode(FloatMode mode) {
#ifdef MLCC_RT_MXCSR
  if (_mm_getcsr() != mode) _mm_setcsr(mode);
#else
  (void)mode;
#endif
}

// `mode` with denormals flushed: MXCSR's FTZ (bit 15) and DAZ (bit 6).
inline FloatMode flushDenormals(FloatMode mode) {
#ifdef MLCC_RT_MXCSR
  return mode | 0x8000u | 0x0040u;
#else
  return mode;
#endif
}

}  // namespace mlcc::rt
