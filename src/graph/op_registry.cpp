#include "graph/op_registry.h"

#include "tandem/errors.h"

namespace tandem::ops {

void OpRegistry::add(OpDef def, std::source_location loc) {
  std::string name = def.name;
  Registry::add(std::move(name), std::move(def), loc);
}

OpRegistry& registry() {
  static OpRegistry r;  // built on first use: registrations in other files may run before this one's statics
  return r;
}

Registration::Registration(OpDef def, std::source_location loc) { registry().add(std::move(def), loc); }

const OpDef& find(const std::string& name) {
  const OpDef* def = registry().find(name);
  if (!def) throw Error("unknown op '" + name + "'");
  return *def;
}

void GradContext::set(int input, Value grad) {
  if (grads_.size() < node().inputs.size()) grads_.resize(node().inputs.size());
  grads_[static_cast<std::size_t>(input)] = grad;
}

}  // namespace tandem::ops
