#include "graph/attrs.h"

#include "tandem/errors.h"

namespace tandem::graph {

Attrs& Attrs::set(const std::string& key, AttrValue value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  items_.emplace_back(key, std::move(value));
  return *this;
}

const AttrValue* Attrs::find(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

const AttrValue& Attrs::get(const std::string& key) const {
  const AttrValue* v = find(key);
  if (!v) throw Error("internal: node attribute '" + key + "' is missing");
  return *v;
}

int64_t Attrs::i(const std::string& key) const {
  const AttrValue& v = get(key);
  if (auto* b = std::get_if<bool>(&v)) return *b;
  return std::get<int64_t>(v);
}
int64_t Attrs::i(const std::string& key, int64_t fallback) const { return has(key) ? i(key) : fallback; }

double Attrs::f(const std::string& key) const {
  const AttrValue& v = get(key);
  if (auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
  return std::get<double>(v);
}
double Attrs::f(const std::string& key, double fallback) const { return has(key) ? f(key) : fallback; }

bool Attrs::b(const std::string& key, bool fallback) const {
  const AttrValue* v = find(key);
  if (!v) return fallback;
  if (auto* n = std::get_if<int64_t>(v)) return *n != 0;
  return std::get<bool>(*v);
}

const std::string& Attrs::s(const std::string& key) const { return std::get<std::string>(get(key)); }
std::vector<int64_t> Attrs::ints(const std::string& key) const { return std::get<std::vector<int64_t>>(get(key)); }

}  // namespace tandem::graph
