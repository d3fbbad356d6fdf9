// gather (table rows by id) and scatter_add (its adjoint). Ids come from data, so they are checked
// on every run, before any thread starts: an id out of range throws tandem::ValueError from the
// step, on the calling thread, with nothing written.
#include <algorithm>
#include <cstring>
#include <string>

#include "backend/cpu/kernel_util.h"
#include "tandem/errors.h"

namespace tandem::backend::cpu {

namespace {
struct Ids {
  const void* data;
  bool wide;  // int64 (else int32)
  int64_t count;
  int64_t at(int64_t i) const {
    return wide ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
  }
};

Ids ids_of(const KernelInit& k) {
  const TensorType& t = k.in_types[1];
  return {k.in[1], t.dtype == DType::I64, numel(t)};
}

// The error is built only when an id is bad; the check itself is one compare per id.
[[noreturn]] void out_of_range(const std::string& owner, const char* op, const Ids& ids, int64_t rows) {
  for (int64_t i = 0; i < ids.count; ++i) {
    const int64_t id = ids.at(i);
    if (id < 0 || id >= rows)
      throw ValueError((owner.empty() ? std::string(op) : owner) + ": index " + std::to_string(id) + " at position " +
                       std::to_string(i) + " is out of range [0, " + std::to_string(rows) + ")");
  }
  throw ValueError(std::string(op) + ": index out of range");
}

void check(const std::string& owner, const char* op, const Ids& ids, int64_t rows) {
  bool ok = true;
  for (int64_t i = 0; i < ids.count; ++i) {
    const int64_t id = ids.at(i);
    ok &= id >= 0 && id < rows;
  }
  if (!ok) out_of_range(owner, op, ids, rows);
}

template <class T>
KernelFn make_gather(const KernelInit& k) {
  const T* table = in<T>(k, 0);
  const int64_t block = k.in_types[0].shape[0], d = k.in_types[0].shape[1];
  // A block of a table split by rows: rows [first, first + block) of `rows`; other ids give zeros.
  const int64_t first = k.node.attrs.i("first", 0), rows = k.node.attrs.i("vocab", block);
  const Ids ids = ids_of(k);
  T* y = out<T>(k);
  const std::string owner = k.node.attrs.s("owner");
  Context* ctx = &context(k);
  return [=] {
    check(owner, "gather", ids, rows);
    ctx->parallel_for(ids.count, kElementwiseGrain / (d + 1) + 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t row = ids.at(i) - first;
        if (row >= 0 && row < block) std::memcpy(y + i * d, table + row * d, static_cast<std::size_t>(d) * sizeof(T));
        else std::fill(y + i * d, y + (i + 1) * d, T(0));
      }
    });
  };
}

// Each thread owns a range of feature columns and adds every update into them in id order, so
// the sums are race-free and their order (and result) does not depend on the thread count.
template <class T>
KernelFn make_scatter_add(const KernelInit& k) {
  const T* updates = in<T>(k, 0);
  const Ids ids = ids_of(k);
  const int64_t rows = k.out_type().shape[0], d = k.out_type().shape[1];
  T* y = out<T>(k);
  const std::string owner = k.node.attrs.s("owner");
  Context* ctx = &context(k);
  return [=] {
    check(owner, "scatter_add", ids, rows);
    std::fill(y, y + rows * d, T(0));
    ctx->parallel_for(d, std::max<int64_t>(1, kElementwiseGrain / (ids.count + 1)), [&](int64_t c0, int64_t c1) {
      for (int64_t i = 0; i < ids.count; ++i) {
        T* dst = y + ids.at(i) * d;
        const T* src = updates + i * d;
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("gather", make_gather);
REGISTER_CPU_FLOAT_KERNEL("scatter_add", make_scatter_add);

}  // namespace tandem::backend::cpu
