// PositionEmbedding (keras_hub): a learned vector per sequence position, broadcast over the batch.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class PositionEmbeddingLayer : public Layer {
 public:
  PositionEmbeddingLayer(int64_t sequence_length, PositionEmbeddingOptions o)
      : Layer("position_embedding", o.name), sequence_length_(sequence_length), opts_(std::move(o)) {
    if (sequence_length_ <= 0)
      throw ValueError(who() + ": sequence_length must be positive, got " + std::to_string(sequence_length_));
  }
  std::string class_name() const override { return "PositionEmbedding"; }
  std::string config_json() const override {
    return config_text(*this, {{"sequence_length", sequence_length_}, {"initializer", initializer_json(opts_.initializer)}});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 2)
      throw ShapeError(who() + ": expected one input of rank >= 3 (batch, sequence, features), got " +
                       (in.size() == 1 ? "rank " + std::to_string(in[0].rank() + 1) : std::to_string(in.size()) + " inputs"));
    embeddings_ = add_weight("embeddings", {sequence_length_, in[0].back()}, opts_.initializer);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape x = ctx.g.type(inputs[0]).shape;
    const int64_t features = embeddings_->value().shape()[1];
    const std::string got = x.without_batch().with_batch(-1).str();
    if (x.rank() < 3 || x.back() != features)
      throw ShapeError(who() + ": expected input (batch, ..., sequence, " + std::to_string(features) + "), got " + got);
    if (x[-2] > sequence_length_)
      throw ShapeError(who() + ": the input's sequence length " + std::to_string(x[-2]) +
                       " exceeds the layer's sequence_length " + std::to_string(sequence_length_) + " (input " + got + ")");
    const graph::Value rows = ops::slice(ctx.g, ctx.variable(*embeddings_), 0, 0, x[-2]);
    return ops::broadcast_to(ctx.g, rows, x);
  }

 private:
  std::string who() const { return "PositionEmbedding \"" + name() + "\""; }
  int64_t sequence_length_;
  PositionEmbeddingOptions opts_;
  VariablePtr embeddings_;
};

const RegisterLayer registered("PositionEmbedding", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<PositionEmbeddingLayer>(
      c.integer("sequence_length"),
      PositionEmbeddingOptions{.initializer = c.initializer("initializer", "glorot_uniform"), .name = c.name()});
});
}  // namespace

LayerRef PositionEmbedding(int64_t sequence_length, const PositionEmbeddingOptions& options) {
  return LayerRef(std::make_shared<PositionEmbeddingLayer>(sequence_length, options));
}

}  // namespace tandem::layers
