// Keras's dtype policies (keras/src/dtype_policies/dtype_policy.py): names, the dtypes they give,
// and the process-wide global policy.
#include <mutex>

#include "tandem/errors.h"
#include "tandem/mixed_precision.h"

namespace tandem {

namespace {
std::mutex global_mutex;
std::string& global_name() {
  static std::string name = "float32";
  return name;
}
}  // namespace

const std::vector<std::string>& DTypePolicy::accepted_names() {
  static const std::vector<std::string> names = {"mixed_float16", "mixed_bfloat16", "float32", "float64", "bfloat16", "float16"};
  return names;
}

DTypePolicy::DTypePolicy() : DTypePolicy(mixed_precision::global_policy()) {}

DTypePolicy::DTypePolicy(const std::string& name) : name_(name) {
  if (name == "mixed_float16") {
    compute_ = DType::F16, variable_ = DType::F32;
  } else if (name == "mixed_bfloat16") {
    compute_ = DType::BF16, variable_ = DType::F32;
  } else if (name == "float32" || name == "float64" || name == "bfloat16" || name == "float16") {
    compute_ = variable_ = name == "float32" ? DType::F32 : name == "float64" ? DType::F64 : name == "bfloat16" ? DType::BF16 : DType::F16;
  } else {
    std::string list;
    for (const std::string& n : accepted_names()) list += (list.empty() ? "\"" : ", \"") + n + "\"";
    throw ValueError("DTypePolicy: cannot convert \"" + name + "\" to a dtype policy; the policies are " + list);
  }
}

namespace mixed_precision {

void set_global_policy(const DTypePolicy& policy) {
  std::lock_guard lock(global_mutex);
  global_name() = policy.name();
}

void set_global_policy(const std::string& name) { set_global_policy(DTypePolicy(name)); }

DTypePolicy global_policy() {
  std::lock_guard lock(global_mutex);
  return DTypePolicy(global_name());
}

}  // namespace mixed_precision
}  // namespace tandem
