// Initializers, regularizers and constraints as Keras 3 serialises them ({"module", "class_name",
// "config", "registered_name"}), written and read back, with the config keys Keras 3.15 gives
// each class.
#include <algorithm>
#include <cmath>

#include "config/config_reader.h"
#include "config/keras_classes.h"
#include "tandem/errors.h"

namespace tandem::config {

namespace {
Json keras_object(const char* module, const std::string& class_name, Json config) {
  return {{"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}
Json seed_json(const std::optional<uint64_t>& seed) { return seed ? Json(*seed) : Json(nullptr); }
bool variance_family(const std::string& c) {
  return c == "GlorotUniform" || c == "GlorotNormal" || c == "HeUniform" || c == "HeNormal" || c == "LecunUniform" || c == "LecunNormal";
}

// A Keras object's class and config, from a name ("l2") or the serialised dict.
struct Object {
  std::string class_name;
  Json config = Json::object();
  bool from_name = false;
};
Object object_of(const ConfigReader& c, const char* key, const Json& v, const char* what) {
  if (v.is_string()) return {v.get<std::string>(), Json::object(), true};
  if (!v.is_object() || !v.contains("class_name") || !v.at("class_name").is_string())
    c.fail(key, std::string("a") + what + " name or {\"class_name\": ..., \"config\": {...}}");
  Object o{v.at("class_name").get<std::string>()};
  if (v.contains("config") && !v.at("config").is_null()) {
    if (!v.at("config").is_object()) c.fail(key, std::string(what) + " whose \"config\" is an object");
    o.config = v.at("config");
  }
  if (v.contains("registered_name") && !v.at("registered_name").is_null() && v.at("registered_name") != o.class_name)
    c.fail(key, std::string("a built-in Keras") + what + " (registered_name null), got registered_name " + v.at("registered_name").dump());
  return o;
}

// Reads the numbers and strings of an object's config, refusing keys the class does not have.
class ObjectArgs {
 public:
  ObjectArgs(const ConfigReader& c, const char* key, const Object& o) : c_(c), key_(key), o_(o) {}
  double number(const char* name, double fallback) {
    read_.push_back(name);
    const Json* v = get(name);
    if (!v) return fallback;
    if (!v->is_number()) fail(std::string(name) + " as a number, got " + v->dump());
    return v->get<double>();
  }
  std::string string(const char* name, const std::string& fallback) {
    read_.push_back(name);
    const Json* v = get(name);
    if (!v) return fallback;
    if (!v->is_string()) fail(std::string(name) + " as a string, got " + v->dump());
    return v->get<std::string>();
  }
  std::optional<uint64_t> seed() {
    read_.push_back("seed");
    const Json* v = get("seed");
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) return v->get<uint64_t>();
    if (v->is_number_integer() && v->get<int64_t>() >= 0) return static_cast<uint64_t>(v->get<int64_t>());
    fail("seed as a non-negative integer or null (Tandem takes no SeedGenerator), got " + v->dump());
  }
  void none(const char* name, const char* why) {
    read_.push_back(name);
    if (const Json* v = get(name)) fail(std::string(name) + " null (" + why + "), got " + v->dump());
  }
  const Json* raw(const char* name) {
    read_.push_back(name);
    return get(name);
  }
  void done() {
    for (const auto& [k, v] : o_.config.items())
      if (std::find(read_.begin(), read_.end(), k) == read_.end())
        fail(std::string("no argument \"") + k + "\" (Keras's " + o_.class_name + " has none Tandem reads)");
  }
  [[noreturn]] void fail(const std::string& expected) const { c_.fail(key_, o_.class_name + " with " + expected); }

 private:
  const Json* get(const char* name) const {
    if (!o_.config.contains(name) || o_.config.at(name).is_null()) return nullptr;
    return &o_.config.at(name);
  }
  const ConfigReader& c_;
  const char* key_;
  const Object& o_;
  std::vector<std::string> read_;
};
}  // namespace

Json initializer_json(const Initializer& i) {
  const std::string& c = i.class_name;
  check_initializer(i, "initializer");
  Json config = Json::object();
  if (c == "Constant") config = {{"value", i.value}};
  else if (c == "Identity" && i.gain != 1.0) config = {{"gain", i.gain}};  // Keras 3.15 writes {} (and so loses a gain)
  else if (c == "Orthogonal") config = {{"seed", seed_json(i.seed)}, {"gain", i.gain}};
  else if (c == "RandomNormal" || c == "TruncatedNormal") config = {{"seed", seed_json(i.seed)}, {"mean", i.mean}, {"stddev", i.stddev}};
  else if (c == "RandomUniform") config = {{"seed", seed_json(i.seed)}, {"minval", i.minval}, {"maxval", i.maxval}};
  else if (c == "VarianceScaling")
    config = {{"seed", seed_json(i.seed)}, {"scale", i.scale},           {"mode", i.mode},
              {"distribution", i.distribution}, {"input_axes", nullptr}, {"output_axes", nullptr}};
  else if (variance_family(c)) {
    // A preset whose arguments were changed is no longer the Keras class: write VarianceScaling.
    const Initializer preset = Initializer(c);
    if (i.scale != preset.scale || i.mode != preset.mode || i.distribution != preset.distribution) {
      Initializer v = i;
      v.class_name = "VarianceScaling";
      return initializer_json(v);
    }
    config = {{"seed", seed_json(i.seed)}, {"input_axes", nullptr}, {"output_axes", nullptr}};
  }
  return keras_object("keras.initializers", c, config);
}

Json regularizer_json(const Regularizer& r) {
  if (!r) return nullptr;
  check_regularizer(r, "regularizer");
  Json config;
  if (r.class_name == "L1") config = {{"l1", r.l1}};
  else if (r.class_name == "L2") config = {{"l2", r.l2}};
  else if (r.class_name == "L1L2") config = {{"l1", r.l1}, {"l2", r.l2}};
  else config = {{"factor", r.factor}, {"mode", r.mode}};
  return keras_object("keras.regularizers", r.class_name, config);
}

Json constraint_json(const Constraint& c) {
  if (!c) return nullptr;
  check_constraint(c, "constraint");
  const Json axis = c.axis.size() == 1 ? Json(c.axis[0]) : Json(c.axis);
  Json config = Json::object();
  if (c.class_name == "MaxNorm") config = {{"max_value", c.max_value}, {"axis", axis}};
  else if (c.class_name == "UnitNorm") config = {{"axis", axis}};
  else if (c.class_name == "MinMaxNorm") config = {{"min_value", c.min_value}, {"max_value", c.max_value}, {"rate", c.rate}, {"axis", axis}};
  return keras_object("keras.constraints", c.class_name, config);
}

Initializer ConfigReader::initializer(const char* key, const Initializer& fallback) const {
  const Json* v = value(key);
  if (!v || v->is_null()) return fallback;
  const Object o = object_of(*this, key, *v, "n initializer");
  Initializer i(o.class_name);
  try {
    check_initializer(i, "");
  } catch (const ValueError&) {
    fail(key, "one of Keras's initializer classes (Zeros, Ones, Constant, Identity, Orthogonal, RandomNormal, TruncatedNormal, "
              "RandomUniform, VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal), got " +
                  o.class_name);
  }
  if (o.from_name) return i;
  ObjectArgs a(*this, key, o);
  const std::string& c = i.class_name;
  if (c == "Constant") {
    const Json* value = a.raw("value");
    if (value && !value->is_number()) a.fail("value as a number (Tandem's Constant fills one scalar), got " + value->dump());
    i.value = value ? value->get<double>() : 0.0;
  } else if (c != "Zeros" && c != "Ones") {
    if (c != "Identity") i.seed = a.seed();
    if (c == "Identity" || c == "Orthogonal") i.gain = a.number("gain", 1.0);
    if (c == "RandomNormal" || c == "TruncatedNormal") i.mean = a.number("mean", 0.0), i.stddev = a.number("stddev", 0.05);
    if (c == "RandomUniform") i.minval = a.number("minval", -0.05), i.maxval = a.number("maxval", 0.05);
    if (c == "VarianceScaling") {
      i.scale = a.number("scale", 1.0), i.mode = a.string("mode", "fan_in"), i.distribution = a.string("distribution", "truncated_normal");
      if (i.distribution == "normal") i.distribution = "truncated_normal";  // as Keras's constructor
    }
    if (c == "VarianceScaling" || variance_family(c)) {
      a.none("input_axes", "Tandem computes fans as Keras does without them");
      a.none("output_axes", "Tandem computes fans as Keras does without them");
    }
  }
  a.done();
  try {
    check_initializer(i, "");
  } catch (const ValueError& e) {
    fail(key, std::string("valid arguments (") + (e.what() + 2) + ")");
  }
  return i;
}

Regularizer ConfigReader::regularizer(const char* key) const {
  const Json* v = value(key);
  if (!v || v->is_null()) return {};
  const Object o = object_of(*this, key, *v, " regularizer");
  Regularizer r(o.class_name);
  if (!r || (r.class_name != "L1" && r.class_name != "L2" && r.class_name != "L1L2" && r.class_name != "OrthogonalRegularizer"))
    fail(key, "one of Keras's regularizer classes L1, L2, L1L2, OrthogonalRegularizer, got " + o.class_name);
  if (o.from_name) return r;
  ObjectArgs a(*this, key, o);
  if (r.class_name == "L1" || r.class_name == "L1L2") r.l1 = a.number("l1", r.l1);
  if (r.class_name == "L2" || r.class_name == "L1L2") r.l2 = a.number("l2", r.l2);
  if (r.class_name == "OrthogonalRegularizer") r.factor = a.number("factor", 0.01), r.mode = a.string("mode", "rows");
  a.done();
  try {
    check_regularizer(r, "");
  } catch (const ValueError& e) {
    fail(key, std::string("valid arguments (") + (e.what() + 2) + ")");
  }
  return r;
}

Constraint ConfigReader::constraint(const char* key) const {
  const Json* v = value(key);
  if (!v || v->is_null()) return {};
  const Object o = object_of(*this, key, *v, " constraint");
  Constraint c(o.class_name);
  if (!c || (c.class_name != "MaxNorm" && c.class_name != "NonNeg" && c.class_name != "UnitNorm" && c.class_name != "MinMaxNorm"))
    fail(key, "one of Keras's constraint classes MaxNorm, NonNeg, UnitNorm, MinMaxNorm, got " + o.class_name);
  if (o.from_name) return c;
  ObjectArgs a(*this, key, o);
  if (c.class_name == "MinMaxNorm") c.min_value = a.number("min_value", 0.0), c.rate = a.number("rate", 1.0);
  if (c.class_name == "MaxNorm" || c.class_name == "MinMaxNorm") c.max_value = a.number("max_value", c.class_name == "MaxNorm" ? 2.0 : 1.0);
  if (c.class_name != "NonNeg") {
    const Json* axis = a.raw("axis");
    if (axis) {
      c.axis.clear();
      if (axis->is_number_integer()) c.axis.push_back(axis->get<int64_t>());
      else if (axis->is_array() && !axis->empty()) {
        for (const Json& e : *axis) {
          if (!e.is_number_integer()) a.fail("axis as an integer or a list of integers, got " + axis->dump());
          c.axis.push_back(e.get<int64_t>());
        }
      } else {
        a.fail("axis as an integer or a list of integers, got " + axis->dump());
      }
    }
  }
  a.done();
  try {
    check_constraint(c, "");
  } catch (const ValueError& e) {
    fail(key, std::string("valid arguments (") + (e.what() + 2) + ")");
  }
  return c;
}

}  // namespace tandem::config
