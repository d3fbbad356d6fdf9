// Embedding: a trainable lookup table; row i is the vector of id i.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
class EmbeddingLayer : public Layer {
 public:
  EmbeddingLayer(int64_t input_dim, int64_t output_dim, EmbeddingOptions o)
      : Layer("embedding", o.name), input_dim_(input_dim), output_dim_(output_dim), opts_(std::move(o)) {
    if (input_dim_ <= 0)
      throw ValueError(who() + ": input_dim must be positive, got " + std::to_string(input_dim_));
    if (output_dim_ <= 0)
      throw ValueError(who() + ": output_dim must be positive, got " + std::to_string(output_dim_));
  }
  std::string class_name() const override { return "Embedding"; }
  std::string config_json() const override {
    return config_text(*this, {{"input_dim", input_dim_},
                               {"output_dim", output_dim_},
                               {"embeddings_initializer", initializer_json(opts_.embeddings_initializer)},
                               {"mask_zero", false}},
                       {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint", "quantization_config"});
  }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1)
      throw ValueError(who() + ": expected one input of ids, got " + std::to_string(in.size()) + " inputs");
    embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, opts_.embeddings_initializer);
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Value ids = inputs[0];
    const TensorType t = ctx.g.type(ids);
    if (t.shape.rank() < 1)
      throw ShapeError(who() + ": expected ids with a batch axis, got a scalar");
    // Keras casts non-integer ids to int32 (truncating).
    if (t.dtype != DType::I32 && t.dtype != DType::I64) ids = ops::cast(ctx.g, ids, DType::I32);
    return ops::gather(ctx.g, ctx.variable(*embeddings_), ids, who());
  }

 private:
  std::string who() const { return "Embedding \"" + name() + "\""; }
  int64_t input_dim_, output_dim_;
  EmbeddingOptions opts_;
  VariablePtr embeddings_;
};

const RegisterLayer registered("Embedding", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect("mask_zero", false);
  c.expect_null({"quantization_config", "lora_rank"});
  return std::make_shared<EmbeddingLayer>(
      c.integer("input_dim"), c.integer("output_dim"),
      EmbeddingOptions{.embeddings_initializer = c.initializer("embeddings_initializer", "uniform"), .name = c.name()});
});
}  // namespace

LayerRef Embedding(int64_t input_dim, int64_t output_dim, const EmbeddingOptions& options) {
  return LayerRef(std::make_shared<EmbeddingLayer>(input_dim, output_dim, options));
}

}  // namespace tandem::layers
