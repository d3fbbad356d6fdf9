// The fusion pass: rewrites one device's graph so that chains of ops that each stream a tensor
// through memory become one op that does it in a single pass. It runs on every program after
// lowering (compile/order.cpp's single_program), so communication is already explicit: a partial
// sum that an all-reduce completes never fuses with the bias added after it. It is
// backend-neutral: every backend has a kernel for each fused op. It runs after the lowering,
// which lays out every mesh axis in one pass: fused ops have no layout rule, so a graph fused
// before it would run them whole on every device. The patterns, each only where
// the intermediate values have no other reader and are not fetched:
//   matmul → bias_add [→ relu | sigmoid | tanh]    fused_matmul (the bias and activation in the GEMM's epilogue)
//   conv2d → bias_add [→ relu | sigmoid | tanh]    fused_conv2d
//   max_pool2d_grad(x, dy) → relu_grad(·, x)       max_pool2d_grad with attr relu
//   relu_grad | sigmoid_grad | tanh_grad → its column sum (the bias gradient)
//                                                  activation_bias_grad (both outputs in one pass)
//   the same in 16 bits → cast to float32 → column sum (a float32 bias under mixed precision)
//                                                  activation_bias_grad with output_dtype float32
// GELU does not fuse: its gradient reads the pre-activation, which the fused op would not keep.
// The replaced nodes stay in the graph unread; execution_order leaves them out.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tandem::compile {

// Rewrites `g` in place; `fetches` are redirected where a fetched value moved to a fused node.
void fuse(graph::Graph& g, std::vector<graph::Value>& fetches);

// False where the environment sets TANDEM_FUSION=0: programs are then lowered unfused (to compare
// the two, or to rule the pass out when looking for a bug).
bool fusion_enabled();

}  // namespace tandem::compile
