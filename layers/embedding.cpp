// Embedding: a trainable lookup table; row i is the vector of id i.
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct EmbeddingArgs {
  int64_t input_dim = 0;
  int64_t output_dim = 0;
  EmbeddingOptions options;
};

const Fields<EmbeddingArgs> kFields{
    required<EmbeddingArgs>("input_dim", [](auto& a) -> auto& { return a.input_dim; }, rules::positive),
    required<EmbeddingArgs>("output_dim", [](auto& a) -> auto& { return a.output_dim; }, rules::positive),
    initializer<EmbeddingArgs>("embeddings_initializer", [](auto& a) -> auto& { return a.options.embeddings_initializer; }),
    field<EmbeddingArgs>("mask_zero", [](auto& a) -> auto& { return a.options.mask_zero; }),
    regularizer<EmbeddingArgs>("embeddings_regularizer", [](auto& a) -> auto& { return a.options.embeddings_regularizer; }),
    regularizer<EmbeddingArgs>("activity_regularizer", [](auto& a) -> auto& { return a.options.activity_regularizer; }),
    constraint<EmbeddingArgs>("embeddings_constraint", [](auto& a) -> auto& { return a.options.embeddings_constraint; }),
    unused<EmbeddingArgs>("quantization_config"),
};

class EmbeddingLayer : public Layer {
 public:
  explicit EmbeddingLayer(EmbeddingArgs a) : Layer("embedding", a.options.name), args_(std::move(a)) {
    kFields.check(who(), args_);
    set_activity_regularizer(args_.options.activity_regularizer);
  }
  std::string class_name() const override { return "Embedding"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  void build(const std::vector<Shape>& in) override {
    if (in.size() != 1)
      throw ValueError(who() + ": expected one input of ids, got " + std::to_string(in.size()) + " inputs");
    embeddings_ = add_weight("embeddings", {args_.input_dim, args_.output_dim}, args_.options.embeddings_initializer, true,
                             args_.options.embeddings_regularizer, args_.options.embeddings_constraint);
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

  // With mask_zero, id 0 is padding: the mask is 1 where the id is not 0 (Keras's compute_mask),
  // in the layer's float dtype. Masks of the ids themselves are not passed on, as in Keras.
  std::vector<graph::Value> emit_output_masks(CallContext& ctx, const std::vector<graph::Value>& inputs,
                                              const std::vector<graph::Value>&) override {
    if (!args_.options.mask_zero) return {graph::Value{}};
    const graph::Value ids = ctx.g.type(inputs[0]).dtype == dtype() ? inputs[0] : ops::cast(ctx.g, inputs[0], dtype());
    return {ops::compare(ctx.g, "not_equal", ids, ops::fill(ctx.g, {Shape{}, dtype()}, 0.0))};
  }

 private:
  EmbeddingArgs args_;
  VariablePtr embeddings_;
};

const RegisterLayer registered("Embedding", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  c.expect_null({"lora_rank"});
  return std::make_shared<EmbeddingLayer>(kFields.read(c, {.options = {.name = c.name()}}));
});
}  // namespace

LayerRef Embedding(int64_t input_dim, int64_t output_dim, const EmbeddingOptions& options) {
  return LayerRef(std::make_shared<EmbeddingLayer>(EmbeddingArgs{input_dim, output_dim, options}));
}

}  // namespace tandem::layers
