// Reading configs in Keras's JSON shape (layers, optimizers, losses) with errors that name the class
// and the key, and writing the values that several configs share (initializers, pairs of integers).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tandem/layers/conv.h"
#include "tandem/mixed_precision.h"

namespace tandem::config {

using layers::Int2;  // kernel sizes, strides and pool sizes: one integer or (h, w)

using Json = nlohmann::ordered_json;  // keeps keys in the order written, like Keras's dicts

// Initializers, regularizers and constraints as Keras 3 serialises them: {"module":
// "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null, ...},
// "registered_name": null}, each class with the config keys Keras 3.15 gives it (keras_objects.cpp).
// No regularizer or constraint is written null, as Keras writes it.
Json initializer_json(const Initializer& initializer);
Json regularizer_json(const Regularizer& regularizer);
Json constraint_json(const Constraint& constraint);
// A layer's dtype as Keras 3 writes it: {"module": "keras", "class_name": "DTypePolicy", "config":
// {"name": "float32"}, "registered_name": null}.
Json dtype_policy_json(DType dtype = DType::F32);
Json dtype_policy_json(const std::string& policy_name);
// The policy name a layer's config records: a mixed or 16-bit policy as set; otherwise the float
// dtype the layer computes in (its inputs' float32 or float64), which is what its weights hold.
std::string saved_policy_name(const DTypePolicy& policy, DType layer_dtype);
Json int2_json(const Int2& v);  // [h, w]
// The keys every layer's config starts with, as Keras 3 writes them: name, trainable, dtype.
Json layer_basics_json(const std::string& name, DType dtype);
Json layer_basics_json(const std::string& name, const std::string& policy_name);

// Reads one config (a layer's, an optimizer's, a loss's). Every accessor throws ValueError naming
// the class, the layer and the key: `Dense "fc": config key "units": expected a positive integer,
// got "ten"`. The reader remembers which keys were read, so that check_all_read() can refuse the
// keys nobody reads instead of ignoring what they ask for.
class ConfigReader {
 public:
  ConfigReader(std::string class_name, const Json& config);
  std::string name() const;  // "" when absent: the layer is named automatically

  int64_t integer(const char* key) const;  // required
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key) const;
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  std::string activation(const char* key) const;                                  // "linear" when absent
  Initializer initializer(const char* key, const Initializer& fallback) const;    // a name or Keras's dict
  Regularizer regularizer(const char* key) const;                                 // null/absent: none
  Constraint constraint(const char* key) const;                                   // null/absent: none
  std::vector<int64_t> integers(const char* key) const;                           // a list of integers
  Int2 int2(const char* key) const;                                               // an integer or [h, w]
  Int2 int2(const char* key, const Int2& fallback) const;                         // null/absent: fallback
  std::optional<uint64_t> seed(const char* key) const;                            // null/absent: none
  // Keys Tandem does not implement: accepted only with the value that means "not used".
  void expect(const char* key, const Json& only) const;
  void expect_null(std::initializer_list<const char*> keys) const;  // each absent or null
  // The keys every Keras layer config starts with: name, trainable (true) and dtype (a dtype
  // policy's name, as a string or Keras 3's DTypePolicy). Returns the policy's name; empty when the
  // config gives none (absent or null).
  std::optional<std::string> read_layer_basics() const;
  // The value of `key` (null when absent), counted as read: for values an accessor does not cover.
  const Json* value(const char* key) const;
  // Throws ValueError for the first key no accessor read (a regularizer or constraint key set to
  // null, which Keras writes for "none", is accepted): `Dense "fc": config key "kernel_quantizer":
  // Tandem's Dense has no such argument (value "int8"); it reads: name, trainable, dtype, units, ...`.
  void check_all_read() const;

  [[noreturn]] void fail(const char* key, const std::string& expected) const;
  bool has(const char* key) const;
  // Whether an accessor has read `key` (the layer's own field table took it).
  bool was_read(const char* key) const { return read_.count(key) > 0; }

 private:
  const Json& at(const char* key) const;
  std::string class_name_;
  const Json& config_;
  mutable std::set<std::string> read_;
};

}  // namespace tandem::config
