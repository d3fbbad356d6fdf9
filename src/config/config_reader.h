// Reading configs in Keras's JSON shape (layers, optimizers, losses) with errors that name the class
// and the key, and writing the values that several configs share (initializers, pairs of integers).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tandem/layers/conv.h"

namespace tandem::config {

using layers::Int2;  // kernel sizes, strides and pool sizes: one integer or (h, w)

using Json = nlohmann::ordered_json;  // keeps keys in the order written, like Keras's dicts

// Initializers as Keras serialises them: "glorot_uniform" -> {"class_name": "GlorotUniform",
// "config": {"seed": null}}. Names Keras has no class for are written as plain strings.
Json initializer_json(const std::string& name);
Json int2_json(const Int2& v);  // [h, w]

// Reads one config (a layer's, an optimizer's, a loss's). Every accessor throws ValueError naming
// the class, the layer and the key: `Dense "fc": config key "units": expected a positive integer,
// got "ten"`.
class ConfigReader {
 public:
  ConfigReader(std::string class_name, const Json& config);
  const Json& json() const { return config_; }
  std::string name() const;  // "" when absent: the layer is named automatically

  int64_t integer(const char* key) const;  // required
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key) const;
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  std::string activation(const char* key) const;                                  // "linear" when absent
  std::string initializer(const char* key, const std::string& fallback) const;    // a name or Keras's dict
  std::vector<int64_t> integers(const char* key) const;                           // a list of integers
  Int2 int2(const char* key) const;                                               // an integer or [h, w]
  Int2 int2(const char* key, const Int2& fallback) const;                         // null/absent: fallback
  std::optional<uint64_t> seed(const char* key) const;                            // null/absent: none
  // Keys Tandem does not implement: accepted only with the value that means "not used".
  void expect(const char* key, const Json& only) const;

  [[noreturn]] void fail(const char* key, const std::string& expected) const;
  bool has(const char* key) const;

 private:
  const Json& at(const char* key) const;
  std::string class_name_;
  const Json& config_;
};

}  // namespace tandem::config
