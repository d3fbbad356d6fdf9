// Compile settings as Keras writes them: the optimizer (with its learning-rate schedule and
// clipping), the loss and the metrics, in a legacy `.h5` file's training_config or a `.keras`
// archive's compile_config, and the optimizer and loss rebuilt from them.
#include "config/config_reader.h"
#include "metrics/stateful.h"
#include "model/model_config.h"
#include "tandem/errors.h"
#include "tandem/losses.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

namespace {

using config::ConfigReader;

struct ClassName {
  const char* name;  // Tandem's
  const char* cls;   // Keras's
};
constexpr ClassName kLosses[] = {{"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
                                 {"categorical_crossentropy", "CategoricalCrossentropy"},
                                 {"binary_crossentropy", "BinaryCrossentropy"},
                                 {"mean_squared_error", "MeanSquaredError"},
                                 {"mean_absolute_error", "MeanAbsoluteError"},
                                 {"huber_loss", "Huber"},
                                 {"log_cosh", "LogCosh"},
                                 {"poisson", "Poisson"},
                                 {"kl_divergence", "KLDivergence"}};

template <std::size_t N>
std::string class_of(const ClassName (&table)[N], const std::string& name) {
  for (const ClassName& c : table)
    if (name == c.name) return c.cls;
  return name;  // a custom class: saved under its own name, which load_model will not know
}

template <std::size_t N>
std::string class_list(const ClassName (&table)[N]) {
  std::string s;
  for (const ClassName& c : table) s += (s.empty() ? "" : ", ") + std::string(c.cls);
  return s;
}

OptimizerPtr optimizer_of_class(const std::string& cls, const ConfigReader& c);
LossPtr loss_of_class(const std::string& cls, const ConfigReader& c);

OptimizerPtr optimizer_from(const Json& v) {
  if (v.is_string()) return optimizers::get(v.get<std::string>());
  const std::string cls = string_member(v, "class_name", "training_config: optimizer_config");
  const Json empty = Json::object();
  const ConfigReader c(cls, v.contains("config") ? v.at("config") : empty);
  OptimizerPtr optimizer = optimizer_of_class(cls, c);
  c.check_all_read();
  return optimizer;
}

// An optimizer's learning_rate: a number, or a schedule as Keras serialises it.
LearningRate learning_rate_from(const ConfigReader& c, double fallback) {
  const Json* v = c.value("learning_rate");
  if (!v || !v->is_object()) return c.number("learning_rate", fallback);
  const std::string cls = string_member(*v, "class_name", "training_config: learning_rate");
  const Json empty = Json::object();
  const ConfigReader s(cls, v->contains("config") ? v->at("config") : empty);
  s.value("name");
  SchedulePtr schedule;
  if (cls == "ExponentialDecay") {
    schedule = schedules::ExponentialDecay(s.number("initial_learning_rate"), s.integer("decay_steps"), s.number("decay_rate"),
                                           s.boolean("staircase", false));
  } else if (cls == "CosineDecay") {
    const Json* target = s.value("warmup_target");
    schedule = schedules::CosineDecay(s.number("initial_learning_rate"), s.integer("decay_steps"),
                                      {.alpha = s.number("alpha", 0.0),
                                       .warmup_target = target && !target->is_null() ? std::optional<double>(s.number("warmup_target")) : std::nullopt,
                                       .warmup_steps = s.integer("warmup_steps", 0)});
  } else if (cls == "PiecewiseConstantDecay") {
    const Json* values = s.value("values");
    if (!values || !values->is_array()) s.fail("values", "a list of numbers");
    std::vector<double> rates;
    for (const Json& r : *values) {
      if (!r.is_number()) s.fail("values", "a list of numbers");
      rates.push_back(r.get<double>());
    }
    schedule = schedules::PiecewiseConstantDecay(s.integers("boundaries"), rates);
  } else {
    throw ValueError("training_config: unknown learning-rate schedule class \"" + cls +
                     "\"; expected ExponentialDecay, CosineDecay or PiecewiseConstantDecay");
  }
  s.check_all_read();
  return schedule;
}

// The optimizer of Keras class `cls`, from the keys Keras 3 writes for it.
OptimizerPtr optimizer_of_class(const std::string& cls, const ConfigReader& c) {
  c.value("name");
  if (cls == "LossScaleOptimizer") {
    const Json* inner = c.value("inner_optimizer");
    if (!inner) throw ValueError("training_config: LossScaleOptimizer has no inner_optimizer");
    const LossScaleOptions d;
    return optimizers::LossScaleOptimizer(optimizer_from(*inner), {c.number("initial_scale", d.initial_scale),
                                                                     c.integer("dynamic_growth_steps", d.dynamic_growth_steps)});
  }
  c.expect_null({"loss_scale_factor", "gradient_accumulation_steps", "ema_overwrite_frequency"});
  GradientClipping clipping;
  for (auto [key, field] : {std::pair{"clipnorm", &clipping.clipnorm}, {"global_clipnorm", &clipping.global_clipnorm}, {"clipvalue", &clipping.clipvalue}})
    if (const Json* v = c.value(key); v && !v->is_null()) *field = c.number(key);
  c.expect("use_ema", false);
  c.number("ema_momentum", 0.99);  // used only with use_ema
  // Every optimizer takes weight_decay (null: none); AdamW's default is its own.
  std::optional<double> weight_decay;
  if (const Json* v = c.value("weight_decay"); v && !v->is_null()) weight_decay = c.number("weight_decay");
  if (cls == "SGD") {
    const optimizers::SGDOptions d;
    return optimizers::SGD(learning_rate_from(c, 0.01), {c.number("momentum", d.momentum), c.boolean("nesterov", d.nesterov), weight_decay, clipping});
  }
  if (cls == "Adam") {
    c.expect("amsgrad", false);
    const optimizers::AdamOptions d;
    return optimizers::Adam(learning_rate_from(c, 0.001),
                            {c.number("beta_1", d.beta_1), c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), weight_decay, clipping});
  }
  if (cls == "AdamW") {
    c.expect("amsgrad", false);
    const optimizers::AdamWOptions d;
    return optimizers::AdamW(learning_rate_from(c, 0.001), {weight_decay.value_or(d.weight_decay), c.number("beta_1", d.beta_1),
                                                                c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), clipping});
  }
  if (cls == "RMSprop") {
    c.expect("centered", false);
    const optimizers::RMSpropOptions d;
    return optimizers::RMSprop(learning_rate_from(c, 0.001),
                               {c.number("rho", d.rho), c.number("momentum", d.momentum), c.number("epsilon", d.epsilon), weight_decay, clipping});
  }
  if (cls == "Adagrad") {
    const optimizers::AdagradOptions d;
    return optimizers::Adagrad(learning_rate_from(c, 0.001), {c.number("initial_accumulator_value", d.initial_accumulator_value),
                                                              c.number("epsilon", d.epsilon), weight_decay, clipping});
  }
  if (cls == "Nadam") {
    const optimizers::NadamOptions d;
    return optimizers::Nadam(learning_rate_from(c, 0.001),
                             {c.number("beta_1", d.beta_1), c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), weight_decay, clipping});
  }
  if (cls == "Adamax") {
    const optimizers::AdamaxOptions d;
    return optimizers::Adamax(learning_rate_from(c, 0.001),
                              {c.number("beta_1", d.beta_1), c.number("beta_2", d.beta_2), c.number("epsilon", d.epsilon), weight_decay, clipping});
  }
  if (cls == "Lion") {
    const optimizers::LionOptions d;
    return optimizers::Lion(learning_rate_from(c, 0.001), {c.number("beta_1", d.beta_1), c.number("beta_2", d.beta_2), weight_decay, clipping});
  }
  throw ValueError("training_config: unknown optimizer class \"" + cls + "\"; expected one of " + optimizers::keras_class_names());
}

LossPtr loss_from(const Json& v) {
  if (v.is_string()) return losses::get(v.get<std::string>());
  const std::string cls = string_member(v, "class_name", "training_config: loss");
  const Json empty = Json::object();
  const ConfigReader c(cls, v.contains("config") ? v.at("config") : empty);
  LossPtr loss = loss_of_class(cls, c);
  c.check_all_read();
  return loss;
}

// The loss of Keras class `cls`, from the keys Keras 3 writes for it.
LossPtr loss_of_class(const std::string& cls, const ConfigReader& c) {
  c.value("name");
  c.expect("reduction", "sum_over_batch_size");
  c.expect_null({"ignore_class"});
  c.expect("axis", -1);
  const losses::CrossentropyOptions o{.from_logits = c.boolean("from_logits", false), .label_smoothing = c.number("label_smoothing", 0.0)};
  if (cls == "SparseCategoricalCrossentropy") return losses::SparseCategoricalCrossentropy(o);
  if (cls == "CategoricalCrossentropy") return losses::CategoricalCrossentropy(o);
  if (cls == "BinaryCrossentropy") return losses::BinaryCrossentropy(o);
  if (cls == "MeanSquaredError") return losses::MeanSquaredError();
  if (cls == "MeanAbsoluteError") return losses::MeanAbsoluteError();
  if (cls == "Huber") return losses::Huber(c.number("delta", 1.0));  // Keras writes no delta: its 1.0
  if (cls == "LogCosh") return losses::LogCosh();
  if (cls == "Poisson") return losses::Poisson();
  if (cls == "KLDivergence") return losses::KLDivergence();
  throw ValueError("training_config: unknown loss class \"" + cls + "\"; expected one of " + class_list(kLosses));
}

}  // namespace

Json compile_config(const CompileSettings& s, ConfigForm form) {
  auto object = [&](const char* module, const std::string& cls, const Json& config) {
    if (form == ConfigForm::hdf5) return Json{{"class_name", cls}, {"config", config}};
    return Json{{"module", module}, {"class_name", cls}, {"config", config}, {"registered_name", nullptr}};
  };
  // A LossScaleOptimizer that compile made for a float16 policy is not the user's: Keras saves the
  // optimizer given to compile, which compile wraps again on loading.
  const auto* scaling = dynamic_cast<const LossScaleOptimizer*>(s.optimizer.get());
  const Optimizer& given = scaling && scaling->made_by_compile ? *scaling->inner_optimizer() : *s.optimizer;
  const Json optimizer = object("keras.optimizers", optimizers::keras_class_name(given.name()),
                                parse_object(given.config_json(), "optimizer \"" + given.name() + "\""));
  // A registered loss function is saved by name, which load_model looks up with losses::get.
  auto loss_json = [&](const LossPtr& l) {
    const std::string cls = class_of(kLosses, l->name());
    return cls == l->name() ? Json(l->name()) : object("keras.losses", cls, parse_object(l->config_json(), "loss \"" + l->name() + "\""));
  };
  // A metric made with F1Score, R2Score or MeanIoU as Keras's metric object; others by name.
  auto metric_list = [&](const std::vector<std::string>& names) {
    Json list = Json::array();
    for (const std::string& m : names) {
      const metrics::StatefulPtr made = metrics::find_stateful(m);
      list.push_back(made ? object("keras.metrics", made->class_name(), made->config()) : Json(m));
    }
    return list;
  };
  // One output as Keras writes a single-output model; several as lists, one entry per output.
  Json loss, metrics, weights = nullptr;
  if (s.losses.size() == 1) {
    loss = loss_json(s.losses[0]);
    metrics = s.metrics.empty() ? Json::array() : metric_list(s.metrics[0]);
    if (s.loss_weights.size() == 1 && s.loss_weights[0] != 1.0) weights = s.loss_weights;
  } else {
    loss = Json::array();
    for (const LossPtr& l : s.losses) loss.push_back(loss_json(l));
    metrics = Json::array();
    for (const std::vector<std::string>& per_output : s.metrics) metrics.push_back(metric_list(per_output));
    weights = s.loss_weights;
  }
  if (form == ConfigForm::hdf5)
    return {{"loss", loss}, {"metrics", metrics}, {"loss_weights", weights}, {"weighted_metrics", nullptr}, {"optimizer_config", optimizer}};
  return {{"optimizer", optimizer},   {"loss", loss},        {"loss_weights", weights},   {"metrics", metrics},
          {"weighted_metrics", nullptr}, {"run_eagerly", false}, {"steps_per_execution", 1}, {"jit_compile", s.jit_compile}};
}

CompileSettings compile_from_config(const Json& config) {
  CompileSettings s;
  // Keras's legacy `.h5` calls it optimizer_config, a `.keras` archive's compile_config optimizer.
  s.optimizer = optimizer_from(member(config, config.contains("optimizer") ? "optimizer" : "optimizer_config", "training_config"));
  // A list of losses is one per output (a loss object is a JSON object, never a list).
  const Json& loss = member(config, "loss", "training_config");
  if (loss.is_array())
    for (const Json& l : loss) s.losses.push_back(loss_from(l));
  else
    s.losses.push_back(loss_from(loss));
  if (config.contains("loss_weights") && !config.at("loss_weights").is_null()) {
    const Json& w = config.at("loss_weights");
    if (!w.is_array()) throw ValueError("training_config: \"loss_weights\" must be a list of numbers, got " + shorten(w.dump()));
    for (const Json& v : w) {
      if (!v.is_number()) throw ValueError("training_config: \"loss_weights\" must be a list of numbers, got " + shorten(w.dump()));
      s.loss_weights.push_back(v.get<double>());
    }
  }
  // A list of names (or Keras metric objects: F1Score, R2Score, MeanIoU) is for every output; a
  // list of lists, one per output.
  auto names = [](const Json& list) {
    std::vector<std::string> out;
    if (!list.is_array()) throw ValueError("training_config: \"metrics\" must be a list of names, got " + shorten(list.dump()));
    for (const Json& m : list) {
      if (m.is_object()) {
        out.push_back(metrics::stateful_from_config(m));
        continue;
      }
      if (!m.is_string()) throw ValueError("training_config: \"metrics\" must be a list of names, got " + shorten(list.dump()));
      out.push_back(m.get<std::string>());
    }
    return out;
  };
  if (config.contains("metrics") && !config.at("metrics").is_null()) {
    const Json& metrics = config.at("metrics");
    if (metrics.is_array() && !metrics.empty() && metrics[0].is_array())
      for (const Json& per_output : metrics) s.metrics.push_back(names(per_output));
    else
      s.metrics.push_back(names(metrics));
  }
  return s;
}

}  // namespace tandem::detail
