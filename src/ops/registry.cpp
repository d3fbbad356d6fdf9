#include "ops/registry.h"

#include <map>
#include <memory>

#include "tandem/errors.h"

namespace tandem::ops {

namespace {
std::map<std::string, OpDef>& table() {
  static std::map<std::string, OpDef> t;
  return t;
}
}  // namespace

Registration::Registration(OpDef def) {
  std::string name = def.name;
  table().emplace(std::move(name), std::move(def));
}

const OpDef& find(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) throw Error("unknown op '" + name + "'");
  return it->second;
}

void GradContext::set(int input, Value grad) {
  if (grads_.size() < node().inputs.size()) grads_.resize(node().inputs.size());
  grads_[static_cast<std::size_t>(input)] = grad;
}

}  // namespace tandem::ops
