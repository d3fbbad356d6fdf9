// Column sums of a (rows, cols) matrix in an order fixed by the shapes and the device's thread
// count: one block of rows per thread, each summed into its own partial row, the partials then
// added in block order. reduce_sum (bias gradients, batch means) and activation_bias_grad share it,
// so a fused and an unfused graph sum in the same order. The partial sums are kept in T's compute
// type (float32 for the 16-bit types) and rounded to T once, at the end.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/low_precision.h"

namespace tandem::backend::cpu {

template <class T>
class ColumnSums {
  using Acc = compute_t<T>;

 public:
  ColumnSums(Context& ctx, int64_t rows, int64_t cols)
      : ctx_(&ctx), rows_(rows), cols_(cols), partial_(std::make_shared<std::vector<Acc>>(static_cast<std::size_t>(ctx.threads() * cols))) {}

  // y[c] = Σ_r of what row_into(r, acc) adds into acc[c] (it may write other outputs too); acc is
  // a compute_t<T>*. Out is T, or float to keep a 16-bit type's float32 sums.
  template <class Out, class RowInto>
  void run(Out* y, RowInto&& row_into) const {
    const int threads = ctx_->threads();
    const int64_t block = (rows_ + threads - 1) / threads, cols = cols_, rows = rows_;
    Acc* part = partial_->data();
    // Small inputs run all blocks on this thread: same blocks, same order, no wake-up.
    ctx_->parallel_for(threads, rows * cols >= kElementwiseGrain ? 1 : threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        Acc* acc = part + t * cols;
        std::fill(acc, acc + cols, Acc(0));
        for (int64_t r = t * block; r < std::min(rows, (t + 1) * block); ++r) row_into(r, acc);
      }
    });
    for (int64_t c = 0; c < cols; ++c) {
      Acc sum = part[c];
      for (int t = 1; t < threads; ++t) sum += part[t * cols + c];
      y[c] = static_cast<Out>(sum);
    }
  }

 private:
  Context* ctx_;
  int64_t rows_, cols_;
  std::shared_ptr<std::vector<Acc>> partial_;  // the kernel's closure is copied; the scratch is shared
};

}  // namespace tandem::backend::cpu
