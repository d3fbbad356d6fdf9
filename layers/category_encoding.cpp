// CategoryEncoding (Keras 3 on JAX): integer ids to one-hot, multi-hot or count encodings built
// from the one_hot op. Ids outside [0, num_tokens) add nothing, as jax.nn.one_hot gives them zeros.
#include "layer_base/call_context.h"
#include "layers/category_encode.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct CategoryEncodingArgs {
  int64_t num_tokens = 0;
  CategoryEncodingOptions options;
};

const Fields<CategoryEncodingArgs> kFields{
    required<CategoryEncodingArgs>("num_tokens", [](auto& a) -> auto& { return a.num_tokens; }, rules::positive),
    field<CategoryEncodingArgs>("output_mode", [](auto& a) -> auto& { return a.options.output_mode; },
                                rules::one_of({"one_hot", "multi_hot", "count"})),
};

class CategoryEncodingLayer : public Layer {
 public:
  explicit CategoryEncodingLayer(CategoryEncodingArgs a) : Layer("category_encoding", a.options.name), args_(std::move(a)) {
    if (args_.options.output_mode == "binary") args_.options.output_mode = "multi_hot";  // Keras's old name
    kFields.check(who(), args_);
    if (args_.options.sparse) throw ValueError(who() + ": sparse must be false (Tandem's tensors are dense), got true");
  }
  std::string class_name() const override { return "CategoryEncoding"; }
  std::string config_json() const override { return kFields.config_text(*this, args_); }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    const TensorType& t = g.type(inputs[0]);
    graph::Value ids = t.dtype == DType::I32 || t.dtype == DType::I64 ? inputs[0] : ops::cast(g, inputs[0], DType::I32);
    return detail::encode_categories(g, ids, args_.num_tokens, args_.options.output_mode, dtype(), who());
  }

 private:
  CategoryEncodingArgs args_;
};

const RegisterLayer registered("CategoryEncoding", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  CategoryEncodingArgs a = kFields.read(c, {.options = {.name = c.name()}});
  a.options.sparse = c.boolean("sparse", false);  // Keras leaves it out of the config; accept it if present
  return std::make_shared<CategoryEncodingLayer>(std::move(a));
});
}  // namespace

LayerRef CategoryEncoding(int64_t num_tokens, const CategoryEncodingOptions& options) {
  return LayerRef(std::make_shared<CategoryEncodingLayer>(CategoryEncodingArgs{num_tokens, options}));
}

}  // namespace tandem::layers
