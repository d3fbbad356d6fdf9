// What Keras's augmentation layers share: their factor arguments in configs (a number or a pair),
// the checks Keras makes of them, the ranges they mean, and the geometric layers' emission (draw a
// transform per image, then sample). Used by layers/random_*.cpp only.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layers/fields.h"
#include "ops/image.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace augmentation {

// Config values: a factor is written as given (a number, or [lower, upper]); value_range as
// [low, high]; an absent width_factor as null.

inline Json write_value(const Factor& f) { return f.pair ? Json::array({f.first, f.second}) : Json(f.first); }
inline Json write_value(const std::optional<Factor>& f) { return f ? write_value(*f) : Json(nullptr); }
inline Json write_value(const std::pair<double, double>& p) { return Json::array({p.first, p.second}); }
inline void read_number_or_pair(const ConfigReader& c, const char* key, double& a, double& b, bool& pair, bool pair_only) {
  const Json* j = c.value(key);
  if (j && j->is_number() && !pair_only) {
    a = j->get<double>(), pair = false;
    return;
  }
  if (j && j->is_array() && j->size() == 2 && (*j)[0].is_number() && (*j)[1].is_number()) {
    a = (*j)[0].get<double>(), b = (*j)[1].get<double>(), pair = true;
    return;
  }
  c.fail(key, pair_only ? "a list of two numbers" : "a number or a list of two numbers");
}
inline void read_value(const ConfigReader& c, const char* key, Factor& v, bool) {
  v = Factor();
  read_number_or_pair(c, key, v.first, v.second, v.pair, false);
}
inline void read_value(const ConfigReader& c, const char* key, std::optional<Factor>& v, bool) {
  const Json* j = c.value(key);
  if (!j || j->is_null()) {
    v.reset();
    return;
  }
  Factor f;
  read_value(c, key, f, false);
  v = f;
}
inline void read_value(const ConfigReader& c, const char* key, std::pair<double, double>& v, bool) {
  if (!c.has(key)) return;
  bool pair = true;
  read_number_or_pair(c, key, v.first, v.second, pair, true);
}
inline std::string show_value(const Factor& f) {
  std::string s = fields_detail::show(f.first);
  if (f.pair) s = std::string("(").append(s).append(", ").append(fields_detail::show(f.second)).append(")");
  return s;
}
inline std::string show_value(const std::optional<Factor>& f) { return f ? show_value(*f) : "null"; }
inline std::string show_value(const std::pair<double, double>& p) {
  return std::string("(").append(fields_detail::show(p.first)).append(", ").append(fields_detail::show(p.second)).append(")");
}

// A field of one of these types (fields.h's field() knows only its own value types).
template <class Args, class Get, class Rule = std::nullptr_t>
Field<Args> value_field(const char* key, Get get, Rule rule = nullptr) {
  Field<Args> f{key, [get](const Args& a) { return write_value(get(a)); },
                [get, key](const ConfigReader& c, Args& a) { read_value(c, key, get(a), true); }, nullptr};
  if constexpr (!std::is_same_v<Rule, std::nullptr_t>)
    f.check = [get, key, rule](const std::string& who, const Args& a) {
      const std::string expected = rule(get(a));
      if (!expected.empty()) throw ValueError(who + ": " + key + " must be " + expected + ", got " + show_value(get(a)));
    };
  return f;
}

inline const auto kFillModes = rules::one_of({"reflect", "wrap", "constant", "nearest"});
inline const auto kInterpolations = rules::one_of({"nearest", "bilinear"});

// Each value of the factor in [lo, hi] (lo excluded when `open_low`): RandomTranslation's and
// RandomZoom's check.
inline std::function<std::string(const Factor&)> each_in(double lo, double hi, bool open_low) {
  const std::string text = std::string(open_low ? "(" : "[").append(fields_detail::show(lo)).append(", ").append(fields_detail::show(hi)).append("]").append(" (a number or a pair)");
  return [=](const Factor& f) {
    auto ok = [&](double v) { return (open_low ? v > lo : v >= lo) && v <= hi; };
    return ok(f.first) && (!f.pair || ok(f.second)) ? std::string() : "each in " + text;
  };
}
inline std::function<std::string(const std::optional<Factor>&)> each_in_or_none(double lo, double hi, bool open_low) {
  auto rule = each_in(lo, hi, open_low);
  return [rule](const std::optional<Factor>& f) { return f ? rule(*f) : std::string(); };
}

// The base check of Keras's image layers with bounds [lo, hi] (RandomRotation (−1, 1),
// RandomContrast (0, 1)): a number within them; a pair whose first is at most hi and second at
// least lo.
inline std::function<std::string(const Factor&)> within_bounds(double lo, double hi) {
  const std::string text = std::string("a number in [").append(fields_detail::show(lo)).append(", ").append(fields_detail::show(hi)).append("] or a pair reaching into it");
  return [=](const Factor& f) {
    const bool ok = f.pair ? !(f.first > hi || f.second < lo) : f.first >= lo && f.first <= hi;
    return ok ? std::string() : text;
  };
}

// The (lower, upper) range a factor means: a pair sorted; a number f: (max(−|f|, floor), |f|).
inline std::pair<double, double> range(const Factor& f, double floor = -HUGE_VAL) {
  if (f.pair) return {std::min(f.first, f.second), std::max(f.first, f.second)};
  const double a = std::abs(f.first);
  return {std::max(-a, floor), a};
}

// The geometric layers' work while training: a random transform per image, then the sampling.
inline graph::Value transform(CallContext& ctx, const std::string& who, graph::Value x, const ops::RandomImageParams& params,
                              const RandomTransformOptions& o) {
  detail::check_image(who, ctx.g.type(x).shape);
  if (!ctx.training) return x;
  const graph::Value t = ops::random_image_params(ctx.g, x, ctx.step, params);
  return ops::image_affine_transform(ctx.g, x, t, o.interpolation, o.fill_mode, o.fill_value);
}

// The fields RandomTranslation, RandomRotation and RandomZoom share; each layer lists them in the
// order Keras writes its config.
template <class Args>
Field<Args> fill_mode_field() {
  return field<Args>("fill_mode", [](auto& a) -> auto& { return a.options.fill_mode; }, kFillModes);
}
template <class Args>
Field<Args> interpolation_field() {
  return field<Args>("interpolation", [](auto& a) -> auto& { return a.options.interpolation; }, kInterpolations);
}
template <class Args>
Field<Args> seed_field() {
  return field<Args>("seed", [](auto& a) -> auto& { return a.options.seed; });
}
template <class Args>
Field<Args> fill_value_field() {
  return field<Args>("fill_value", [](auto& a) -> auto& { return a.options.fill_value; });
}

}  // namespace augmentation
}  // namespace tandem::layers
