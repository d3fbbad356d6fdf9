#include "layers/input_layer.h"

#include "model/call_context.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class InputLayerImpl : public Layer {
 public:
  InputLayerImpl(Shape shape, const std::string& name) : Layer("input_layer", name), shape_(std::move(shape)) {}
  std::string class_name() const override { return "InputLayer"; }
  const Shape& shape() const { return shape_; }
  graph::Value call(CallContext&, const std::vector<graph::Value>& inputs) override { return inputs[0]; }

 private:
  Shape shape_;
};
}  // namespace

LayerRef InputLayer(Shape shape, const std::string& name) { return LayerRef(std::make_shared<InputLayerImpl>(std::move(shape), name)); }

const Shape* input_layer_shape(const Layer& layer) {
  const auto* in = dynamic_cast<const InputLayerImpl*>(&layer);
  return in ? &in->shape() : nullptr;
}

}  // namespace tandem::layers
