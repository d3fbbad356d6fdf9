// Node attributes: a small ordered list of named values, read when a graph is built or compiled,
// never in the step loop.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tandem::graph {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}

  Attrs& set(const std::string& key, AttrValue value);
  bool has(const std::string& key) const { return find(key) != nullptr; }
  int64_t i(const std::string& key) const;
  int64_t i(const std::string& key, int64_t fallback) const;
  double f(const std::string& key) const;
  double f(const std::string& key, double fallback) const;
  bool b(const std::string& key, bool fallback = false) const;
  const std::string& s(const std::string& key) const;
  std::vector<int64_t> ints(const std::string& key) const;
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }

 private:
  const AttrValue* find(const std::string& key) const;
  const AttrValue& get(const std::string& key) const;
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace tandem::graph
