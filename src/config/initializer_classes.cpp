// tandem::Initializer: Keras's initializer classes by name, their factories and argument checks.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "config/keras_classes.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
struct Preset {
  const char* class_name;
  double scale;
  const char* mode;
  const char* distribution;
};
// Keras's VarianceScaling subclasses.
constexpr Preset kPresets[] = {
    {"GlorotUniform", 1.0, "fan_avg", "uniform"}, {"GlorotNormal", 1.0, "fan_avg", "truncated_normal"},
    {"HeUniform", 2.0, "fan_in", "uniform"},      {"HeNormal", 2.0, "fan_in", "truncated_normal"},
    {"LecunUniform", 1.0, "fan_in", "uniform"},   {"LecunNormal", 1.0, "fan_in", "truncated_normal"},
};
constexpr const char* kOtherClasses[] = {"Zeros",         "Ones",           "Constant",      "Identity",       "Orthogonal",
                                         "RandomNormal",  "TruncatedNormal", "RandomUniform", "VarianceScaling"};

// Keras's snake_case name of a class ("GlorotUniform" -> "glorot_uniform").
std::string snake(const std::string& class_name) {
  std::string s;
  for (char ch : class_name) {
    if (std::isupper(static_cast<unsigned char>(ch)) && !s.empty()) s += '_';
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return s;
}

// The class a Keras name means (initializers.get accepts class names, their snake_case, and a
// few aliases); "" when none.
std::string class_of(const std::string& name) {
  if (name == "uniform") return "RandomUniform";
  if (name == "normal") return "RandomNormal";
  if (name == "OrthogonalInitializer" || name == "orthogonal_initializer") return "Orthogonal";
  if (name == "IdentityInitializer" || name == "identity_initializer") return "Identity";
  for (const Preset& p : kPresets)
    if (name == p.class_name || name == snake(p.class_name)) return p.class_name;
  for (const char* c : kOtherClasses)
    if (name == c || name == snake(c)) return c;
  return "";
}

Initializer with_class(const std::string& class_name) {
  Initializer i("zeros");
  i.class_name = class_name;
  for (const Preset& p : kPresets)
    if (class_name == p.class_name) i.scale = p.scale, i.mode = p.mode, i.distribution = p.distribution;
  return i;
}

Initializer seeded(const std::string& class_name, std::optional<uint64_t> seed) {
  Initializer i = with_class(class_name);
  i.seed = seed;
  return i;
}
}  // namespace

Initializer::Initializer(const char* name) : Initializer(std::string(name ? name : "")) {}

Initializer::Initializer(const std::string& name) {
  const std::string c = class_of(name);
  class_name = c.empty() ? name : c;  // an unknown name is refused when it is used, naming the layer
  for (const Preset& p : kPresets)
    if (class_name == p.class_name) scale = p.scale, mode = p.mode, distribution = p.distribution;
}

std::string initializer_name(const Initializer& i) { return snake(i.class_name); }

void check_initializer(const Initializer& i, const std::string& owner) {
  const std::string who = owner + ": initializer " + i.class_name;
  if (class_of(i.class_name) != i.class_name) {
    std::string known;
    for (const Preset& p : kPresets) known += std::string(known.empty() ? "" : ", ") + snake(p.class_name);
    for (const char* c : kOtherClasses) known += ", " + snake(c);
    throw ValueError(owner + ": unknown initializer '" + i.class_name + "'; expected one of " + known +
                     " (or their Keras class names), or a tandem::initializers value");
  }
  auto finite = [&](const char* arg, double v) {
    if (!std::isfinite(v)) throw ValueError(who + ": " + arg + " must be finite, got " + std::to_string(v));
  };
  finite("value", i.value), finite("gain", i.gain), finite("mean", i.mean), finite("stddev", i.stddev);
  finite("minval", i.minval), finite("maxval", i.maxval), finite("scale", i.scale);
  if ((i.class_name == "RandomNormal" || i.class_name == "TruncatedNormal") && !(i.stddev >= 0))
    throw ValueError(who + ": stddev must be non-negative, got " + std::to_string(i.stddev));
  if (i.class_name == "RandomUniform" && !(i.minval <= i.maxval))
    throw ValueError(who + ": minval must not exceed maxval, got minval=" + std::to_string(i.minval) + ", maxval=" + std::to_string(i.maxval));
  const bool variance = i.class_name == "VarianceScaling" || std::any_of(std::begin(kPresets), std::end(kPresets), [&](const Preset& p) {
                          return i.class_name == p.class_name;
                        });
  if (!variance) return;
  if (!(i.scale > 0)) throw ValueError(who + ": scale must be positive, got " + std::to_string(i.scale));
  if (i.mode != "fan_in" && i.mode != "fan_out" && i.mode != "fan_avg")
    throw ValueError(who + ": mode must be \"fan_in\", \"fan_out\" or \"fan_avg\", got \"" + i.mode + "\"");
  if (i.distribution != "truncated_normal" && i.distribution != "untruncated_normal" && i.distribution != "uniform")
    throw ValueError(who + ": distribution must be \"truncated_normal\", \"untruncated_normal\" or \"uniform\", got \"" + i.distribution + "\"");
}

namespace initializers {

namespace {
Initializer checked(Initializer i) {
  check_initializer(i, i.class_name);
  return i;
}
}  // namespace

Initializer Constant(double value) {
  Initializer i = with_class("Constant");
  i.value = value;
  return checked(i);
}
Initializer Zeros() { return with_class("Zeros"); }
Initializer Ones() { return with_class("Ones"); }
Initializer Identity(double gain) {
  Initializer i = with_class("Identity");
  i.gain = gain;
  return checked(i);
}
Initializer Orthogonal(double gain, std::optional<uint64_t> seed) {
  Initializer i = seeded("Orthogonal", seed);
  i.gain = gain;
  return checked(i);
}
Initializer VarianceScaling(double scale, const std::string& mode, const std::string& distribution, std::optional<uint64_t> seed) {
  Initializer i = seeded("VarianceScaling", seed);
  i.scale = scale;
  i.mode = mode;
  // Keras takes "normal" (any case) for "truncated_normal".
  std::string d = distribution;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  i.distribution = d == "normal" ? "truncated_normal" : d;
  return checked(i);
}
Initializer TruncatedNormal(double mean, double stddev, std::optional<uint64_t> seed) {
  Initializer i = seeded("TruncatedNormal", seed);
  i.mean = mean, i.stddev = stddev;
  return checked(i);
}
Initializer RandomNormal(double mean, double stddev, std::optional<uint64_t> seed) {
  Initializer i = seeded("RandomNormal", seed);
  i.mean = mean, i.stddev = stddev;
  return checked(i);
}
Initializer RandomUniform(double minval, double maxval, std::optional<uint64_t> seed) {
  Initializer i = seeded("RandomUniform", seed);
  i.minval = minval, i.maxval = maxval;
  return checked(i);
}
Initializer GlorotUniform(std::optional<uint64_t> seed) { return seeded("GlorotUniform", seed); }
Initializer GlorotNormal(std::optional<uint64_t> seed) { return seeded("GlorotNormal", seed); }
Initializer HeUniform(std::optional<uint64_t> seed) { return seeded("HeUniform", seed); }
Initializer HeNormal(std::optional<uint64_t> seed) { return seeded("HeNormal", seed); }
Initializer LecunUniform(std::optional<uint64_t> seed) { return seeded("LecunUniform", seed); }
Initializer LecunNormal(std::optional<uint64_t> seed) { return seeded("LecunNormal", seed); }

}  // namespace initializers

}  // namespace tandem
