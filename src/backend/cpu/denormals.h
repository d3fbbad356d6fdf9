// Flush-to-zero for denormal floats while kernels run. Optimizer slots of weights whose gradient
// is always zero (the always-black border pixels of an image, say) decay into denormals, and
// arithmetic on denormals is up to a hundred times slower on x86. Deep-learning frameworks run
// their kernels with denormals flushed for this reason.
#pragma once

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tandem::backend::cpu {

// For a thread that runs only kernels (a device's worker): flushed for the rest of its life.
inline void flush_denormals_on_this_thread() {
#if defined(__SSE__)
  _mm_setcsr(_mm_getcsr() | 0x8040u);  // FTZ | DAZ
#endif
}

class FlushDenormals {
 public:
#if defined(__SSE__)
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }  // FTZ | DAZ
  ~FlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#endif
 public:
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;
};

}  // namespace tandem::backend::cpu
