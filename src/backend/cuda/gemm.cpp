// The cuBLASLt GEMM behind matmul and batch_matmul. cuBLASLt is column-major, and a row-major
// matrix read column-major is its transpose, so C = op(A)·op(B) is computed as
// Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's first operand is our B and its second our A, and no data moves.
#include "backend/cuda/gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/check.h"
#include "tandem/errors.h"

namespace tandem::backend::cuda {

namespace {
void check_blas(cublasStatus_t s, const char* call, const std::string& label) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(label + ": " + call + " failed with " + cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) + ")");
}

// The alignment cuBLASLt may assume of every item's pointer: the largest power of two (at most
// 256, its default assumption) dividing the base address and, in a batch, the item stride.
uint32_t alignment(const void* p, int64_t stride_bytes) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(p) | static_cast<uintptr_t>(stride_bytes) | uintptr_t{256};
  return static_cast<uint32_t>(bits & (~bits + 1));
}
}  // namespace

struct Gemm::Plan {
  enum class Kind { Nothing, Zero, Product };
  Kind kind = Kind::Nothing;
  std::string label;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  // cuBLASLt's A (our B), its B (our A), and C, which is also D: the product is written in place.
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  const void *a = nullptr, *b = nullptr;
  void* c = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  bool f64 = false;
  DType dtype = DType::F32;
  double alpha64 = 1, beta64 = 0;  // the scale type: double for F64, float for F32 and the 16-bit types
  float alpha32 = 1, beta32 = 0;
  std::size_t zero_pitch = 0, zero_width = 0, zero_rows = 0;  // Kind::Zero: C's items as rows of bytes

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    // Errors cannot be reported from here; a failed destroy leaks a few bytes of host memory.
    if (out) cublasLtMatrixLayoutDestroy(out);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (op) cublasLtMatmulDescDestroy(op);
  }

  // A column-major (rows, cols) matrix whose columns start `ld` elements apart (0: packed),
  // repeated `batch` times `stride` elements apart.
  cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) const {
    cublasLtMatrixLayout_t l = nullptr;
    check_blas(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld > 0 ? ld : rows),
               "cublasLtMatrixLayoutCreate", label);
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      const cublasStatus_t s1 = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
      const cublasStatus_t s2 = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
      if (s1 != CUBLAS_STATUS_SUCCESS || s2 != CUBLAS_STATUS_SUCCESS) {
        cublasLtMatrixLayoutDestroy(l);
        check_blas(s1 != CUBLAS_STATUS_SUCCESS ? s1 : s2, "cublasLtMatrixLayoutSetAttribute", label);
      }
    }
    return l;
  }

  void set_op(cublasLtMatmulDescAttributes_t attr, bool transpose) const {
    const int32_t value = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_blas(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof value), "cublasLtMatmulDescSetAttribute", label);
  }

  // The first algorithm cuBLASLt's heuristic ranks best for these layouts and pointers.
  void choose_algorithm(const GemmShape& s, std::size_t elem) {
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", label);
    const uint64_t max_workspace = workspace_bytes;
    // A row other than the first starts ld elements further on: that offset bounds the alignment too.
    const auto stride_bytes = [&](int64_t stride, int64_t ld) {
      return (s.batch > 1 ? stride * static_cast<int64_t>(elem) : int64_t{0}) | ld * static_cast<int64_t>(elem);
    };
    const uint32_t align_first = alignment(b, stride_bytes(s.b_stride, s.ldb)), align_second = alignment(a, stride_bytes(s.a_stride, s.lda)),
                   align_out = alignment(c, stride_bytes(s.c_stride, s.ldc));
    const struct {
      cublasLtMatmulPreferenceAttributes_t attr;
      const void* value;
      std::size_t size;
    } prefs[] = {{CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace},
                 {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof align_first},
                 {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof align_second},
                 {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_out, sizeof align_out},
                 {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_out, sizeof align_out}};
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const char* call = "cublasLtMatmulPreferenceSetAttribute";
    for (const auto& p : prefs)
      if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatmulPreferenceSetAttribute(pref, p.attr, p.value, p.size);
    cublasLtMatmulHeuristicResult_t results[8] = {};
    int returned = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
      call = "cublasLtMatmulAlgoGetHeuristic";
      status = cublasLtMatmulAlgoGetHeuristic(handle, op, first, second, out, out, pref, 8, results, &returned);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    check_blas(status, call, label);
    for (int i = 0; i < returned; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_bytes) {
        algo = results[i].algo;
        return;
      }
    throw Error(label + ": cuBLASLt has no algorithm for a " + dtype_name(dtype) + " GEMM of (" + std::to_string(s.m) +
                ", " + std::to_string(s.k) + ")·(" + std::to_string(s.k) + ", " + std::to_string(s.n) + ") x " +
                std::to_string(s.batch) + " within a workspace of " + std::to_string(workspace_bytes) + " bytes");
  }
};

Gemm::Gemm(const Context& ctx, DType dtype, const GemmShape& s, const void* a, const void* b, void* c, const std::string& label) {
  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  p.label = label;
  p.stream = ctx.stream;
  p.a = a, p.b = b, p.c = c;
  p.f64 = dtype == DType::F64;
  p.dtype = dtype;
  // bfloat16 and float16 operands multiply on the tensor cores and accumulate in float32
  // (CUBLAS_COMPUTE_32F), C rounded once; float32 computes in FP32 (no TF32), float64 in FP64.
  cudaDataType_t type = CUDA_R_32F;
  switch (dtype) {
    case DType::F32: type = CUDA_R_32F; break;
    case DType::F64: type = CUDA_R_64F; break;
    case DType::BF16: type = CUDA_R_16BF; break;
    case DType::F16: type = CUDA_R_16F; break;
    default: throw Error(label + ": GEMM on CUDA supports float32, float64, bfloat16 and float16, got " + dtype_name(dtype));
  }
  if (s.batch > INT32_MAX) throw Error(label + ": a batch of " + std::to_string(s.batch) + " GEMMs is more than cuBLASLt takes");
  if (s.wide_c && dtype != DType::BF16 && dtype != DType::F16)
    throw Error(label + ": a float32 C is for bfloat16 or float16 operands, got " + dtype_name(dtype));
  const std::size_t elem = dtype_size(dtype);
  const std::size_t c_elem = s.wide_c ? sizeof(float) : elem;
  const cudaDataType_t c_type = s.wide_c ? CUDA_R_32F : type;
  plan_ = plan;
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;  // an empty product: nothing to write
  if (s.k == 0) {  // an empty sum: op(A)·op(B) is zero, which cuBLASLt does not take as a shape
    if (s.beta == 1) return;
    if (s.beta != 0) throw Error(label + ": a GEMM with an empty inner dimension supports beta 0 or 1 only");
    if (s.ldc > 0 && s.ldc != s.n) throw Error(label + ": a GEMM with an empty inner dimension supports a packed C only");
    p.kind = Plan::Kind::Zero;
    p.zero_width = static_cast<std::size_t>(s.m * s.n) * c_elem;
    p.zero_pitch = s.batch > 1 ? static_cast<std::size_t>(s.c_stride) * c_elem : p.zero_width;
    p.zero_rows = static_cast<std::size_t>(s.batch);
    return;
  }
  p.kind = Plan::Kind::Product;
  // The factory may run on any thread, after another device's: the heuristic asks the current one.
  check(cudaSetDevice(ctx.ordinal), "cudaSetDevice", label);
  p.handle = ctx.blas;
  p.workspace = ctx.workspace;
  p.workspace_bytes = ctx.workspace_bytes;
  p.beta64 = s.beta;
  p.beta32 = static_cast<float>(s.beta);
  check_blas(cublasLtMatmulDescCreate(&p.op, p.f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, p.f64 ? CUDA_R_64F : CUDA_R_32F),
             "cublasLtMatmulDescCreate", label);
  p.set_op(CUBLASLT_MATMUL_DESC_TRANSA, s.transpose_b);
  p.set_op(CUBLASLT_MATMUL_DESC_TRANSB, s.transpose_a);
  // Stored shapes, column-major: B is (n, k) or, transposed, (k, n); A is (k, m) or (m, k); C is (n, m).
  // A row-major matrix with row stride ld is, read column-major, its transpose with column stride ld.
  p.first = p.layout(type, s.transpose_b ? s.k : s.n, s.transpose_b ? s.n : s.k, s.ldb, s.batch, s.b_stride);
  p.second = p.layout(type, s.transpose_a ? s.m : s.k, s.transpose_a ? s.k : s.m, s.lda, s.batch, s.a_stride);
  p.out = p.layout(c_type, s.n, s.m, s.ldc, s.batch, s.c_stride);
  p.choose_algorithm(s, elem);
}

void Gemm::run() const {
  const Plan& p = *plan_;
  switch (p.kind) {
    case Plan::Kind::Nothing:
      return;
    case Plan::Kind::Zero:
      check(cudaMemset2DAsync(p.c, p.zero_pitch, 0, p.zero_width, p.zero_rows, p.stream), "cudaMemset2DAsync", p.label);
      return;
    case Plan::Kind::Product: {
      const void* alpha = p.f64 ? static_cast<const void*>(&p.alpha64) : &p.alpha32;
      const void* beta = p.f64 ? static_cast<const void*>(&p.beta64) : &p.beta32;
      check_blas(cublasLtMatmul(p.handle, p.op, alpha, p.b, p.first, p.a, p.second, beta, p.c, p.out, p.c, p.out, &p.algo, p.workspace,
                                p.workspace_bytes, p.stream),
                 "cublasLtMatmul", p.label);
      return;
    }
  }
}

}  // namespace tandem::backend::cuda
