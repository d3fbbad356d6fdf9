// integer_lookup on the CPU: a binary search per id over the op's sorted keys.
#include <memory>

#include "backend/cpu/kernel_util.h"
#include "ops/lookup.h"

namespace tandem::backend::cpu {

namespace {
template <class Id>
KernelFn make_integer_lookup(const KernelInit& k) {
  auto t = std::make_shared<const ops::IntegerTable>(ops::integer_table(k.node.attrs));
  const int64_t n = numel(k.out_type());
  const Id* ids = in<Id>(k, 0);
  int64_t* y = out<int64_t>(k);
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain / 16, [&](int64_t i0, int64_t i1) {
      const auto size = static_cast<int64_t>(t->keys.size());
      for (int64_t i = i0; i < i1; ++i)
        y[i] = ops::lookup_one(static_cast<int64_t>(ids[i]), t->keys.data(), t->values.data(), size, t->missing, t->buckets, t->bucket_start,
                               t->has_mask, t->mask_key, t->mask_value);
    });
  };
}
}  // namespace

REGISTER_KERNEL("integer_lookup", DeviceKind::Cpu, DType::I32, make_integer_lookup<int32_t>);
REGISTER_KERNEL("integer_lookup", DeviceKind::Cpu, DType::I64, make_integer_lookup<int64_t>);

}  // namespace tandem::backend::cpu
