// Row-major GEMMs on a CUDA device through cuBLASLt: C = op(A)·op(B) + beta·C, optionally over a
// strided batch. Everything that needs a decision (descriptors, layouts, the algorithm) happens
// once, when a kernel's factory constructs the Gemm; run() only enqueues work on the compute stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cuda/context.h"
#include "tandem/tensor.h"

namespace tandem::backend::cuda {

// op(A) is (m, k), op(B) is (k, n) and C is (m, n), each row-major; item i of a batch starts
// a_stride, b_stride and c_stride elements after item i − 1. A matrix is packed unless its lda,
// ldb or ldc (elements from one stored row to the next) says otherwise: a block of columns of a
// wider matrix, such as one gate's slice of a recurrent kernel, is then an operand in place.
struct GemmShape {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, a_stride = 0, b_stride = 0, c_stride = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: packed. k = 0 (C set to zero by a memset) needs a packed C
  double beta = 0;                    // 0 overwrites C; 1 adds the product to it
  bool wide_c = false;                // bfloat16/float16 operands with a float32 C: the sums kept, not rounded
};

class Gemm {
 public:
  // Plans the product of these operands (cuBLASLt's choice depends on their alignment) within the
  // device's shared workspace. F32 computes in FP32 (no TF32), F64 in FP64, BF16 and F16 on the
  // tensor cores with FP32 accumulation and one rounding of C. Throws naming `label`
  // when cuBLASLt offers no algorithm.
  Gemm(const Context& ctx, DType dtype, const GemmShape& shape, const void* a, const void* b, void* c, const std::string& label);
  void run() const;  // enqueues on ctx.stream; throws naming the label if cuBLASLt refuses

 private:
  struct Plan;
  std::shared_ptr<const Plan> plan_;  // shared by the copies a kernel's closures hold
};

}  // namespace tandem::backend::cuda
