#include "layers/input_layer.h"

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
// InputLayer's arguments, and a functional model's inputs' (whose dtype may be another).
struct InputLayerArgs {
  Shape shape;  // batch excluded
  DType dtype = DType::F32;
  std::string name;
};

const Fields<InputLayerArgs> kFields{
    // Keras 3 writes batch_shape, Keras 2 batch_input_shape; both start with the batch dimension.
    batch_shape<InputLayerArgs>("batch_shape", [](auto& a) -> auto& { return a.shape; }, "batch_input_shape"),
    // Written as the input's dtype name; read by input_layer_dtype, and for the layer itself (which
    // is float32) by the reading every layer's config has (ConfigReader::read_layer_basics).
    Field<InputLayerArgs>{"dtype", [](const InputLayerArgs& a) { return Json(dtype_name(a.dtype)); },
                          [](const ConfigReader&, InputLayerArgs&) {}, nullptr},
    fixed<InputLayerArgs>("sparse", false),
    fixed<InputLayerArgs>("ragged", false),
    fixed<InputLayerArgs>("optional", false),
};

class InputLayerImpl : public Layer {
 public:
  explicit InputLayerImpl(InputLayerArgs a) : Layer("input_layer", a.name), args_(std::move(a)) { kFields.check(who(), args_); }
  std::string class_name() const override { return "InputLayer"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }
  const Shape& shape() const { return args_.shape; }
  graph::Value emit(CallContext&, const std::vector<graph::Value>& inputs) override { return inputs[0]; }

 private:
  InputLayerArgs args_;
};

const RegisterLayer registered("InputLayer", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<InputLayerImpl>(kFields.read(c, {.name = c.name()}));
});
}  // namespace

Json input_layer_config(const Shape& shape, DType dtype) { return kFields.write({.shape = shape, .dtype = dtype}); }

Shape input_layer_shape(const ConfigReader& c) { return kFields.read(c).shape; }

DType input_layer_dtype(const ConfigReader& c) {
  const std::string name = c.string("dtype", dtype_name(InputLayerArgs{}.dtype));
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (name == dtype_name(t)) return t;
  c.fail("dtype", "one of float32, float64, int32, int64");
}

LayerRef InputLayer(Shape shape, const std::string& name) {
  return LayerRef(std::make_shared<InputLayerImpl>(InputLayerArgs{.shape = std::move(shape), .name = name}));
}

const Shape* input_layer_shape(const Layer& layer) {
  const auto* in = dynamic_cast<const InputLayerImpl*>(&layer);
  return in ? &in->shape() : nullptr;
}

}  // namespace tandem::layers
