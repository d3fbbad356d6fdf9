// PositionEmbedding (keras_hub): a learned vector per sequence position, broadcast over the batch.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct PositionEmbeddingArgs {
  int64_t sequence_length = 0;
  PositionEmbeddingOptions options;
};

const Fields<PositionEmbeddingArgs> kFields{
    required<PositionEmbeddingArgs>("sequence_length", [](auto& a) -> auto& { return a.sequence_length; }, rules::positive),
    initializer<PositionEmbeddingArgs>("initializer", [](auto& a) -> auto& { return a.options.initializer; }),
};

class PositionEmbeddingLayer : public Layer {
 public:
  explicit PositionEmbeddingLayer(PositionEmbeddingArgs a) : Layer("position_embedding", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
  }
  std::string class_name() const override { return "PositionEmbedding"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1 || in[0].rank() < 2)
      throw ShapeError(who() + ": expected one input of rank >= 3 (batch, sequence, features), got " +
                       (in.size() == 1 ? "rank " + std::to_string(in[0].rank() + 1) : std::to_string(in.size()) + " inputs"));
    embeddings_ = add_weight("embeddings", {args_.sequence_length, in[0].back()}, args_.options.initializer);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    const Shape x = ctx.g.type(inputs[0]).shape;
    const int64_t features = embeddings_->value().shape()[1];
    const std::string got = x.without_batch().with_batch(-1).str();
    if (x.rank() < 3 || x.back() != features)
      throw ShapeError(who() + ": expected input (batch, ..., sequence, " + std::to_string(features) + "), got " + got);
    if (x[-2] > args_.sequence_length)
      throw ShapeError(who() + ": the input's sequence length " + std::to_string(x[-2]) +
                       " exceeds the layer's sequence_length " + std::to_string(args_.sequence_length) + " (input " + got + ")");
    const graph::Value rows = ops::slice(ctx.g, ctx.variable(*embeddings_), 0, 0, x[-2]);
    return ops::broadcast_to(ctx.g, rows, x);
  }

 private:
  PositionEmbeddingArgs args_;
  VariablePtr embeddings_;
};

const RegisterLayer registered("PositionEmbedding", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  return std::make_shared<PositionEmbeddingLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef PositionEmbedding(int64_t sequence_length, const PositionEmbeddingOptions& options) {
  return LayerRef(std::make_shared<PositionEmbeddingLayer>(PositionEmbeddingArgs{sequence_length, options}));
}

}  // namespace tandem::layers
