// Flush-to-zero for denormal floats while kernels run. Optimizer slots of weights whose gradient
// is always zero (the always-black border pixels of an image, say) decay into denormals, and
// arithmetic on denormals is up to a hundred times slower on x86. Deep-learning frameworks run
// their kernels with denormals flushed for this reason.
#pragma once

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace tandem::backend::cpu {

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
