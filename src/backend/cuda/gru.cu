// gru and gru_grad on CUDA devices, both of Keras's variants (recurrent.cuh describes the loop).
// Gates (z, r, h); reserve slots [z, r, hh, a, h_{s−1}].
//
// With reset_after (Keras's default) one GEMM h_{s−1}·U gives all three gates' recurrent parts.
// Without it the h gate's recurrent part is (r·h_{s−1})·U_h, which needs r first: each step is
// then a GEMM for gates z and r, a small kernel for r and a = r·h_{s−1}, a GEMM a·U_h, and the
// step kernel. The gradient mirrors that: the step kernel's dZ_h gives da by a GEMM with U_hᵀ, a
// second kernel turns da into dZ_r and its share of dh, and then the GEMM of gates z and r follows.
#include <optional>

#include "backend/cuda/recurrent.cuh"

namespace tandem::backend::cuda {

namespace {
using recurrent::Sizes;

constexpr int kGates = 3, kSlots = 5;
enum Gate { kUpdate, kReset, kCandidate };  // z, r, h: the column blocks of xw and U
enum Slot { kZ, kR, kHH, kA, kHPrev };

// Gates whose recurrent part is h_{s−1}·U_g: all three with reset_after, else z and r.
__host__ __device__ constexpr int product_gates(bool reset_after) { return reset_after ? kGates : 2; }

// The recurrent_scale of gate g for element (b, j), or 1 without one.
template <class T>
__device__ T gate_scale(const Sizes& z, const T* scale, int g, int64_t b, int64_t j) {
  return scale ? scale[(b * kGates + g) * z.units + j] : T(1);
}

// Without reset_after, step s's first part: r and a = r·h_{s−1}·scale_h (zeros at a skipped step)
// into the reserve and into `a_operand` for the GEMM a·U_h. zbuf holds h_{s−1}·U for gates z and r.
template <class T>
__global__ void gru_reset_kernel(Sizes z, int64_t s, T* reserve, T* a_operand, const T* xw, const T* mask, const T* scale, const T* zbuf) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T* res = reserve + z.row(b, s) * kSlots * n;
    T r = T(0), a = T(0);
    if (recurrent::runs(z, mask, b, s)) {
      r = recurrent::activate(z.recurrent_activation, xw[z.row(b, z.time(s)) * kGates * n + kReset * n + j] + zbuf[b * kGates * n + kReset * n + j]);
      a = r * res[kHPrev * n + j] * gate_scale(z, scale, kCandidate, b, j);
    }
    res[kR * n + j] = r;
    res[kA * n + j] = a;
    a_operand[i] = a;
  }
}

// Step s, element (b, j) per thread. zbuf holds this step's recurrent products (batch, 3·units):
// h_{s−1}·U_g for every gate with reset_after; else for z and r, and a·U_h for h. Writes y, the
// reserve, h_s into step s + 1's h_{s−1} slot (or the output h) and the next GEMM's operand hs.
template <class T>
__global__ void gru_step_kernel(Sizes z, int64_t s, bool reset_after, T* y, T* h_out, T* reserve, T* hs, int copies, const T* xw,
                                const T* recurrent_bias, const T* mask, const T* scale, const T* zbuf) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T* res = reserve + z.row(b, s) * kSlots * n;
    const T h_prev = res[kHPrev * n + j];
    T h = h_prev, out = recurrent::skipped_output(z, y, b, s, j), gz = T(0), gr = T(0), hh = T(0), a = T(0);
    if (recurrent::runs(z, mask, b, s)) {
      const T* x = xw + z.row(b, z.time(s)) * kGates * n;
      const T* p = zbuf + b * kGates * n;
      if (reset_after) {
        const T* rb = recurrent_bias;
        gz = recurrent::activate(z.recurrent_activation, x[kUpdate * n + j] + (p[kUpdate * n + j] + rb[kUpdate * n + j]));
        gr = recurrent::activate(z.recurrent_activation, x[kReset * n + j] + (p[kReset * n + j] + rb[kReset * n + j]));
        a = p[kCandidate * n + j] + rb[kCandidate * n + j];
        hh = recurrent::activate(z.activation, x[kCandidate * n + j] + gr * a);
      } else {  // gru_reset_kernel wrote r and a; the recurrent bias is not used
        gz = recurrent::activate(z.recurrent_activation, x[kUpdate * n + j] + p[kUpdate * n + j]);
        gr = res[kR * n + j];
        a = res[kA * n + j];
        hh = recurrent::activate(z.activation, x[kCandidate * n + j] + p[kCandidate * n + j]);
      }
      h = gz * h_prev + (T(1) - gz) * hh;
      out = h;
    }
    res[kZ * n + j] = gz;
    res[kR * n + j] = gr;
    res[kHH * n + j] = hh;
    res[kA * n + j] = a;
    y[z.row(b, s) * n + j] = out;
    if (s + 1 < z.steps) {
      reserve[z.row(b, s + 1) * kSlots * n + kHPrev * n + j] = h;
      recurrent::write_recurrent_operand(z, hs, copies, scale, b, j, h);
    } else {
      h_out[i] = h;
    }
  }
}

// (xw, h0, recurrent_kernel, recurrent_bias, mask [, recurrent_scale]) -> (y, h, reserve)
template <class T>
KernelFn make_gru(const KernelInit& k) {
  const Shape& xs = k.in_types[0].shape;
  const Sizes z = recurrent::read_sizes(k, xs[0], xs[1], xs[2] / kGates, kGates, kSlots);
  const bool reset_after = k.node.attrs.b("reset_after");
  const T *xw = in<T>(k, 0), *h0 = in<T>(k, 1), *u = in<T>(k, 2), *rb = in<T>(k, 3), *mask = in<T>(k, 4);
  const T* scale = k.in.size() == 6 ? in<T>(k, 5) : nullptr;
  T *y = out<T>(k, 0), *h = out<T>(k, 1), *reserve = out<T>(k, 2);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  if (z.empty()) return [=] { recurrent::copy(h, h0, z.states(), st, label); };  // no step runs
  const int gates = product_gates(reset_after), copies = scale ? gates : 1;
  const recurrent::Scratch<T> scratch(ctx, {z.batch * kGates * z.units, copies * z.states(), reset_after ? 0 : z.states()}, label);
  T *zbuf = scratch.part(0), *hs = scratch.part(1), *a_operand = scratch.part(2);
  const Gemm gemm = recurrent::step_product<T>(k, z, 0, gates, scale != nullptr, hs, u, zbuf);
  // Without reset_after: (r·h_{s−1}·scale_h)·U_h into zbuf's h block.
  std::optional<Gemm> candidate_gemm;
  if (!reset_after) candidate_gemm.emplace(recurrent::step_product<T>(k, z, kCandidate, 1, false, a_operand, u, zbuf));
  const unsigned grid = blocks_for(z.states(), ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::state_into_reserve(z, reserve, 0, kHPrev, h0, st, label);
    recurrent::operand_from_state_kernel<<<grid, kBlock, 0, st>>>(z, hs, copies, scale, h0);
    check_launch(label);
    for (int64_t s = 0; s < z.steps; ++s) {
      gemm.run();
      if (!reset_after) {
        gru_reset_kernel<<<grid, kBlock, 0, st>>>(z, s, reserve, a_operand, xw, mask, scale, zbuf);
        check_launch(label);
        candidate_gemm->run();
      }
      gru_step_kernel<<<grid, kBlock, 0, st>>>(z, s, reset_after, y, h, reserve, hs, copies, xw, rb, mask, scale, zbuf);
      check_launch(label);
    }
  };
}

// Where one backward step writes the gradient of gate g: dz (batch, 3·units) for this step's
// GEMMs, dz_all (batch, steps, 3·units) in processing order for drecurrent_kernel, and dxw at
// time t. dz is the gradient of the gate's recurrent part, dx that of its xw part; they differ only
// for the h gate with reset_after (the recurrent part is multiplied by r there).
template <class T>
__device__ void write_gate_grad(const Sizes& z, int64_t s, int g, int64_t b, int64_t j, T* dxw, T* dz, T* dz_all, T dx, T d) {
  const int64_t n = z.units;
  dxw[z.row(b, z.time(s)) * kGates * n + g * n + j] = dx;
  dz_all[z.row(b, s) * kGates * n + g * n + j] = d;
  dz[b * kGates * n + g * n + j] = d;
}

// Step s backwards, element (b, j) per thread. dh_carry (plus the last GEMM's products in p when
// scaled) and dy_carry are the gradients reaching h_s and step s's output. Writes the gradients of
// gates z and h (and r with reset_after) and the carries for step s − 1.
template <class T>
__global__ void gru_grad_step_kernel(Sizes z, int64_t s, bool reset_after, T* dxw, T* dz, T* dz_all, T* dh_carry, T* dy_carry, const T* dy,
                                     const T* mask, const T* reserve, const T* scale, const T* p) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T dh = recurrent::carried_dh(z, dh_carry, p, scale, product_gates(reset_after), b, j);
    const T dout = dy[z.row(b, s) * n + j] + dy_carry[i];
    T dpz = T(0), dpr = T(0), dph = T(0), gr = T(0);
    if (recurrent::runs(z, mask, b, s)) {
      const T* res = reserve + z.row(b, s) * kSlots * n;
      const T gz = res[kZ * n + j], hh = res[kHH * n + j], h_prev = res[kHPrev * n + j];
      gr = res[kR * n + j];
      dh += dout;
      dpz = recurrent::activate_grad(z.recurrent_activation, dh * (h_prev - hh), gz);
      dph = recurrent::activate_grad(z.activation, dh * (T(1) - gz), hh);
      if (reset_after) dpr = recurrent::activate_grad(z.recurrent_activation, dph * res[kA * n + j], gr);
      dh_carry[i] = dh * gz;  // the GEMMs add the rest of dh_{s−1}
      dy_carry[i] = T(0);
    } else {  // h carries over unchanged; y_s repeated y_{s−1} unless it was zero
      dh_carry[i] = dh;
      dy_carry[i] = z.zero_output ? T(0) : dout;
    }
    write_gate_grad(z, s, kUpdate, b, j, dxw, dz, dz_all, dpz, dpz);
    if (reset_after) {
      write_gate_grad(z, s, kReset, b, j, dxw, dz, dz_all, dpr, dpr);
      write_gate_grad(z, s, kCandidate, b, j, dxw, dz, dz_all, dph, dph * gr);
    } else {  // gru_grad_reset_kernel writes r's, from da = dZ_h·U_hᵀ
      write_gate_grad(z, s, kCandidate, b, j, dxw, dz, dz_all, dph, dph);
    }
  }
}

// Without reset_after, step s's second part: from da (the gradient of a = r·h_{s−1}·scale_h, the
// GEMM dZ_h·U_hᵀ), r's gradient and a's share of dh_{s−1}.
template <class T>
__global__ void gru_grad_reset_kernel(Sizes z, int64_t s, T* dxw, T* dz, T* dz_all, T* dh_carry, const T* da, const T* mask, const T* reserve,
                                      const T* scale) {
  const int64_t n = z.units;
  TANDEM_CUDA_LOOP(i, z.states()) {
    const int64_t b = i / n, j = i % n;
    T dpr = T(0);
    if (recurrent::runs(z, mask, b, s)) {
      const T* res = reserve + z.row(b, s) * kSlots * n;
      const T gr = res[kR * n + j], h_prev = res[kHPrev * n + j], sh = gate_scale(z, scale, kCandidate, b, j);
      dpr = recurrent::activate_grad(z.recurrent_activation, da[i] * h_prev * sh, gr);
      dh_carry[i] += da[i] * gr * sh;
    }
    write_gate_grad(z, s, kReset, b, j, dxw, dz, dz_all, dpr, dpr);
  }
}

// sums[c] = Σ_r m[r, c], rows in order: drecurrent_bias, deterministically.
template <class T>
__global__ void column_sums_kernel(T* sums, const T* m, int64_t rows, int64_t cols) {
  TANDEM_CUDA_LOOP(c, cols) {
    T total = T(0);
    for (int64_t r = 0; r < rows; ++r) total += m[r * cols + c];
    sums[c] = total;
  }
}

// (dy, dh, h0, recurrent_kernel, recurrent_bias, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, drecurrent_kernel, drecurrent_bias)
template <class T>
KernelFn make_gru_grad(const KernelInit& k) {
  const Shape& rs = k.in_types[6].shape;
  const Sizes z = recurrent::read_sizes(k, rs[0], rs[1], rs[2] / kSlots, kGates, kSlots);
  const bool reset_after = k.node.attrs.b("reset_after");
  const T *dy = in<T>(k, 0), *dh = in<T>(k, 1), *u = in<T>(k, 3), *mask = in<T>(k, 5), *reserve = in<T>(k, 6);
  const T* scale = k.in.size() == 8 ? in<T>(k, 7) : nullptr;
  T *dxw = out<T>(k, 0), *dh0 = out<T>(k, 1), *du = out<T>(k, 2), *drb = out<T>(k, 3);
  const Context& ctx = context(k);
  cudaStream_t st = ctx.stream;
  const std::string label = kernel_label(k);
  const int64_t n = z.units, width = kGates * n;
  if (z.empty()) {  // no step ran: dh passes through, U and the bias had no effect
    return [=] {
      recurrent::copy(dh0, dh, z.states(), st, label);
      recurrent::zero(du, n * width, st, label);
      recurrent::zero(drb, width, st, label);
    };
  }
  const bool scaled = scale != nullptr;
  const int gates = product_gates(reset_after);
  // drecurrent_kernel takes the reserve's h_{s−1} slot as its operand only where every gate's is
  // h_{s−1} itself; otherwise per-gate rows (scaled h_{s−1}, or a for the h gate).
  const bool per_gate_rows = scaled || !reset_after;
  const int64_t rows = z.batch * z.steps;
  const recurrent::Scratch<T> scratch(ctx,
                                      {z.states(), z.states(), z.batch * width, rows * width, scaled ? gates * z.states() : 0,
                                       reset_after ? 0 : z.states(), per_gate_rows ? kGates * rows * n : 0},
                                      label);
  T *dh_carry = scratch.part(0), *dy_carry = scratch.part(1), *dz = scratch.part(2), *dz_all = scratch.part(3), *p = scratch.part(4),
    *da = scratch.part(5), *gate_rows = scratch.part(6);
  // Gates z and r (and h with reset_after): unscaled, dZ·Uᵀ is added into dh_carry; scaled, each
  // gate's product goes to p, which the next step's kernel scales and adds.
  const Gemm step_gemm = recurrent::step_product_grad<T>(k, z, 0, gates, scaled, dz, u, scaled ? p : dh_carry, scaled ? 0.0 : 1.0);
  // Without reset_after: da = dZ_h·U_hᵀ.
  std::optional<Gemm> candidate_gemm;
  if (!reset_after) candidate_gemm.emplace(recurrent::step_product_grad<T>(k, z, kCandidate, 1, false, dz, u, da, 0.0));
  const Gemm kernel_gemm =
      recurrent::kernel_product<T>(k, z, per_gate_rows ? gate_rows : reserve + kHPrev * n, kSlots * n, per_gate_rows, dz_all, du);
  const unsigned grid = blocks_for(z.states(), ctx), rows_grid = blocks_for(kGates * rows * n, ctx), bias_grid = blocks_for(width, ctx);
  return [=] {
    (void)scratch;  // held for the closure's lifetime
    recurrent::copy(dh_carry, dh, z.states(), st, label);
    recurrent::zero(dy_carry, z.states(), st, label);
    if (scaled) recurrent::zero(p, gates * z.states(), st, label);
    for (int64_t s = z.steps - 1; s >= 0; --s) {
      gru_grad_step_kernel<<<grid, kBlock, 0, st>>>(z, s, reset_after, dxw, dz, dz_all, dh_carry, dy_carry, dy, mask, reserve, scale, p);
      check_launch(label);
      if (!reset_after) {
        candidate_gemm->run();
        gru_grad_reset_kernel<<<grid, kBlock, 0, st>>>(z, s, dxw, dz, dz_all, dh_carry, da, mask, reserve, scale);
        check_launch(label);
      }
      step_gemm.run();
    }
    recurrent::final_dh_kernel<<<grid, kBlock, 0, st>>>(z, dh0, dh_carry, p, scale, gates);
    check_launch(label);
    if (per_gate_rows) {
      recurrent::kernel_grad_rows_kernel<<<rows_grid, kBlock, 0, st>>>(z, gate_rows, reserve, scale, kHPrev, reset_after ? -1 : kCandidate, kA);
      check_launch(label);
    }
    kernel_gemm.run();
    if (reset_after) {
      column_sums_kernel<<<bias_grid, kBlock, 0, st>>>(drb, dz_all, rows, width);
      check_launch(label);
    } else {
      recurrent::zero(drb, width, st, label);
    }
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("gru", make_gru);
REGISTER_CUDA_FLOAT_KERNEL("gru_grad", make_gru_grad);

}  // namespace tandem::backend::cuda
