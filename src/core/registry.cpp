#include "core/registry.h"

#include <string_view>

#include "tandem/errors.h"

namespace tandem::core {

namespace {
// The source tree's root as the compiler spelled it: this file's name less its place in the tree.
// Derived rather than configured, so messages read the same in every build folder.
std::string_view source_root() {
  constexpr std::string_view self = "src/core/registry.cpp";
  const std::string_view file = std::source_location::current().file_name();
  return file.ends_with(self) ? file.substr(0, file.size() - self.size()) : std::string_view();
}
}  // namespace

std::string where(const std::source_location& loc) {
  std::string_view file = loc.file_name();
  const std::string_view root = source_root();
  if (!root.empty() && file.starts_with(root)) file.remove_prefix(root.size());
  return std::string(file) + ":" + std::to_string(loc.line());
}

void throw_registry_errors(const std::vector<std::string>& errors) {
  if (errors.size() == 1) throw Error(errors[0]);
  std::string text = std::to_string(errors.size()) + " registration errors:";
  for (const std::string& e : errors) text += "\n  " + e;
  throw Error(text);
}

}  // namespace tandem::core
