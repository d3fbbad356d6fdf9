// Reading configs with errors that name the key.
#include "config/config_reader.h"

#include <algorithm>

#include "tandem/errors.h"

namespace tandem::config {

namespace {

std::string shorten(const std::string& text) { return text.size() <= 80 ? text : text.substr(0, 77) + "..."; }

}  // namespace

Json dtype_policy_json(DType dtype) { return dtype_policy_json(std::string(dtype_name(dtype))); }

Json dtype_policy_json(const std::string& policy_name) {
  return {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", policy_name}}}, {"registered_name", nullptr}};
}

std::string saved_policy_name(const DTypePolicy& policy, DType layer_dtype) {
  const bool low = policy.compute_dtype() == DType::BF16 || policy.compute_dtype() == DType::F16;
  return policy.is_mixed() || low ? policy.name() : std::string(dtype_name(layer_dtype));
}

Json int2_json(const Int2& v) { return Json::array({v.h, v.w}); }

Json layer_basics_json(const std::string& name, DType dtype) { return layer_basics_json(name, std::string(dtype_name(dtype))); }

Json layer_basics_json(const std::string& name, const std::string& policy_name) {
  return {{"name", name}, {"trainable", true}, {"dtype", dtype_policy_json(policy_name)}};
}

ConfigReader::ConfigReader(std::string class_name, const Json& config) : class_name_(std::move(class_name)), config_(config) {
  if (!config_.is_object())
    throw ValueError(class_name_ + ": the layer's config must be a JSON object, got " + shorten(config_.dump()));
  if (has("name") && !config_.at("name").is_string()) fail("name", "a string");
}

std::string ConfigReader::name() const { return has("name") ? config_.at("name").get<std::string>() : std::string(); }

bool ConfigReader::has(const char* key) const { return config_.contains(key); }

const Json& ConfigReader::at(const char* key) const {
  if (!has(key)) fail(key, "a value (the key is missing)");
  read_.insert(key);
  return config_.at(key);
}

const Json* ConfigReader::value(const char* key) const {
  if (!has(key)) return nullptr;
  read_.insert(key);
  return &config_.at(key);
}

void ConfigReader::expect_null(std::initializer_list<const char*> keys) const {
  for (const char* key : keys) expect(key, nullptr);
}

std::optional<std::string> ConfigReader::read_layer_basics() const {
  name();
  read_.insert("name");
  if (const Json* trainable = value("trainable"); trainable && !trainable->is_boolean()) fail("trainable", "true or false");
  // Keras writes {"module": "keras", "class_name": "DTypePolicy", "config": {"name": ...}} (3.4 and
  // 3.5: "FloatDTypePolicy"), and reads a plain name too.
  const Json* dtype = value("dtype");
  if (!dtype || dtype->is_null()) return std::nullopt;
  std::string name;
  if (dtype->is_string()) {
    name = dtype->get<std::string>();
  } else if (dtype->is_object() && (dtype->value("class_name", "") == "DTypePolicy" || dtype->value("class_name", "") == "FloatDTypePolicy") &&
             dtype->contains("config") && dtype->at("config").is_object() && dtype->at("config").contains("name") &&
             dtype->at("config").at("name").is_string()) {
    name = dtype->at("config").at("name").get<std::string>();
  }
  const auto& accepted = DTypePolicy::accepted_names();
  if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) {
    std::string list;
    for (const std::string& n : accepted) list += (list.empty() ? "\"" : ", \"") + n + "\"";
    fail("dtype", "a dtype policy (" + list + "), as a name or Keras's DTypePolicy");
  }
  return name;
}

void ConfigReader::check_all_read() const {
  auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  for (const auto& [key, v] : config_.items()) {
    if (read_.count(key)) continue;
    if (v.is_null() && (ends_with(key, "_regularizer") || ends_with(key, "_constraint"))) continue;
    std::string known;
    for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
    const std::string who = class_name_ + (name().empty() ? std::string() : " \"" + name() + "\"");
    throw ValueError(who + ": config key \"" + key + "\": Tandem's " + class_name_ + " has no such argument (value " + shorten(v.dump()) +
                     "); it reads: " + known);
  }
}

void ConfigReader::fail(const char* key, const std::string& expected) const {
  const std::string who = class_name_ + (name().empty() ? std::string() : " \"" + name() + "\"");
  const std::string got = has(key) ? ", got " + shorten(config_.at(key).dump()) : "";
  throw ValueError(who + ": config key \"" + key + "\": expected " + expected + got);
}

int64_t ConfigReader::integer(const char* key) const {
  const Json& v = at(key);
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(key, "an integer");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (!v.is_number_integer()) fail(key, "an integer");
  return v.get<int64_t>();
}

int64_t ConfigReader::integer(const char* key, int64_t fallback) const {
  return value(key) && !config_.at(key).is_null() ? integer(key) : fallback;
}

double ConfigReader::number(const char* key) const {
  const Json& v = at(key);
  if (!v.is_number()) fail(key, "a number");
  return v.get<double>();
}

double ConfigReader::number(const char* key, double fallback) const { return has(key) ? number(key) : fallback; }

bool ConfigReader::boolean(const char* key, bool fallback) const {
  if (!value(key)) return fallback;
  const Json& v = config_.at(key);
  if (!v.is_boolean()) fail(key, "true or false");
  return v.get<bool>();
}

std::string ConfigReader::string(const char* key, const std::string& fallback) const {
  if (!value(key)) return fallback;
  const Json& v = config_.at(key);
  if (!v.is_string()) fail(key, "a string");
  return v.get<std::string>();
}

std::string ConfigReader::activation(const char* key) const {
  if (!value(key) || config_.at(key).is_null()) return "linear";
  return string(key, "linear");
}

std::vector<int64_t> ConfigReader::integers(const char* key) const {
  const Json& v = at(key);
  if (!v.is_array()) fail(key, "a list of integers");
  std::vector<int64_t> out;
  for (const Json& e : v) {
    if (!e.is_number_integer()) fail(key, "a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

Int2 ConfigReader::int2(const char* key) const {
  const Json& v = at(key);
  if (v.is_number_integer()) return Int2(v.get<int64_t>());
  if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
    return Int2(v[0].get<int64_t>(), v[1].get<int64_t>());
  fail(key, "an integer or a list of two integers");
}

Int2 ConfigReader::int2(const char* key, const Int2& fallback) const {
  return value(key) && !config_.at(key).is_null() ? int2(key) : fallback;
}

std::optional<uint64_t> ConfigReader::seed(const char* key) const {
  if (!value(key) || config_.at(key).is_null()) return std::nullopt;
  const Json& v = config_.at(key);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  fail(key, "a non-negative integer or null");
}

void ConfigReader::expect(const char* key, const Json& only) const {
  if (value(key) && config_.at(key) != only) fail(key, only.dump() + " (Tandem supports no other value)");
}

}  // namespace tandem::config
