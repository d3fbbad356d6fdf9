// The bfloat16 and float16 CPU GEMMs: products accumulated in float32, the epilogue (bias and
// activation) applied in float32, and one rounding to the output's type.
//
// bfloat16 goes to oneDNN's matmul, which picks the CPU's fastest kernel itself: AVX512-BF16 dot
// products (vdpbf16ps) where the CPU has them, AMX tiles on CPUs with AMX, emulated bf16 on plain
// AVX-512. Each thread makes, on its first call for a block shape, a primitive with that block's
// sizes and strides fixed (oneDNN's brgemm kernels: up to 3× faster than its runtime-size GEMM on
// thin products); where oneDNN has only reference code for that, one primitive per kind of product
// (transposes, output type, epilogue) with runtime sizes serves. Where neither is more than
// reference code (no AVX-512), the fallback converts the operands to float32, runs the float GEMM
// and rounds the output: the same sums, slower. float16 always takes the fallback: oneDNN 2.6 has no float16
// matmul on CPUs without AVX512-FP16.
//
// Both paths cut C into blocks by the product's shape alone, which the device's threads share out
// (gemm.h, for_fixed_blocks), and the fallback picks OpenBLAS or oneDNN by the whole product's
// sides, so each element is summed by the same code in the same order on any number of threads.
#include <Eigen/Core>
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/gemm.h"
#include "tandem/errors.h"

namespace tandem::backend::cpu {

namespace {
using dnnl::memory;

// One oneDNN matmul, or none where oneDNN has only its reference code for the form.
struct Matmul {
  dnnl::primitive primitive;
  std::string implementation;  // oneDNN's name for it: "gemm:jit", "brg:avx512_core_bf16", "ref:any"
  bool usable = false;
  std::size_t scratchpad_bytes = 0;  // the caller's: each thread passes its own (thread-safe use)
};

// A block's sizes and row strides; all runtime (DNNL_RUNTIME_DIM_VAL) for the shared primitive.
struct Sizes {
  memory::dim rows = DNNL_RUNTIME_DIM_VAL, cols = DNNL_RUNTIME_DIM_VAL, k = DNNL_RUNTIME_DIM_VAL;
  memory::dim lda = DNNL_RUNTIME_DIM_VAL, ldb = DNNL_RUNTIME_DIM_VAL, ldc = DNNL_RUNTIME_DIM_VAL;
  bool operator==(const Sizes&) const = default;
};

// The forms of product: A and B transposed or not, C in bfloat16 or float32, with a bias or not,
// the activation, and C added to (beta = 1) or not.
struct Form {
  bool ta = false, tb = false, wide = false, bias = false;
  Activation activation = Activation::Linear;
  bool accumulate = false;
  int index() const { return ((((int(ta) * 2 + tb) * 2 + wide) * 2 + bias) * 4 + int(activation)) * 2 + accumulate; }
};
constexpr int kForms = 2 * 2 * 2 * 2 * 4 * 2;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::algorithm eltwise(Activation a) {
  switch (a) {
    case Activation::Relu: return dnnl::algorithm::eltwise_relu;
    case Activation::Sigmoid: return dnnl::algorithm::eltwise_logistic;
    case Activation::Tanh: return dnnl::algorithm::eltwise_tanh;
    case Activation::Linear: break;
  }
  throw Error("internal: no oneDNN eltwise for a linear activation");
}

// oneDNN's primitive cache hands a primitive made on one thread to another and orders the two
// with atomics inside the library, where ThreadSanitizer cannot see them. Making every primitive
// under one lock gives that order in code it can see; it is taken once per thread and block shape.
std::mutex making;

Matmul make_matmul(const Form& f, const Sizes& z = {}) {
  const std::lock_guard<std::mutex> lock(making);
  const auto strides = [](bool transposed, memory::dim ld) { return transposed ? memory::dims{1, ld} : memory::dims{ld, 1}; };
  const memory::desc a({z.rows, z.k}, memory::data_type::bf16, strides(f.ta, z.lda));
  const memory::desc b({z.k, z.cols}, memory::data_type::bf16, strides(f.tb, z.ldb));
  const memory::desc c({z.rows, z.cols}, f.wide ? memory::data_type::f32 : memory::data_type::bf16, strides(false, z.ldc));
  dnnl::post_ops ops;
  if (f.accumulate) ops.append_sum(1.0f);
  if (f.activation != Activation::Linear) ops.append_eltwise(1.0f, eltwise(f.activation), 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  Matmul m;
  try {
    const memory::desc bias({1, z.cols}, memory::data_type::bf16, strides(false, z.cols));
    const dnnl::matmul::desc desc = f.bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine());
    m.implementation = pd.impl_info_str();
    m.usable = m.implementation.rfind("ref", 0) != 0;
    m.scratchpad_bytes = pd.scratchpad_desc().get_size();
    if (m.usable) m.primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    m.implementation = std::string("none (").append(e.what()).append(")");
  }
  return m;
}

const Matmul& matmul_for(const Form& f) {
  static std::array<std::once_flag, kForms> made;
  static std::array<Matmul, kForms> matmuls;
  const int i = f.index();
  std::call_once(made[static_cast<std::size_t>(i)], [&] { matmuls[static_cast<std::size_t>(i)] = make_matmul(f); });
  return matmuls[static_cast<std::size_t>(i)];
}

std::atomic<bool> onednn_allowed{true};

// oneDNN's matmul for the form, or null where the fallback runs.
template <class T>
const Matmul* onednn_for(const Form& f, int64_t k) {
  if constexpr (!std::is_same_v<T, Eigen::bfloat16>) return nullptr;
  if (k == 0 || !onednn_allowed.load(std::memory_order_relaxed)) return nullptr;  // an empty sum: the fallback writes the epilogue of 0
  const Matmul& m = matmul_for(f);
  return m.usable ? &m : nullptr;
}

// The operands of one block of C: op(A)'s rows [r0, r1), op(B)'s columns [c0, c1), with their row strides.
template <class T>
struct Block {
  bool ta, tb;
  int64_t rows, cols, k;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  Block(bool ta_, bool tb_, int64_t m, int64_t n, int64_t k_, const T* a_, const T* b_, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
      : ta(ta_), tb(tb_), rows(r1 - r0), cols(c1 - c0), k(k_), a(ta_ ? a_ + r0 : a_ + r0 * k_), lda(ta_ ? m : k_),
        b(tb_ ? b_ + c0 * k_ : b_ + c0), ldb(tb_ ? k_ : n) {}
};

// A matrix of oneDNN's with these sizes and strides over `data` (the C API, so that a call makes no
// argument map); destroyed with the call.
class Memory {
 public:
  Memory(int64_t rows, int64_t cols, int64_t row_stride, int64_t column_stride, dnnl_data_type_t type, const void* data) {
    const dnnl_dims_t dims{rows, cols}, strides{row_stride, column_stride};
    dnnl_memory_desc_t md;
    check(dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides), "a matrix descriptor");
    check(dnnl_memory_create(&memory_, &md, engine().get(), const_cast<void*>(data)), "a matrix");
  }
  ~Memory() { dnnl_memory_destroy(memory_); }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  dnnl_memory_t get() const { return memory_; }
  static void check(dnnl_status_t s, const char* what) {
    if (s != dnnl_success) throw Error(std::string("gemm: oneDNN could not make ").append(what).append(" (status ").append(std::to_string(int(s))).append(")"));
  }

 private:
  dnnl_memory_t memory_ = nullptr;
};

struct SizesHash {
  std::size_t operator()(const std::pair<int, Sizes>& key) const {
    std::size_t h = static_cast<std::size_t>(key.first);
    for (memory::dim v : {key.second.rows, key.second.cols, key.second.k, key.second.lda, key.second.ldb, key.second.ldc})
      h = h * 1000003u ^ static_cast<std::size_t>(v);
    return h;
  }
};

// The primitive with this block's sizes fixed, made by this thread on its first call for them
// (oneDNN's own cache makes a second thread's cheap), or `general` where oneDNN has only reference
// code for it. The choice depends on the block's shape alone, and each element of a product is
// always in a block of the same shape (for_fixed_blocks), so the bits do not depend on the threads.
template <class T>
const Matmul& block_matmul(const Form& f, const Block<T>& o, int64_t ldc, const Matmul& general) {
  thread_local std::unordered_map<std::pair<int, Sizes>, Matmul, SizesHash> made;
  const std::pair<int, Sizes> key{f.index(), Sizes{o.rows, o.cols, o.k, o.lda, o.ldb, ldc}};
  auto [it, inserted] = made.try_emplace(key);
  if (inserted) it->second = make_matmul(f, key.second);
  return it->second.usable ? it->second : general;
}

// C (row stride ldc, bfloat16 or float32) = epilogue(op(A)·op(B) + [C]) on the calling thread.
template <class T>
void onednn_block(const Matmul& m, const Block<T>& o, void* c, int64_t ldc, bool wide, const T* bias) {
  gemm_detail::one_openmp_thread();
  thread_local dnnl::stream stream(engine());
  thread_local std::vector<char> scratchpad;  // grows to the largest primitive's need, then is reused
  const Memory a(o.rows, o.k, o.ta ? 1 : o.lda, o.ta ? o.lda : 1, dnnl_bf16, o.a);
  const Memory b(o.k, o.cols, o.tb ? 1 : o.ldb, o.tb ? o.ldb : 1, dnnl_bf16, o.b);
  const Memory out(o.rows, o.cols, ldc, 1, wide ? dnnl_f32 : dnnl_bf16, c);
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, a.get()}, {DNNL_ARG_WEIGHTS, b.get()}, {DNNL_ARG_DST, out.get()}};
  int count = 3;
  std::optional<Memory> bias_memory, scratch_memory;
  if (bias) {
    bias_memory.emplace(1, o.cols, o.cols, 1, dnnl_bf16, bias);
    args[count++] = {DNNL_ARG_BIAS, bias_memory->get()};
  }
  if (m.scratchpad_bytes > 0) {
    if (scratchpad.size() < m.scratchpad_bytes) scratchpad.resize(m.scratchpad_bytes);
    scratch_memory.emplace(1, static_cast<int64_t>(m.scratchpad_bytes), static_cast<int64_t>(m.scratchpad_bytes), 1, dnnl_u8, scratchpad.data());
    args[count++] = {DNNL_ARG_SCRATCHPAD, scratch_memory->get()};
  }
  Memory::check(dnnl_primitive_execute(m.primitive.get(), stream.get(), count, args), "a product");
  Memory::check(dnnl_stream_wait(stream.get()), "a finished product");
}

// rows × cols of `from` (row stride ld) into packed float32.
template <class T>
void widen(const T* from, int64_t rows, int64_t cols, int64_t ld, float* to) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) to[r * cols + j] = static_cast<float>(from[r * ld + j]);
}

// The fallback: the block's operands widened to float32, the float GEMM, and C rounded once (or,
// wide, written in float32 with beta).
template <class T>
void fallback_block(const Block<T>& o, int64_t m, T* c, float* wide_c, int64_t ldc, float beta, const Epilogue<T>& e) {
  const int short_product = o.k <= gemm_detail::kShortSide || m <= gemm_detail::kShortSide ? 1 : 0;
  thread_local std::vector<float> scratch;  // grows to the largest block once, then is reused
  const int64_t a_size = o.rows * o.k, b_size = o.k * o.cols, c_size = wide_c ? 0 : o.rows * o.cols;
  scratch.resize(static_cast<std::size_t>(a_size + b_size + c_size + (e.bias ? o.cols : 0)));
  float* a = scratch.data();
  float* b = a + a_size;
  float* cf = b + b_size;
  if (o.ta) widen(o.a, o.k, o.rows, o.lda, a);
  else widen(o.a, o.rows, o.k, o.lda, a);
  if (o.tb) widen(o.b, o.cols, o.k, o.ldb, b);
  else widen(o.b, o.k, o.cols, o.ldb, b);
  // An empty sum (k = 0) is zero; the BLASes refuse its leading dimension of 0.
  const auto product = [&](float* into, int64_t ld, float scale) {
    if (o.k > 0) {
      gemm_detail::sgemm(o.ta, o.tb, o.rows, o.cols, o.k, a, o.ta ? o.rows : o.k, b, o.tb ? o.k : o.cols, into, ld, scale, short_product);
      return;
    }
    for (int64_t r = 0; r < o.rows; ++r)
      for (int64_t j = 0; j < o.cols; ++j) into[r * ld + j] = scale == 0.0f ? 0.0f : scale * into[r * ld + j];
  };
  if (wide_c) {
    product(wide_c, ldc, beta);
    return;
  }
  product(cf, o.cols, 0.0f);
  Epilogue<float> ef{.activation = e.activation};
  if (e.bias) {
    float* bias = cf + c_size;
    widen(e.bias, 1, o.cols, o.cols, bias);
    ef.bias = bias;
  }
  apply_epilogue(ef, cf, o.cols, 0, o.rows, 0, o.cols);
  for (int64_t r = 0; r < o.rows; ++r)
    for (int64_t j = 0; j < o.cols; ++j) c[r * ldc + j] = static_cast<T>(cf[r * o.cols + j]);
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx (AMX bf16 tiles)";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16 (AVX512-BF16 dot products)";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni (bf16 emulated in float32 FMAs)";
    case dnnl::cpu_isa::avx512_core: return "avx512_core (bf16 emulated in float32 FMAs)";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "an older ISA";
  }
}
}  // namespace

namespace gemm_detail {
template <class T>
void low_gemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, const Epilogue<T>& e) {
  const Form form{.ta = ta, .tb = tb, .bias = e.bias != nullptr, .activation = e.activation};
  const Matmul* onednn = onednn_for<T>(form, k);
  for_fixed_blocks(ctx, m, n, k, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const Block<T> o(ta, tb, m, n, k, a, b, r0, r1, c0, c1);
    T* cb = c + r0 * n + c0;
    Epilogue<T> eb = e;
    if (eb.bias) eb.bias += c0;
    if (onednn) onednn_block(block_matmul(form, o, n, *onednn), o, cb, n, false, eb.bias);
    else fallback_block<T>(o, m, cb, nullptr, n, 0.0f, eb);
  });
}

template <class T>
void low_gemm_wide(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, float* c, float beta) {
  const Form form{.ta = ta, .tb = tb, .wide = true, .accumulate = beta == 1.0f};
  const Matmul* onednn = beta == 0.0f || beta == 1.0f ? onednn_for<T>(form, k) : nullptr;
  for_fixed_blocks(ctx, m, n, k, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const Block<T> o(ta, tb, m, n, k, a, b, r0, r1, c0, c1);
    float* cb = c + r0 * n + c0;
    if (onednn) onednn_block(block_matmul(form, o, n, *onednn), o, cb, n, true, static_cast<const T*>(nullptr));
    else fallback_block<T>(o, m, nullptr, cb, n, beta, {});
  });
}

template void low_gemm<Eigen::bfloat16>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::bfloat16*, const Eigen::bfloat16*,
                                        Eigen::bfloat16*, const Epilogue<Eigen::bfloat16>&);
template void low_gemm<Eigen::half>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::half*, const Eigen::half*, Eigen::half*,
                                    const Epilogue<Eigen::half>&);
template void low_gemm_wide<Eigen::bfloat16>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::bfloat16*,
                                             const Eigen::bfloat16*, float*, float);
template void low_gemm_wide<Eigen::half>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::half*, const Eigen::half*, float*,
                                         float);
}  // namespace gemm_detail

std::string bf16_path() {
  const Matmul& m = matmul_for({});
  if (!m.usable || !onednn_allowed.load())
    return std::string("float32 GEMM on widened operands, one rounding (oneDNN's bfloat16 matmul here: ").append(m.implementation).append(")");
  // What a plain 256 × 256 × 256 block runs, and the runtime-size primitive behind the shapes it lacks.
  const Matmul fixed = make_matmul({}, Sizes{256, 256, 256, 256, 256, 256});
  return std::string("oneDNN matmul on ").append(isa_name(dnnl::get_effective_cpu_isa())).append(": ")
      .append(fixed.usable ? fixed.implementation : m.implementation).append(" at fixed block shapes, ").append(m.implementation)
      .append(" where those have only reference code");
}

std::string f16_path() { return "float32 GEMM on widened operands, one rounding (oneDNN 2.6 has no float16 matmul on CPUs)"; }

void use_onednn_bf16(bool use) { onednn_allowed.store(use); }

}  // namespace tandem::backend::cpu
