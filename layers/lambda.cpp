// Lambda: a layer that calls a C++ function of symbols registered by name. The config names the
// function as Keras names a registered (non-lambda) function, so the model saves and loads in
// Tandem; Keras itself cannot run the C++ function.
#include <nlohmann/json.hpp>

#include "core/registry.h"
#include "layers/config.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct LambdaRegistry : core::Registry<std::string, LambdaFn> {
  LambdaRegistry() : Registry("lambda function") {}
};
LambdaRegistry& registry() {
  static LambdaRegistry r;
  return r;
}

const LambdaFn& registered_function(const std::string& who, const std::string& name) {
  const LambdaFn* fn = registry().find(name);
  if (!fn)
    throw ValueError(who + ": no function is registered as \"" + name +
                     "\"; call layers::register_lambda(\"" + name + "\", fn) before making or loading the layer");
  return *fn;
}

class LambdaLayer : public Layer {
 public:
  LambdaLayer(std::string function, LambdaOptions o) : Layer("lambda", o.name), function_(std::move(function)), options_(std::move(o)) {
    registered_function(who(), function_);
  }
  std::string class_name() const override { return "Lambda"; }
  std::string config_json() const override {
    // Keras's serialize_keras_object of a named function, then output_shape (when given) and the
    // (empty) arguments.
    Json args{{"function", {{"module", "builtins"}, {"class_name", "function"}, {"config", function_}, {"registered_name", "function"}}}};
    if (options_.output_shape) args["output_shape"] = options_.output_shape->dims();
    args["arguments"] = Json::object();
    return config_text(*this, args);
  }

 protected:
  Symbol call(const std::vector<Symbol>& inputs, bool) override {
    Symbol y = registered_function(who(), function_)(inputs);
    if (options_.output_shape && y.shape().without_batch() != *options_.output_shape)
      throw ShapeError(who() + ": function \"" + function_ + "\" returned shape " + y.shape().without_batch().with_batch(-1).str() +
                       ", but output_shape is " + options_.output_shape->with_batch(-1).str());
    return y;
  }

 private:
  std::string function_;
  LambdaOptions options_;
};

const RegisterLayer registered("Lambda", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  const Json* fn = c.value("function");
  if (fn && fn->is_object() && fn->value("class_name", "") == "__lambda__")
    throw ValueError("Lambda \"" + c.name() +
                     "\": its function is a Python lambda (Python bytecode), which only Keras can run; in Tandem, "
                     "register a C++ function with layers::register_lambda and make the layer with layers::Lambda(name)");
  if (!fn || !fn->is_object() || !fn->contains("config") || !fn->at("config").is_string())
    c.fail("function", "a registered function's name ({\"class_name\": \"function\", \"config\": name})");
  LambdaOptions o{.name = c.name()};
  if (const Json* s = c.value("output_shape"); s && !s->is_null()) o.output_shape = Shape(c.integers("output_shape"));
  if (const Json* a = c.value("arguments"); a && !a->is_null() && !(a->is_object() && a->empty()))
    c.fail("arguments", "empty (a C++ function takes no keyword arguments from the config)");
  c.expect_null({"mask"});
  return std::make_shared<LambdaLayer>(fn->at("config").get<std::string>(), std::move(o));
});
}  // namespace

void register_lambda(const std::string& name, LambdaFn fn, std::source_location where) {
  if (name.empty()) throw ValueError("register_lambda: the name is empty");
  if (!fn) throw ValueError("register_lambda(\"" + name + "\"): the function is empty");
  registry().add(name, std::move(fn), where);
}

LayerRef Lambda(const std::string& function, const LambdaOptions& options) {
  return LayerRef(std::make_shared<LambdaLayer>(function, options));
}

}  // namespace tandem::layers
