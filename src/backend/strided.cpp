#include "backend/strided.h"

#include <algorithm>

#include "tandem/errors.h"

namespace tandem::backend {

namespace {
// Row-major strides of `dims`, with 0 where `varies` is false.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims, const std::vector<bool>& varies) {
  std::vector<int64_t> s(dims.size(), 0);
  int64_t acc = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    s[i] = varies[i] ? acc : 0;
    if (varies[i]) acc *= dims[i];
  }
  return s;
}
}  // namespace

BroadcastPlan::BroadcastPlan(const Shape& out, const Shape& a, const Shape& b) {
  const int r = out.rank();
  // Per output axis: does a (b) vary along it? Size-1 axes are dropped; like axes are merged.
  std::vector<bool> va, vb;
  for (int i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    const int ia = a.rank() - r + i, ib = b.rank() - r + i;
    const bool xa = ia >= 0 && a[ia] != 1, xb = ib >= 0 && b[ib] != 1;
    if (!dims.empty() && va.back() == xa && vb.back() == xb) {
      dims.back() *= out[i];
    } else {
      dims.push_back(out[i]);
      va.push_back(xa);
      vb.push_back(xb);
    }
  }
  if (dims.size() > kMaxRank) throw Error("broadcast: more than " + std::to_string(kMaxRank) + " distinct axes in " + out.str());
  a_strides = strides_of(dims, va);
  b_strides = strides_of(dims, vb);
}

ReducePlan::ReducePlan(const Shape& in, const std::vector<int64_t>& axes) {
  std::vector<bool> kept;
  for (int i = 0; i < in.rank(); ++i) {
    in_count *= in[i];
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out_count *= in[i];
    if (in[i] == 1) continue;
    if (!dims.empty() && kept.back() == !reduced) {
      dims.back() *= in[i];
    } else {
      dims.push_back(in[i]);
      kept.push_back(!reduced);
    }
  }
  if (dims.size() > kMaxRank) throw Error("reduce: more than " + std::to_string(kMaxRank) + " distinct axes in " + in.str());
  out_strides = strides_of(dims, kept);
}

TransposePlan::TransposePlan(const Shape& is, const std::vector<int64_t>& perm) {
  const int r = is.rank();
  std::vector<int64_t> in_stride(static_cast<std::size_t>(r), 1);
  for (int i = r - 2; i >= 0; --i) in_stride[static_cast<std::size_t>(i)] = in_stride[static_cast<std::size_t>(i + 1)] * is[i + 1];
  for (int i = 0; i < r; ++i) {
    const int p = static_cast<int>(perm[static_cast<std::size_t>(i)]);
    if (is[p] == 1) continue;
    const int64_t st = in_stride[static_cast<std::size_t>(p)];
    if (!dims.empty() && strides.back() == st * is[p]) {
      dims.back() *= is[p];
      strides.back() = st;
    } else {
      dims.push_back(is[p]);
      strides.push_back(st);
    }
  }
  if (dims.empty()) dims = {1}, strides = {1};
}

}  // namespace tandem::backend
