// Reading configs with errors that name the key; initializers in Keras's shape.
#include "config/config_reader.h"

#include "tandem/errors.h"

namespace tandem::config {

namespace {

struct InitializerClass {
  const char* name;        // Tandem's (and Keras's string) name
  const char* class_name;  // Keras's class
};
constexpr InitializerClass kInitializers[] = {
    {"zeros", "Zeros"},
    {"ones", "Ones"},
    {"glorot_uniform", "GlorotUniform"},
    {"glorot_normal", "GlorotNormal"},
    {"he_uniform", "HeUniform"},
    {"he_normal", "HeNormal"},
    {"lecun_uniform", "LecunUniform"},
    {"lecun_normal", "LecunNormal"},
    {"uniform", "RandomUniform"},  // Keras's default arguments only: (-0.05, 0.05)
    {"normal", "RandomNormal"},    // mean 0, stddev 0.05
};

std::string canonical_initializer(const std::string& name) {
  if (name == "random_uniform") return "uniform";
  if (name == "random_normal") return "normal";
  return name;
}

std::string shorten(const std::string& text) { return text.size() <= 80 ? text : text.substr(0, 77) + "..."; }

}  // namespace

Json initializer_json(const std::string& name) {
  const std::string canonical = canonical_initializer(name);
  for (const InitializerClass& c : kInitializers) {
    if (canonical != c.name) continue;
    Json config = Json::object();
    if (canonical == "uniform") config = {{"minval", -0.05}, {"maxval", 0.05}};
    if (canonical == "normal") config = {{"mean", 0.0}, {"stddev", 0.05}};
    config["seed"] = nullptr;
    return {{"class_name", c.class_name}, {"config", config}};
  }
  return name;
}

Json int2_json(const Int2& v) { return Json::array({v.h, v.w}); }

ConfigReader::ConfigReader(std::string class_name, const Json& config) : class_name_(std::move(class_name)), config_(config) {
  if (!config_.is_object())
    throw ValueError(class_name_ + ": the layer's config must be a JSON object, got " + shorten(config_.dump()));
  if (has("name") && !config_.at("name").is_string()) fail("name", "a string");
}

std::string ConfigReader::name() const { return has("name") ? config_.at("name").get<std::string>() : std::string(); }

bool ConfigReader::has(const char* key) const { return config_.contains(key); }

const Json& ConfigReader::at(const char* key) const {
  if (!has(key)) fail(key, "a value (the key is missing)");
  return config_.at(key);
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
  return has(key) && !config_.at(key).is_null() ? integer(key) : fallback;
}

double ConfigReader::number(const char* key) const {
  const Json& v = at(key);
  if (!v.is_number()) fail(key, "a number");
  return v.get<double>();
}

double ConfigReader::number(const char* key, double fallback) const { return has(key) ? number(key) : fallback; }

bool ConfigReader::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const Json& v = config_.at(key);
  if (!v.is_boolean()) fail(key, "true or false");
  return v.get<bool>();
}

std::string ConfigReader::string(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const Json& v = config_.at(key);
  if (!v.is_string()) fail(key, "a string");
  return v.get<std::string>();
}

std::string ConfigReader::activation(const char* key) const {
  if (!has(key) || config_.at(key).is_null()) return "linear";
  return string(key, "linear");
}

std::string ConfigReader::initializer(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const Json& v = config_.at(key);
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    for (const InitializerClass& c : kInitializers)
      if (s == c.class_name) return c.name;
    return canonical_initializer(s);
  }
  if (!v.is_object() || !v.contains("class_name") || !v.at("class_name").is_string())
    fail(key, "an initializer name or {\"class_name\": ..., \"config\": {...}}");
  const std::string cls = v.at("class_name").get<std::string>();
  const Json args = v.contains("config") && v.at("config").is_object() ? v.at("config") : Json::object();
  auto arg_is = [&](const char* name, double expected) {
    return !args.contains(name) || (args.at(name).is_number() && args.at(name).get<double>() == expected);
  };
  for (const InitializerClass& c : kInitializers) {
    if (cls != c.class_name) continue;
    const bool defaults = std::string(c.name) == "uniform"  ? arg_is("minval", -0.05) && arg_is("maxval", 0.05)
                          : std::string(c.name) == "normal" ? arg_is("mean", 0.0) && arg_is("stddev", 0.05)
                                                            : true;
    if (!defaults) fail(key, std::string(c.class_name) + " with Keras's default arguments (the only ones Tandem implements)");
    return c.name;
  }
  std::string known;
  for (const InitializerClass& c : kInitializers) known += (known.empty() ? "" : ", ") + std::string(c.class_name);
  fail(key, "one of the initializer classes " + known);
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
  return has(key) && !config_.at(key).is_null() ? int2(key) : fallback;
}

std::optional<uint64_t> ConfigReader::seed(const char* key) const {
  if (!has(key) || config_.at(key).is_null()) return std::nullopt;
  const Json& v = config_.at(key);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  fail(key, "a non-negative integer or null");
}

void ConfigReader::expect(const char* key, const Json& only) const {
  if (has(key) && config_.at(key) != only) fail(key, only.dump() + " (Tandem supports no other value)");
}

}  // namespace tandem::config
