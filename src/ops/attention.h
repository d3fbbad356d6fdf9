// Ops for embeddings, merging and attention: table lookups, concatenation and slicing, axis
// permutations, batched matrix products and causal masking.
#pragma once

#include <string>
#include <vector>

#include "graph/op_registry.h"

namespace tandem::ops {

// Rows of `table` (V, D) picked by integer `ids` (any shape, int32 or int64): output ids.shape + (D).
// An id outside [0, V) makes the kernel throw tandem::ValueError when the step runs; the message
// starts with `owner` (e.g. `Embedding "embedding"`), or names the op when `owner` is empty.
Value gather(Graph& g, Value table, Value ids, const std::string& owner = "");
// The adjoint of gather: a zeroed (rows, D) tensor into which each row of `updates`
// (ids.shape + (D)) is added at its id. Repeated ids accumulate.
Value scatter_add(Graph& g, Value updates, Value ids, int64_t rows, const std::string& owner = "");

// Joins tensors of equal rank and dtype along `axis`; every other dimension must match.
Value concat(Graph& g, const std::vector<Value>& xs, int64_t axis);
// x with the order along `axis` reversed.
Value reverse(Graph& g, Value x, int64_t axis);
// The part [begin, begin + size) of x along `axis`.
Value slice(Graph& g, Value x, int64_t axis, int64_t begin, int64_t size);

// Permutes axes: output dim i is input dim perm[i] (NumPy's transpose).
Value transpose(Graph& g, Value x, std::vector<int64_t> perm);

// a (..., M, K) · b (..., K, N) -> (..., M, N) with identical leading (batch) dimensions; the
// transpose flags swap the last two axes of an operand. Rank 2 is a plain matrix product.
Value batch_matmul(Graph& g, Value a, Value b, bool transpose_a = false, bool transpose_b = false);

// The value that masked attention scores take; exp() of it is exactly 0 in float32 and float64.
constexpr double kMaskedScore = -1e9;
// On scores (..., T, S): query i may see key j only when j <= i + offset; every other position is
// set (not added) to kMaskedScore, and its gradient is 0. offset 0 is Keras's use_causal_mask (the
// first query sees the first key); offset S − T aligns the last query with the last key (a block of
// new queries at the end of a longer key sequence).
Value causal_mask(Graph& g, Value scores, int64_t offset = 0);

}  // namespace tandem::ops
