// Keras's dtype policies: which dtype a layer computes in and which dtype its weights are kept in.
//
//   tandem::mixed_precision::set_global_policy("mixed_bfloat16");  // layers made from now on
//   auto hidden = tl::Dense(256, "relu");                            // compute bfloat16, weights float32
//   auto head = tl::Dense(10);
//   head->set_dtype_policy("float32");                               // this one stays float32
//
// Policies are recorded per layer and saved in `.keras` configs exactly as Keras 3 writes them
// (a Keras-made mixed-precision file loads with its policies, and the reverse). When the step is
// built, a layer under a mixed policy takes its inputs in the compute dtype and its products and
// convolutions run in it, while softmax, normalisation statistics, losses and the optimizer stay in
// float32 (docs/mixed-precision.md). Under mixed_float16, Model::compile wraps the optimizer in a
// LossScaleOptimizer (tandem/optimizers.h), as Keras does.
#pragma once

#include <string>
#include <vector>

#include "tandem/tensor.h"

namespace tandem {

class DTypePolicy {
 public:
  // The global policy at the time of construction (Keras's DTypePolicy(name=None)).
  DTypePolicy();
  // "mixed_float16" (compute float16, variables float32), "mixed_bfloat16" (bfloat16, float32), or
  // a float dtype name for both: "float32", "float64", "bfloat16", "float16". ValueError otherwise,
  // listing these.
  explicit DTypePolicy(const std::string& name);

  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return variable_; }
  bool is_mixed() const { return compute_ != variable_; }
  bool operator==(const DTypePolicy& o) const { return name_ == o.name_; }
  bool operator!=(const DTypePolicy& o) const { return name_ != o.name_; }
  std::string str() const { return "<DTypePolicy \"" + name_ + "\">"; }  // Keras's repr

  static const std::vector<std::string>& accepted_names();

 private:
  std::string name_;
  DType compute_ = DType::F32;
  DType variable_ = DType::F32;
};

namespace mixed_precision {
// The policy that layers made from now on take (Keras's keras.mixed_precision.set_global_policy,
// also keras.config.set_dtype_policy). "float32" at start. One for the whole process (Keras keeps
// it per Python thread); set it before making the layers, not while another thread makes some.
void set_global_policy(const DTypePolicy& policy);
void set_global_policy(const std::string& name);
DTypePolicy global_policy();
// keras.mixed_precision.LossScaleOptimizer is in tandem/optimizers.h, under this namespace too.
}  // namespace mixed_precision

}  // namespace tandem
