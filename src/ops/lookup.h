// integer_lookup: integer keys mapped to integer values by a table held in the op's attributes
// (IntegerLookup's vocabulary, forwards and inverted).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/op_registry.h"

namespace tandem::ops {

// What each input id becomes, in this order of precedence:
//   has_mask and id == mask_key          -> mask_value
//   id == keys[i] (keys sorted, unique)  -> values[i]
//   buckets > 1                          -> bucket_start + floormod(id, buckets)
//   otherwise                            -> missing
struct IntegerTable {
  std::vector<int64_t> keys, values;
  int64_t missing = -1;
  int64_t buckets = 0, bucket_start = 0;
  bool has_mask = false;
  int64_t mask_key = 0, mask_value = 0;
};

// ids (int32 or int64, any shape) -> int64 of the same shape. No gradient.
Value integer_lookup(Graph& g, Value ids, const IntegerTable& table);
// The table an op's attributes hold (for kernels).
IntegerTable integer_table(const Attrs& a);

// One id looked up (host and device code share it): binary search over keys[0, n).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline int64_t lookup_one(int64_t id, const int64_t* keys, const int64_t* values, int64_t n, int64_t missing, int64_t buckets,
                          int64_t bucket_start, bool has_mask, int64_t mask_key, int64_t mask_value) {
  if (has_mask && id == mask_key) return mask_value;
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && keys[lo] == id) return values[lo];
  if (buckets > 1) return bucket_start + ((id % buckets) + buckets) % buckets;
  return missing;
}

}  // namespace tandem::ops
