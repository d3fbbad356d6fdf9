// The recurrent ops: one op runs a whole sequence through an LSTM, GRU or simple RNN cell (one
// kernel looping over time), and one gradient op runs it backwards (backpropagation through time).
// The input projection x·kernel + bias is not part of them: the layer computes it for every step
// at once as one ordinary matmul (the big GEMM), so the op's first input is
//
//   xw      (batch, steps, gates·units)   x_t·kernel + bias, gates in Keras's order
//
// and the op adds h_{s−1}·recurrent_kernel at each step. Keras's semantics throughout:
// - Processing step s reads time t = s, or t = steps − 1 − s with attr go_backwards; the sequence
//   output y is in processing order (Keras returns a backward layer's sequence reversed).
// - mask (batch, steps) in the input's float dtype, indexed by time: a non-zero value runs the step,
//   0 skips it — the states carry over unchanged and y at that step is the previous output (or 0
//   with attr zero_output_for_mask). The previous output before the first step is 0, as in
//   Keras's TensorFlow and PyTorch backends; its JAX backend gives h0 there, which differs only
//   for a sequence that starts with masked steps from a non-zero initial state.
// - An optional last input recurrent_scale (batch, gates, units) multiplies h_{s−1} where it
//   enters gate g's recurrent product (Keras's recurrent dropout, a mask per gate that is the same
//   at every step); the carried state itself is not scaled.
// - attrs activation and recurrent_activation: "tanh", "sigmoid", "relu" or "linear".
//
// Each forward op also returns `reserve` (batch, steps, k·units), indexed by processing step,
// which the gradient op reads; its layout is part of the op's definition (CPU and CUDA kernels
// write the same), listed per op below. At a skipped step the kernels write the carried states
// into their slots and zeros into the others.
#pragma once

#include "graph/op_registry.h"

namespace tandem::ops {

struct RecurrentAttrs {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool go_backwards = false;
  bool zero_output_for_mask = false;
};

// LSTM, gates (i, f, c, o). inputs (xw, h0, c0, recurrent_kernel (units, 4·units), mask
// [, recurrent_scale (batch, 4, units)]) -> (y (batch, steps, units), h, c, reserve).
// Per step: z = xw_t + h_{s−1}·U; i, f, o = recurrent_activation(z_i, z_f, z_o);
// g = activation(z_c); c_s = f·c_{s−1} + i·g; h_s = o·activation(c_s).
// reserve (batch, steps, 6·units): [i, f, g, o, c_s, h_{s−1}].
// lstm_grad: (dy, dh, dc, h0, c0, recurrent_kernel, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, dc0, drecurrent_kernel); dh and dc are the last states' gradients.
struct LstmResult {
  Value y, h, c;
};
LstmResult lstm(Graph& g, Value xw, Value h0, Value c0, Value recurrent_kernel, Value mask, Value recurrent_scale,
                const RecurrentAttrs& attrs);

// GRU, gates (z, r, h), Keras's two variants. inputs (xw, h0, recurrent_kernel (units, 3·units),
// recurrent_bias (3·units), mask [, recurrent_scale (batch, 3, units)]) -> (y, h, reserve).
// Per step, with inner = h_{s−1}·U + recurrent_bias: z = recurrent_activation(xw_z + inner_z),
// r = recurrent_activation(xw_r + inner_r); with attr reset_after (Keras's default)
// hh = activation(xw_h + r·inner_h), else hh = activation(xw_h + (r·h_{s−1})·U_h) and the
// recurrent bias is not used; h_s = z·h_{s−1} + (1 − z)·hh.
// reserve (batch, steps, 5·units): [z, r, hh, a, h_{s−1}] with a = inner_h when reset_after,
// else r·h_{s−1} (scaled by the h gate's recurrent_scale when there is one).
// gru_grad: (dy, dh, h0, recurrent_kernel, recurrent_bias, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, drecurrent_kernel, drecurrent_bias).
struct GruResult {
  Value y, h;
};
GruResult gru(Graph& g, Value xw, Value h0, Value recurrent_kernel, Value recurrent_bias, Value mask, Value recurrent_scale,
              const RecurrentAttrs& attrs, bool reset_after);

// Simple RNN. inputs (xw, h0, recurrent_kernel (units, units), mask [, recurrent_scale
// (batch, 1, units)]) -> (y, h, reserve). Per step h_s = activation(xw_t + h_{s−1}·U).
// reserve (batch, steps, 2·units): [h_s, h_{s−1}].
// simple_rnn_grad: (dy, dh, h0, recurrent_kernel, mask, reserve [, recurrent_scale])
//   -> (dxw, dh0, drecurrent_kernel).
struct SimpleRnnResult {
  Value y, h;
};
SimpleRnnResult simple_rnn(Graph& g, Value xw, Value h0, Value recurrent_kernel, Value mask, Value recurrent_scale,
                           const RecurrentAttrs& attrs);

namespace recurrent_detail {
// Checks the inputs the three ops share and returns (batch, steps, units); `gates` is 4, 3 or 1.
// `op` names the op in errors. recurrent_scale may be absent (nullptr).
struct Sizes {
  int64_t batch, steps, units;
};
Sizes check(const Attrs& a, const std::vector<TensorType>& in, int gates, int mask_input, const TensorType* recurrent_scale,
            const char* op);
Attrs attrs(const RecurrentAttrs& a);
// The gradient of output `i`, or zeros of its type where it does not reach the loss.
Value dy_or_zeros(GradContext& c, int i);
}  // namespace recurrent_detail

}  // namespace tandem::ops
