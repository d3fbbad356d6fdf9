// What the CPU kernels of the recurrent ops (lstm.cpp, gru.cpp, simple_rnn.cpp) share: the time
// loop's index mapping and mask test, the activations with their derivatives, the per-step
// recurrent product h·U (with the per-gate recurrent_scale), and the one big GEMM that gives dU at
// the end of the backward pass. ops/recurrent.h defines the ops and their reserve layouts.
//
// Layouts used throughout: a step's gate values (b, g, j) live at b·row + g·gate + j, where the
// strides depend on whether the product was one GEMM (row = G·H, gate = H) or one GEMM per gate
// (row = H, gate = B·H). Every parallel loop writes disjoint rows and every sum runs in a fixed
// order, so the results do not depend on the number of threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_util.h"
#include "backend/fused_activation.h"

namespace tandem::backend::cpu::recurrent {

// The sizes and attributes of one node. Processing step s reads time t(s).
struct Loop {
  int64_t batch = 0, steps = 0, units = 0;
  bool go_backwards = false, zero_output_for_mask = false;
  Activation activation = Activation::Tanh, recurrent_activation = Activation::Sigmoid;

  Loop(const KernelInit& k, const TensorType& xw, int gates)
      : batch(xw.shape[0]), steps(xw.shape[1]), units(xw.shape[2] / gates),
        go_backwards(k.node.attrs.b("go_backwards")), zero_output_for_mask(k.node.attrs.b("zero_output_for_mask")),
        activation(parse_activation(k.node.attrs.s("activation"))),
        recurrent_activation(gates > 1 ? parse_activation(k.node.attrs.s("recurrent_activation")) : Activation::Sigmoid) {}
  int64_t time(int64_t s) const { return go_backwards ? steps - 1 - s : s; }
  // Keras casts the mask to bool: any non-zero value runs the step.
  template <class T>
  bool runs(const T* mask, int64_t b, int64_t s) const { return mask[b * steps + time(s)] != T(0); }
};

// --- Activations: the forward functor from with_activation, and its derivative taken on the
// forward's output y (all four are functions of y), linear included, which fused_activation.h's
// gradient dispatch refuses.
template <class T> T derivative(Identity, T dy, T) { return dy; }
template <class T> T derivative(Relu, T dy, T y) { return ReluGrad{}(dy, y); }
template <class T> T derivative(Sigmoid, T dy, T y) { return SigmoidGrad{}(dy, y); }
template <class T> T derivative(Tanh, T dy, T y) { return TanhGrad{}(dy, y); }

// f(activation, recurrent_activation) with both functors, so each step loop is compiled for its pair.
template <class F>
void with_activations(const Loop& l, F&& f) {
  with_activation(l.activation, [&](auto act) { with_activation(l.recurrent_activation, [&](auto ract) { f(act, ract); }); });
}

// Runs f(b) for every batch row on the device's threads; `per_row` elements of transcendental
// work each, so a range is worth a thread at a few thousand elements, not kElementwiseGrain.
template <class F>
void for_rows(Context& ctx, int64_t batch, int64_t per_row, const F& f) {
  constexpr int64_t kStepGrain = 1 << 12;
  ctx.parallel_for(batch, std::max<int64_t>(1, kStepGrain / std::max<int64_t>(1, per_row)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b);
  });
}

// The recurrent product of `gates` consecutive gates starting at gate g0 of U (units, G·units):
// out(b, g, j) = Σ_k h[b, k]·s[b, g0 + g, k]·U[k, (g0 + g)·H + j], s = recurrent_scale or 1, and
// its transpose for the backward pass. Without a scale it is one GEMM on U's columns; with one,
// one GEMM per gate on h scaled by that gate's mask (Keras's recurrent dropout). The GEMM is
// row-major packed, so U's columns are copied into packed blocks by prepare() once per run.
template <class T>
class Recurrence {
 public:
  // scale: recurrent_scale (batch, scale_gates, units) or null.
  Recurrence(int64_t batch, int64_t units, int all_gates, int g0, int gates, const T* scale)
      : batch_(batch), units_(units), all_gates_(all_gates), g0_(g0), gates_(gates), scale_(scale),
        packed_(scale || gates != all_gates ? static_cast<std::size_t>(units * gates * units) : 0),
        scaled_h_(scale ? static_cast<std::size_t>(batch * units) : 0) {}

  // Strides of out(b, g, j) and of the backward input dz(b, g, j) (see the top of the file).
  int64_t row_stride() const { return scale_ ? units_ : gates_ * units_; }
  int64_t gate_stride() const { return scale_ ? batch_ * units_ : units_; }
  int64_t size() const { return batch_ * gates_ * units_; }
  int gates() const { return gates_; }

  // Once per run (U may change between runs): U's columns for these gates, packed.
  void prepare(const T* u) {
    const int64_t H = units_, ld = all_gates_ * H;
    if (packed_.empty()) {
      u_ = u;  // all gates, no scale: U itself
      return;
    }
    T* p = packed_.data();
    for (int g = 0; g < gates_; ++g)
      for (int64_t k = 0; k < H; ++k) {
        const T* src = u + k * ld + (g0_ + g) * H;
        // With a scale, one (H, H) block per gate; without, one (H, gates·H) block.
        T* dst = scale_ ? p + (g * H + k) * H : p + k * gates_ * H + g * H;
        std::copy(src, src + H, dst);
      }
    u_ = p;
  }

  // out = the product of h_{s−1} (batch, units) for these gates, laid out as row_stride/gate_stride say.
  void forward(Context& ctx, const T* h, T* out) {
    const int64_t B = batch_, H = units_;
    if (!scale_) {
      gemm(ctx, false, false, B, gates_ * H, H, h, u_, out);
      return;
    }
    for (int g = 0; g < gates_; ++g) {
      scale_rows(ctx, h, g, scaled_h_.data());
      gemm(ctx, false, false, B, H, H, scaled_h_.data(), u_ + g * H * H, out + g * B * H);
    }
  }

  // dh += the transpose applied to dz (laid out as forward's out): Σ_g (dz_g·U_gᵀ)∘s_g.
  void backward(Context& ctx, const T* dz, T* dh) {
    const int64_t B = batch_, H = units_;
    if (!scale_) {
      gemm(ctx, false, true, B, H, gates_ * H, dz, u_, dh, T(1));
      return;
    }
    T* tmp = scaled_h_.data();
    for (int g = 0; g < gates_; ++g) {
      gemm(ctx, false, true, B, H, H, dz + g * B * H, u_ + g * H * H, tmp);
      const T* s = scale_ + (g0_ + g) * H;
      for_rows(ctx, B, H, [&](int64_t b) {
        for (int64_t k = 0; k < H; ++k) dh[b * H + k] += tmp[b * H + k] * s[b * all_gates_ * H + k];
      });
    }
  }

 private:
  void scale_rows(Context& ctx, const T* h, int g, T* dst) {
    const int64_t H = units_;
    const T* s = scale_ + (g0_ + g) * H;
    for_rows(ctx, batch_, H, [&](int64_t b) {
      for (int64_t k = 0; k < H; ++k) dst[b * H + k] = h[b * H + k] * s[b * all_gates_ * H + k];
    });
  }

  int64_t batch_, units_;
  int all_gates_, g0_, gates_;
  const T* scale_;
  std::vector<T> packed_, scaled_h_;
  const T* u_ = nullptr;
};

// dU (units, G·units) from all steps at once, in the backward pass's end:
//   dU[:, g] = Σ_{b, s} X_g(b, s)ᵀ·dR_g(b, t(s)),
// dR (batch·steps, G·units) the gradient of the recurrent product in time order (row b·T + t),
// X_g(b, s) the (units) row of reserve slot slot[g] at (b, s), times recurrent_scale[b, g] where a
// scale is given and scaled[g]. Where every gate has the same unscaled rows, one GEMM
// (H, B·T)·(B·T, G·H) gives dU; otherwise one per gate on packed copies. Scratch is reused between runs.
template <class T>
class KernelGrad {
 public:
  KernelGrad(const Loop& l, int gates, int reserve_slots, std::vector<int> slot, const T* scale, std::vector<bool> scaled)
      : l_(l), gates_(gates), reserve_slots_(reserve_slots), slot_(std::move(slot)), scale_(scale), scaled_(std::move(scaled)) {
    const auto rows = static_cast<std::size_t>(l.batch * l.steps * l.units);
    x_.resize(rows);
    if (!uniform()) d_.resize(rows), du_.resize(static_cast<std::size_t>(l.units * l.units));
  }

  void operator()(Context& ctx, const T* reserve, const T* dr, T* du) {
    const int64_t B = l_.batch, T_ = l_.steps, H = l_.units, G = gates_, rows = B * T_;
    if (rows == 0) {  // no steps: no product to sum (a GEMM with k = 0 is not relied on)
      std::fill(du, du + H * G * H, T(0));
      return;
    }
    if (uniform()) {
      gather_x(ctx, reserve, 0);
      gemm(ctx, true, false, H, G * H, rows, x_.data(), dr, du);
      return;
    }
    for (int g = 0; g < gates_; ++g) {
      gather_x(ctx, reserve, g);
      T* d = d_.data();
      for_rows(ctx, rows, H, [&](int64_t r) { std::copy(dr + r * G * H + g * H, dr + r * G * H + (g + 1) * H, d + r * H); });
      gemm(ctx, true, false, H, H, rows, x_.data(), d, du_.data());
      for (int64_t k = 0; k < H; ++k) std::copy(du_.data() + k * H, du_.data() + (k + 1) * H, du + k * G * H + g * H);
    }
  }

 private:
  bool uniform() const {
    for (int g = 0; g < gates_; ++g)
      if (slot_[static_cast<std::size_t>(g)] != slot_[0] || (scale_ && scaled_[static_cast<std::size_t>(g)])) return false;
    return true;
  }

  // x_ row b·T + t(s) = X_g(b, s): the reserve's rows are in processing order, dR's in time order.
  void gather_x(Context& ctx, const T* reserve, int g) {
    const int64_t T_ = l_.steps, H = l_.units, W = reserve_slots_ * H;
    const int64_t off = slot_[static_cast<std::size_t>(g)] * H;
    const T* s = scale_ && scaled_[static_cast<std::size_t>(g)] ? scale_ + g * H : nullptr;
    T* x = x_.data();
    for_rows(ctx, l_.batch, T_ * H, [&](int64_t b) {
      for (int64_t step = 0; step < T_; ++step) {
        const T* src = reserve + (b * T_ + step) * W + off;
        T* dst = x + (b * T_ + l_.time(step)) * H;
        if (s)
          for (int64_t k = 0; k < H; ++k) dst[k] = src[k] * s[b * gates_ * H + k];
        else
          std::copy(src, src + H, dst);
      }
    });
  }

  Loop l_;
  int gates_, reserve_slots_;
  std::vector<int> slot_;
  const T* scale_;
  std::vector<bool> scaled_;
  std::vector<T> x_, d_, du_;
};

}  // namespace tandem::backend::cpu::recurrent
