// A layer's arguments declared once: each field names its Keras config key, where its value lives in
// the layer's argument struct, and what it accepts. The same table writes the config (get_config),
// reads it back with the struct's own defaults (from_config), and checks the values with errors
// that name the layer, the argument, what it accepts and what came:
//
//   struct DenseArgs { int64_t units = 0; std::string activation; DenseOptions options; };
//   const Fields<DenseArgs> kDenseFields{
//       required("units", [](auto& a) -> auto& { return a.units; }, positive),
//       activation("activation", [](auto& a) -> auto& { return a.activation; }),
//       field("use_bias", [](auto& a) -> auto& { return a.options.use_bias; }),
//       initializer("kernel_initializer", [](auto& a) -> auto& { return a.options.kernel_initializer; }),
//       regularizer("kernel_regularizer", [](auto& a) -> auto& { return a.options.kernel_regularizer; }),
//       unused("quantization_config")};
//
// Defaults live in the argument struct (the public options' member initialisers), so a default is
// stated once. An accessor is a lambda returning a reference into the struct; the value's C++
// type picks how it is written and read: int64_t, int, double, bool, std::string, Int2, Shape (an
// optional shape: null when empty) and std::optional<uint64_t> (a seed: null when none).
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "layers/activations.h"
#include "layers/config.h"
#include "layers/conv_util.h"
#include "layer_base/penalties.h"
#include "tandem/errors.h"
#include "tandem/tensor.h"

namespace tandem::layers {

// A rule returns "" when the value is acceptable, else what the argument must be ("positive",
// "in [0, 1)"), which the error completes as `Dense "d": units must be positive, got 0`.
namespace rules {
inline constexpr struct Positive {
  std::string operator()(int64_t v) const { return v > 0 ? "" : "positive"; }
  std::string operator()(double v) const { return v > 0 ? "" : "positive"; }
  std::string operator()(const Int2& v) const { return v.h > 0 && v.w > 0 ? "" : "positive integers"; }
} positive;
inline constexpr struct NonNegative {
  std::string operator()(int64_t v) const { return v >= 0 ? "" : "non-negative"; }
  std::string operator()(double v) const { return v >= 0 ? "" : "non-negative"; }  // NaN is refused
} non_negative;
// [lo, hi) when `closed` is false, [lo, hi] when true.
inline std::function<std::string(double)> in_range(double lo, double hi, bool closed) {
  std::ostringstream s;
  s << "in [" << lo << ", " << hi << (closed ? "]" : ")");
  return [lo, hi, closed, text = s.str()](double v) { return v >= lo && (closed ? v <= hi : v < hi) ? "" : text; };
}
inline std::function<std::string(const std::string&)> one_of(std::vector<std::string> values) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? (i + 1 == values.size() ? " or \"" : ", \"") : "\"") + values[i] + "\"";
  return [values, text](const std::string& v) {
    for (const std::string& ok : values)
      if (v == ok) return std::string();
    return text;
  };
}
}  // namespace rules

namespace fields_detail {
inline Json write(int64_t v) { return v; }
inline Json write(int v) { return v; }
inline Json write(double v) { return v; }
inline Json write(bool v) { return v; }
inline Json write(const std::string& v) { return v; }
inline Json write(const Int2& v) { return int2_json(v); }
inline Json write(const Shape& v) { return v.rank() ? Json(v.dims()) : Json(nullptr); }
inline Json write(const std::optional<uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }
inline void read(const ConfigReader& c, const char* key, int64_t& v, bool need) { v = need ? c.integer(key) : c.integer(key, v); }
inline void read(const ConfigReader& c, const char* key, int& v, bool need) {
  v = static_cast<int>(need ? c.integer(key) : c.integer(key, v));
}
inline void read(const ConfigReader& c, const char* key, double& v, bool need) { v = need ? c.number(key) : c.number(key, v); }
inline void read(const ConfigReader& c, const char* key, bool& v, bool) { v = c.boolean(key, v); }
inline void read(const ConfigReader& c, const char* key, std::string& v, bool) { v = c.string(key, v); }
inline void read(const ConfigReader& c, const char* key, Int2& v, bool need) { v = need ? c.int2(key) : c.int2(key, v); }
// A shape: a list of integers, or one integer for a one-dimensional shape; null or absent keeps v.
inline void read(const ConfigReader& c, const char* key, Shape& v, bool need) {
  const Json* given = c.value(key);
  if (!given || given->is_null()) {
    if (need) c.integers(key);  // throws: the key is missing or null
    return;
  }
  v = given->is_array() ? Shape(c.integers(key)) : Shape{c.integer(key)};
}
// A seed: a non-negative integer; null means none, absent keeps v.
inline void read(const ConfigReader& c, const char* key, std::optional<uint64_t>& v, bool) {
  if (c.has(key)) v = c.seed(key);
}
inline std::string show(int64_t v) { return std::to_string(v); }
inline std::string show(int v) { return std::to_string(v); }
inline std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
inline std::string show(bool v) { return v ? "true" : "false"; }
inline std::string show(const std::string& v) { return "\"" + v + "\""; }
inline std::string show(const Int2& v) { return detail::pair_str(v); }
inline std::string show(const Shape& v) { return v.str(); }
inline std::string show(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : "null"; }
}  // namespace fields_detail

// ZeroPadding2D's padding: written ((top, bottom), (left, right)); read from an integer (every
// side), [height, width] or [[top, bottom], [left, right]], as Keras accepts.
namespace fields_detail {
inline Json write(const Padding2D& v) { return Json::array({Json::array({v.top, v.bottom}), Json::array({v.left, v.right})}); }
inline void read(const ConfigReader& c, const char* key, Padding2D& v, bool) {
  const Json* j = c.value(key);
  if (!j) return;
  const char* expected = "an integer, [height, width] or [[top, bottom], [left, right]]";
  auto pair = [&](const Json& p) {
    if (p.is_number_integer()) return Int2(p.get<int64_t>());
    if (p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer())
      return Int2(p[0].get<int64_t>(), p[1].get<int64_t>());
    c.fail(key, expected);
  };
  if (j->is_number_integer()) {
    v = Padding2D(j->get<int64_t>());
    return;
  }
  if (!j->is_array() || j->size() != 2) c.fail(key, expected);
  v = Padding2D(pair((*j)[0]), pair((*j)[1]));
}
inline std::string show(const Padding2D& v) {
  std::string s = "(";  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "(" + std::string
  s += detail::pair_str(v.top, v.bottom);
  s += ", ";
  s += detail::pair_str(v.left, v.right);
  s += ")";
  return s;
}
}  // namespace fields_detail

template <class Args>
struct Field {
  std::string key;
  std::function<Json(const Args&)> write;
  std::function<void(const ConfigReader&, Args&)> read;
  std::function<void(const std::string& who, const Args&)> check;  // throws ValueError
};

// An argument of the layer's own: written and read under `key`, its default the struct's. `rule`
// (optional) checks it.
template <class Args, class Get, class Rule = std::nullptr_t>
Field<Args> field(const char* key, Get get, Rule rule = nullptr, bool need = false) {
  using T = std::remove_cvref_t<decltype(get(std::declval<Args&>()))>;
  Field<Args> f{key, [get](const Args& a) { return fields_detail::write(get(a)); },
                [get, key, need](const ConfigReader& c, Args& a) { fields_detail::read(c, key, get(a), need); }, nullptr};
  if constexpr (!std::is_same_v<Rule, std::nullptr_t>)
    f.check = [get, key, rule](const std::string& who, const Args& a) {
      const T& v = get(a);
      const std::string expected = rule(v);
      if (!expected.empty()) throw ValueError(who + ": " + key + " must be " + expected + ", got " + fields_detail::show(v));
    };
  return f;
}

// The same, for an argument without a default: a config must give it.
template <class Args, class Get, class Rule = std::nullptr_t>
Field<Args> required(const char* key, Get get, Rule rule = nullptr) {
  return field<Args>(key, get, rule, true);
}

// An initializer (a tandem::Initializer, or a std::string of a Keras name), written as Keras's
// {"module", "class_name", "config", "registered_name"} dict and read from it or from a name.
template <class Args, class Get>
Field<Args> initializer(const char* key, Get get) {
  using T = std::remove_cvref_t<decltype(get(std::declval<Args&>()))>;
  return {key, [get](const Args& a) { return initializer_json(Initializer(get(a))); },
          [get, key](const ConfigReader& c, Args& a) {
            const Initializer i = c.initializer(key, Initializer(get(a)));
            if constexpr (std::is_same_v<T, std::string>) {
              // A layer that keeps a name can take only what a name says: Keras's defaults, no seed.
              if (!(i == Initializer(i.class_name)))
                c.fail(key, i.class_name + " with its default arguments and no seed (this layer takes initializers by name)");
              get(a) = initializer_name(i);
            } else {
              get(a) = i;
            }
          },
          nullptr};
}

// A regularizer or a constraint (tandem::Regularizer, tandem::Constraint): written as Keras's dict,
// null when none; read from the dict, a name or null.
template <class Args, class Get>
Field<Args> regularizer(std::string key, Get get) {
  return {key, [get](const Args& a) { return regularizer_json(get(a)); },
          [get, key](const ConfigReader& c, Args& a) { get(a) = c.regularizer(key.c_str()); },
          [get, key](const std::string& who, const Args& a) { check_regularizer(get(a), who + ": " + key); }};
}
template <class Args, class Get>
Field<Args> constraint(std::string key, Get get) {
  return {key, [get](const Args& a) { return constraint_json(get(a)); },
          [get, key](const ConfigReader& c, Args& a) { get(a) = c.constraint(key.c_str()); },
          [get, key](const std::string& who, const Args& a) { check_constraint(get(a), who + ": " + key); }};
}

// One weight's penalty arguments in a layer's options: Keras's <weight>_regularizer and
// <weight>_constraint, as members of `Options`.
template <class Options>
struct WeightPenalty {
  const char* weight;  // "kernel", "depthwise", "gamma", ...
  Regularizer Options::*regularizer;
  Constraint Options::*constraint;
};

// The penalty fields of a layer's weights, in Keras's order: each weight's <weight>_regularizer,
// then activity_regularizer (when `activity` is given: the layer writes it among its own
// arguments, as Keras's convolutions do), then each weight's <weight>_constraint. `options`
// returns the options that hold them:
//   using O = SeparableConv2DOptions;
//   weight_penalties<SeparableConv2DArgs>([](auto& a) -> auto& { return a.options; },
//       {{"depthwise", &O::depthwise_regularizer, &O::depthwise_constraint},
//        {"pointwise", &O::pointwise_regularizer, &O::pointwise_constraint},
//        {"bias", &O::bias_regularizer, &O::bias_constraint}},
//       &O::activity_regularizer)
// The layer then passes each to add_weight and, unless it applies the activity regularizer
// itself, calls set_activity_regularizer(options.activity_regularizer) in its constructor (a
// layer without the field has activity_regularizer written and read by its base config).
template <class Args, class Get, class Options = std::remove_cvref_t<decltype(std::declval<Get>()(std::declval<Args&>()))>>
std::vector<Field<Args>> weight_penalties(Get options, std::initializer_list<WeightPenalty<Options>> weights,
                                          Regularizer Options::*activity = nullptr) {
  std::vector<Field<Args>> out;
  for (const WeightPenalty<Options>& w : weights) {
    const auto member = w.regularizer;
    out.push_back(regularizer<Args>(std::string(w.weight).append("_regularizer"),
                                    [options, member](auto& a) -> auto& { return options(a).*member; }));
  }
  if (activity)
    out.push_back(regularizer<Args>("activity_regularizer", [options, activity](auto& a) -> auto& { return options(a).*activity; }));
  for (const WeightPenalty<Options>& w : weights) {
    const auto member = w.constraint;
    out.push_back(constraint<Args>(std::string(w.weight).append("_constraint"),
                                   [options, member](auto& a) -> auto& { return options(a).*member; }));
  }
  return out;
}

// The penalty fields of a layer with a kernel and a bias, for options with Keras's member names
// (kernel_regularizer, bias_regularizer, kernel_constraint, bias_constraint): one entry of a
// field table,
//   const Fields<Conv2DArgs> kFields({...the layer's own fields...},
//                                    kernel_bias_penalties<Conv2DArgs>([](auto& a) -> auto& { return a.options; }));
// `with_activity`: activity_regularizer among them too (see weight_penalties).
template <class Args, class Get, class Options = std::remove_cvref_t<decltype(std::declval<Get>()(std::declval<Args&>()))>>
std::vector<Field<Args>> kernel_bias_penalties(Get options, bool with_activity = false) {
  return weight_penalties<Args>(options,
                                {{"kernel", &Options::kernel_regularizer, &Options::kernel_constraint},
                                 {"bias", &Options::bias_regularizer, &Options::bias_constraint}},
                                with_activity ? &Options::activity_regularizer : nullptr);
}

// An activation's name ("" and "linear" are the identity, written "linear"; an alias such as
// "swish" is written as Keras writes it, "silu"), checked against the activations Tandem has.
template <class Args, class Get>
Field<Args> activation(const char* key, Get get) {
  return {key,
          [get](const Args& a) { return Json(activation_config_name(get(a))); },
          [get, key](const ConfigReader& c, Args& a) { get(a) = c.activation(key); },
          [get](const std::string& who, const Args& a) { check_activation(get(a), who); }};
}

// A Keras argument Tandem implements with one value only (data_format "channels_last"): written
// as that value, and a config with another is refused naming the key.
template <class Args>
Field<Args> fixed(const char* key, Json value) {
  return {key, [value](const Args&) { return value; }, [key, value](const ConfigReader& c, Args&) { c.expect(key, value); }, nullptr};
}

// A Keras argument Tandem does not implement (quantization_config, renorm_clipping): written as null, as
// Keras writes it when unused, and refused when a config sets it.
template <class Args>
Field<Args> unused(const char* key) {
  return {key, [](const Args&) { return Json(nullptr); }, [key](const ConfigReader& c, Args&) { c.expect_null({key}); }, nullptr};
}

// A shape led by the batch dimension (InputLayer's batch_shape): the struct holds the sample shape,
// written [null, d1, d2, ...]; a config must give it, every dimension after the batch one a
// positive size. `old_key` (optional): the key older Keras wrote it under, read when `key` is absent.
template <class Args, class Get>
Field<Args> batch_shape(const char* key, Get get, const char* old_key = nullptr) {
  return {key,
          [get](const Args& a) {
            Json dims = Json::array({nullptr});
            for (int64_t d : get(a).dims()) dims.push_back(d);
            return dims;
          },
          [get, key, old_key](const ConfigReader& c, Args& a) {
            const char* k = old_key && !c.has(key) ? old_key : key;
            const Json* dims = c.value(k);
            if (!dims || !dims->is_array() || dims->empty()) c.fail(k, "a list [null, d1, d2, ...] (the batch dimension first)");
            std::vector<int64_t> out;
            for (std::size_t i = 1; i < dims->size(); ++i) {
              const Json& d = (*dims)[i];
              if (!d.is_number_integer() || d.get<int64_t>() <= 0)
                c.fail(k, "positive sizes after the batch dimension (Tandem needs every dimension but the batch one known)");
              out.push_back(d.get<int64_t>());
            }
            get(a) = Shape(out);
          },
          nullptr};
}

// A field that is read but not written: Keras accepts the argument and leaves it out of the config
// it writes (SimpleRNN's seed).
template <class Args>
Field<Args> read_only(Field<Args> f) {
  f.write = nullptr;
  return f;
}

template <class Args>
class Fields {
 public:
  Fields(std::initializer_list<Field<Args>> fields) : fields_(fields) {}
  explicit Fields(std::vector<Field<Args>> fields) : fields_(std::move(fields)) {}
  // A table and a group of standard fields after it (kernel_bias_penalties).
  Fields(std::initializer_list<Field<Args>> fields, std::vector<Field<Args>> more) : fields_(fields) {
    fields_.insert(fields_.end(), more.begin(), more.end());
  }

  // Throws ValueError for the first field whose value its rule refuses; `who` names the layer.
  void check(const std::string& who, const Args& a) const {
    for (const Field<Args>& f : fields_)
      if (f.check) f.check(who, a);
  }
  // Every field's key and value, in the table's order.
  Json write(const Args& a) const {
    Json args = Json::object();
    for (const Field<Args>& f : fields_)
      if (f.write) args[f.key] = f.write(a);
    return args;
  }
  // The layer's config: Keras's leading keys (name, trainable, dtype), then write(a).
  std::string config_text(const Layer& layer, const Args& a) const { return layers::config_text(layer, write(a)); }
  // The arguments a config gives, the struct's defaults where it gives none.
  Args read(const ConfigReader& c, Args a = {}) const {
    for (const Field<Args>& f : fields_) f.read(c, a);
    return a;
  }

 private:
  std::vector<Field<Args>> fields_;
};

}  // namespace tandem::layers
