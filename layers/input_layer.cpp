#include "layers/input_layer.h"

#include "layer_base/call_context.h"
#include "layers/config.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class InputLayerImpl : public Layer {
 public:
  InputLayerImpl(Shape shape, const std::string& name) : Layer("input_layer", name), shape_(std::move(shape)) {}
  std::string class_name() const override { return "InputLayer"; }
  std::string config_json() const override { return config_text(*this, input_layer_config(shape_, DType::F32)); }
  const Shape& shape() const { return shape_; }
  graph::Value emit(CallContext&, const std::vector<graph::Value>& inputs) override { return inputs[0]; }

 private:
  Shape shape_;
};

const RegisterLayer registered("InputLayer", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<InputLayerImpl>(input_layer_shape(c), c.name());
});
}  // namespace

Json input_layer_config(const Shape& shape, DType dtype) {
  Json batch_shape = Json::array({nullptr});
  for (int64_t d : shape.dims()) batch_shape.push_back(d);
  return {{"batch_shape", batch_shape}, {"dtype", dtype_name(dtype)}, {"sparse", false}, {"ragged", false}, {"optional", false}};
}

Shape input_layer_shape(const ConfigReader& c) {
  // Keras 3 writes batch_shape, Keras 2 batch_input_shape; both start with the batch dimension.
  const char* key = c.has("batch_shape") ? "batch_shape" : "batch_input_shape";
  const Json* dims = c.value(key);
  if (!dims || !dims->is_array() || dims->empty()) c.fail(key, "a list [null, d1, d2, ...] (the batch dimension first)");
  std::vector<int64_t> out;
  for (std::size_t i = 1; i < dims->size(); ++i) {
    const Json& d = (*dims)[i];
    if (!d.is_number_integer() || d.get<int64_t>() <= 0)
      c.fail(key, "positive sizes after the batch dimension (Tandem needs every dimension but the batch one known)");
    out.push_back(d.get<int64_t>());
  }
  c.expect("sparse", false);
  c.expect("ragged", false);
  c.expect("optional", false);
  return Shape(out);
}

DType input_layer_dtype(const ConfigReader& c) {
  const std::string name = c.string("dtype", "float32");
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (name == dtype_name(t)) return t;
  c.fail("dtype", "one of float32, float64, int32, int64");
}

LayerRef InputLayer(Shape shape, const std::string& name) { return LayerRef(std::make_shared<InputLayerImpl>(std::move(shape), name)); }

const Shape* input_layer_shape(const Layer& layer) {
  const auto* in = dynamic_cast<const InputLayerImpl*>(&layer);
  return in ? &in->shape() : nullptr;
}

}  // namespace tandem::layers
