// What the recurrent CUDA kernels (lstm.cu, gru.cu, simple_rnn.cu) share. ops/recurrent.h defines
// the ops and their reserve layouts. Every op runs the same way on the compute stream, with no host
// synchronisation inside the step loop:
//
//  forward, per processing step s: one cuBLASLt GEMM h_{s−1}·U into Z (batch, G·units), then one
//    elementwise kernel that adds xw_t, applies the gates and the mask, and writes y, the reserve
//    and the GEMM's operand for step s + 1. h_{s−1} itself lives in the reserve (the kernel of step
//    s − 1 writes it into step s's slot); the GEMM reads a packed copy `hs` of it, or with
//    recurrent_scale one scaled copy per gate, which the same kernel writes.
//  backward, per step from the last: one elementwise kernel that turns the gradient reaching h_s
//    into dZ_s (the gradient of the gates' pre-activations' recurrent part) and dxw_t, then one
//    GEMM dZ_s·Uᵀ added into the carried dh (with recurrent_scale: one product per gate into P,
//    which the next kernel scales and adds). dZ_s is also kept for every step, in processing order,
//    so that drecurrent_kernel is ONE GEMM over all batch·steps rows at the end.
//
// Gate g of the recurrent kernel U (units, G·units) is the column block U[:, g·units, +units],
// which GemmShape's ldb makes an operand in place. Scratch buffers are allocated by the factory
// (device_scratch), once per plan. Nothing uses atomics: every output element has one writer, and
// sums over rows are in a fixed order, so results are deterministic.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/device_scratch.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/kernel_util.cuh"
#include "backend/fused_activation.h"

namespace tandem::backend::cuda::recurrent {

// The activation picked at run time: the same choice for every thread, so no divergence, and one
// compiled kernel per op instead of one per pair of activations.
template <class T>
__device__ T activate(Activation a, T x) {
  switch (a) {
    case Activation::Relu: return Relu{}(x);
    case Activation::Sigmoid: return Sigmoid{}(x);
    case Activation::Tanh: return Tanh{}(x);
    case Activation::Linear: break;
  }
  return x;
}

// The gradient before the activation from the one after it (dy) and the activation's output y.
template <class T>
__device__ T activate_grad(Activation a, T dy, T y) {
  switch (a) {
    case Activation::Relu: return ReluGrad{}(dy, y);
    case Activation::Sigmoid: return SigmoidGrad{}(dy, y);
    case Activation::Tanh: return TanhGrad{}(dy, y);
    case Activation::Linear: break;
  }
  return dy;
}

// The sizes and attrs of one op, by value in every launch.
struct Sizes {
  int64_t batch = 0, steps = 0, units = 0;
  int gates = 1;  // G: blocks of `units` columns in xw and U
  int slots = 1;  // K: blocks of `units` in each (batch, step) row of the reserve
  bool backwards = false, zero_output = false;
  Activation activation = Activation::Tanh, recurrent_activation = Activation::Sigmoid;

  // The time that processing step s reads.
  __host__ __device__ int64_t time(int64_t s) const { return backwards ? steps - 1 - s : s; }
  // Row (b, s) of a (batch, steps, ·) tensor.
  __host__ __device__ int64_t row(int64_t b, int64_t s) const { return b * steps + s; }
  __host__ __device__ int64_t states() const { return batch * units; }  // elements of one (batch, units) state
  bool empty() const { return batch == 0 || steps == 0 || units == 0; }
};

// Reads the attrs; the dims come from the caller (the forward op's xw, the gradient's reserve).
inline Sizes read_sizes(const KernelInit& k, int64_t batch, int64_t steps, int64_t units, int gates, int slots) {
  const auto& a = k.node.attrs;
  Sizes z;
  z.batch = batch, z.steps = steps, z.units = units, z.gates = gates, z.slots = slots;
  z.backwards = a.b("go_backwards");
  z.zero_output = a.b("zero_output_for_mask");
  z.activation = parse_activation(a.s("activation"));
  if (gates > 1) z.recurrent_activation = parse_activation(a.s("recurrent_activation"));
  return z;
}

// Whether processing step s runs for batch row b: mask is (batch, steps), indexed by time.
template <class T>
__device__ bool runs(const Sizes& z, const T* mask, int64_t b, int64_t s) {
  return mask[z.row(b, z.time(s))] != T(0);
}

// y at a skipped step: the previous output (0 before the first step), or 0 with zero_output_for_mask.
template <class T>
__device__ T skipped_output(const Sizes& z, const T* y, int64_t b, int64_t s, int64_t j) {
  return z.zero_output || s == 0 ? T(0) : y[z.row(b, s - 1) * z.units + j];
}

// Element (b, j) of the GEMM operands for the next step: `copies` (B, H) matrices of h, copy g
// scaled by gate g's recurrent_scale where there is one (scale (batch, G, units) or null).
template <class T>
__device__ void write_recurrent_operand(const Sizes& z, T* hs, int copies, const T* scale, int64_t b, int64_t j, T h) {
  for (int g = 0; g < copies; ++g)
    hs[(g * z.batch + b) * z.units + j] = scale ? h * scale[(b * z.gates + g) * z.units + j] : h;
}

// The gradient reaching h_s of row b, element j: the carried dh plus, with recurrent_scale, the
// `gates` per-gate products dZ_g·U_gᵀ the last GEMM left in P, each times its gate's scale.
template <class T>
__device__ T carried_dh(const Sizes& z, const T* dh, const T* p, const T* scale, int gates, int64_t b, int64_t j) {
  T d = dh[b * z.units + j];
  if (scale)
    for (int g = 0; g < gates; ++g) d += scale[(b * z.gates + g) * z.units + j] * p[(g * z.batch + b) * z.units + j];
  return d;
}

template <class T>
__global__ void operand_from_state_kernel(Sizes z, T* hs, int copies, const T* scale, const T* h) {
  TANDEM_CUDA_LOOP(i, z.states()) write_recurrent_operand(z, hs, copies, scale, i / z.units, i % z.units, h[i]);
}

template <class T>
__global__ void final_dh_kernel(Sizes z, T* dh0, const T* dh, const T* p, const T* scale, int gates) {
  TANDEM_CUDA_LOOP(i, z.states()) dh0[i] = carried_dh(z, dh, p, scale, gates, i / z.units, i % z.units);
}

// rows (G, batch·steps, units): gate g's recurrent operand at every (b, s), for the per-gate
// drecurrent_kernel GEMM: h_{s−1} from reserve slot `h_slot` times gate g's scale, except for
// gate `own_gate` (GRU without reset_after: its h gate's operand r·h_{s−1} has a slot of its own,
// `own_slot`, already scaled). own_gate −1: none.
template <class T>
__global__ void kernel_grad_rows_kernel(Sizes z, T* rows, const T* reserve, const T* scale, int h_slot, int own_gate, int own_slot) {
  const int64_t n = int64_t(z.gates) * z.batch * z.steps * z.units;
  TANDEM_CUDA_LOOP(i, n) {
    const int64_t j = i % z.units, r = (i / z.units) % (z.batch * z.steps);
    const int g = int(i / (z.units * z.batch * z.steps));
    const T* res = reserve + r * z.slots * z.units;
    if (g == own_gate) rows[i] = res[own_slot * z.units + j];
    else rows[i] = scale ? res[h_slot * z.units + j] * scale[((r / z.steps) * z.gates + g) * z.units + j] : res[h_slot * z.units + j];
  }
}

// One device allocation cut into parts (part i has counts[i] elements, each part starting on a
// 256-byte boundary so that GEMM operands stay aligned). Held by the closures that use it.
template <class T>
class Scratch {
 public:
  Scratch(const Context& ctx, std::initializer_list<int64_t> counts, const std::string& label) {
    constexpr int64_t kAlign = 256 / int64_t(sizeof(T));
    int64_t total = 0;
    for (int64_t c : counts) {
      offsets_.push_back(total);
      total += (c + kAlign - 1) / kAlign * kAlign;
    }
    memory_ = device_scratch<T>(ctx, total, label);
  }
  T* part(int i) const { return memory_.get() + offsets_[static_cast<std::size_t>(i)]; }

 private:
  std::shared_ptr<T> memory_;
  std::vector<int64_t> offsets_;
};

// Forward GEMM: Z[:, gates first_gate .. first_gate + gates) = hs · U of those gates, Z being
// (batch, G·units). Unscaled, hs is one (batch, units) matrix and this is one GEMM over gates·units
// columns; `per_gate` (recurrent_scale), hs holds one scaled copy per gate, (gates, batch, units),
// and it is a batch of one GEMM per gate.
template <class T>
Gemm step_product(const KernelInit& k, const Sizes& z, int first_gate, int gates, bool per_gate, const T* hs, const T* u, T* out) {
  const int64_t h = z.units, width = z.gates * h;
  GemmShape s{.m = z.batch, .n = per_gate ? h : gates * h, .k = h};
  s.ldb = width, s.ldc = width;
  if (per_gate) s.batch = gates, s.a_stride = z.batch * h, s.b_stride = h, s.c_stride = h;
  return Gemm(context(k), k.in_types[0].dtype, s, hs, u + first_gate * h, out + first_gate * h, kernel_label(k));
}

// Backward GEMM: the product with U ᵀ of dZ's gates first_gate .. first_gate + gates, dZ being
// (batch, G·units). Unscaled: out (batch, units) = beta·out + Σ_g dZ_g·U_gᵀ, one GEMM over
// gates·units; `per_gate`: out (gates, batch, units) gets each gate's product alone.
template <class T>
Gemm step_product_grad(const KernelInit& k, const Sizes& z, int first_gate, int gates, bool per_gate, const T* dz, const T* u, T* out,
                       double beta) {
  const int64_t h = z.units, width = z.gates * h;
  GemmShape s{.transpose_b = true, .m = z.batch, .n = h, .k = per_gate ? h : gates * h};
  s.lda = width, s.ldb = width, s.beta = beta;
  if (per_gate) s.batch = gates, s.a_stride = h, s.b_stride = h, s.c_stride = z.batch * h;
  return Gemm(context(k), k.in_types[0].dtype, s, dz + first_gate * h, u + first_gate * h, out, kernel_label(k));
}

// drecurrent_kernel (units, G·units) from dz_all (batch·steps, G·units), rows in processing
// order: with `rows` the reserve's h_{s−1} slot (row stride rows_ld), ONE GEMM rowsᵀ·dz_all; with
// per-gate rows (G, batch·steps, units) from kernel_grad_rows_kernel, one GEMM per gate as a batch.
template <class T>
Gemm kernel_product(const KernelInit& k, const Sizes& z, const T* rows, int64_t rows_ld, bool per_gate, const T* dz_all, T* du) {
  const int64_t h = z.units, width = z.gates * h;
  GemmShape s{.transpose_a = true, .m = h, .n = per_gate ? h : width, .k = z.batch * z.steps};
  if (per_gate) s.batch = z.gates, s.a_stride = z.batch * z.steps * h, s.ldb = width, s.b_stride = h, s.ldc = width, s.c_stride = h;
  else s.lda = rows_ld;
  return Gemm(context(k), k.in_types[0].dtype, s, rows, dz_all, du, kernel_label(k));
}

// Copies a (batch, units) state into reserve slot `slot` of processing step `s` (or back out).
template <class T>
void state_into_reserve(const Sizes& z, T* reserve, int64_t s, int slot, const T* state, cudaStream_t stream, const std::string& label) {
  const std::size_t row = std::size_t(z.units) * sizeof(T);
  check(cudaMemcpy2DAsync(reserve + s * z.slots * z.units + slot * z.units, std::size_t(z.steps * z.slots * z.units) * sizeof(T), state, row,
                          row, std::size_t(z.batch), cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpy2DAsync", label);
}

template <class T>
void copy(T* to, const T* from, int64_t count, cudaStream_t stream, const std::string& label) {
  check(cudaMemcpyAsync(to, from, std::size_t(count) * sizeof(T), cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync", label);
}

template <class T>
void zero(T* to, int64_t count, cudaStream_t stream, const std::string& label) {
  check(cudaMemsetAsync(to, 0, std::size_t(count) * sizeof(T), stream), "cudaMemsetAsync", label);
}

}  // namespace tandem::backend::cuda::recurrent
