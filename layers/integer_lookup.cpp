// IntegerLookup (Keras 3): integer values to vocabulary indices with the integer_lookup op, or back
// (invert), optionally encoded as CategoryEncoding does. Keras's own layer needs TensorFlow, so its
// semantics here follow Keras's index_lookup.py and the values in its documentation.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "layer_base/call_context.h"
#include "layers/category_encode.h"
#include "layers/config.h"
#include "layers/fields.h"
#include "ops/lookup.h"
#include "ops/ops.h"
#include "tandem/errors.h"
#include "tandem/layers.h"

namespace tandem::layers {

namespace {
struct IntegerLookupArgs {
  IntegerLookupOptions options;
};

// max_tokens and mask_token: null in Keras's config where Tandem holds 0 / no value.
Field<IntegerLookupArgs> max_tokens_field() {
  return {"max_tokens", [](const IntegerLookupArgs& a) { return a.options.max_tokens ? Json(a.options.max_tokens) : Json(nullptr); },
          [](const ConfigReader& c, IntegerLookupArgs& a) {
            const Json* j = c.value("max_tokens");
            a.options.max_tokens = !j || j->is_null() ? 0 : c.integer("max_tokens");
          },
          nullptr};
}
Field<IntegerLookupArgs> mask_token_field() {
  return {"mask_token", [](const IntegerLookupArgs& a) { return a.options.mask_token ? Json(*a.options.mask_token) : Json(nullptr); },
          [](const ConfigReader& c, IntegerLookupArgs& a) {
            const Json* j = c.value("mask_token");
            if (j && !j->is_null()) a.options.mask_token = c.integer("mask_token");
          },
          nullptr};
}
Field<IntegerLookupArgs> vocabulary_field() {
  return {"vocabulary",
          [](const IntegerLookupArgs& a) { return a.options.vocabulary.empty() ? Json(nullptr) : Json(a.options.vocabulary); },
          [](const ConfigReader& c, IntegerLookupArgs& a) {
            const Json* j = c.value("vocabulary");
            if (!j || j->is_null()) return;
            if (j->is_string())
              c.fail("vocabulary", "a list of integers (Tandem reads no vocabulary files; an adapted Keras layer keeps its vocabulary in "
                                   "the archive's assets, which Tandem does not read)");
            a.options.vocabulary = c.integers("vocabulary");
          },
          nullptr};
}

const Fields<IntegerLookupArgs>& fields();

class IntegerLookupLayer : public Layer {
 public:
  explicit IntegerLookupLayer(IntegerLookupArgs a) : Layer("integer_lookup", a.options.name), args_(std::move(a)) {
    IntegerLookupOptions& o = args_.options;
    if (o.output_mode == "binary") o.output_mode = "multi_hot";  // Keras's old name
    fields().check(who(), args_);
    if (o.max_tokens != 0 && o.max_tokens <= 1)
      throw ValueError(who() + ": max_tokens must be greater than 1 (or 0 for no limit), got " + std::to_string(o.max_tokens));
    if (o.num_oov_indices < 0) throw ValueError(who() + ": num_oov_indices must be non-negative, got " + std::to_string(o.num_oov_indices));
    if (o.pad_to_max_tokens && o.max_tokens == 0) throw ValueError(who() + ": pad_to_max_tokens needs max_tokens");
    if (o.invert && o.output_mode != "int")
      throw ValueError(who() + ": output_mode must be \"int\" when invert is true, got \"" + o.output_mode + "\"");
    if (!o.vocabulary.empty()) set_vocabulary(o.vocabulary);
  }
  std::string class_name() const override { return "IntegerLookup"; }
  std::string config_json() const override {
    // vocabulary_size, which Keras writes after vocabulary, is the size with the special indices
    // (null before there is a vocabulary); reading derives it from the vocabulary.
    Json args = fields().write(args_);
    Json ordered = Json::object();
    for (auto& [key, value] : args.items()) {
      ordered[key] = value;
      if (key == "vocabulary") ordered["vocabulary_size"] = has_vocabulary_ ? Json(vocabulary_size()) : Json(nullptr);
    }
    return config_text(*this, ordered);
  }

  int64_t oov_start() const { return args_.options.mask_token && args_.options.output_mode == "int" ? 1 : 0; }
  int64_t token_start() const { return oov_start() + args_.options.num_oov_indices; }
  int64_t vocabulary_size() const { return token_start() + static_cast<int64_t>(tokens_.size()); }

  std::vector<int64_t> get_vocabulary(bool special) const {
    std::vector<int64_t> v;
    if (special) {
      if (oov_start()) v.push_back(*args_.options.mask_token);
      v.insert(v.end(), static_cast<std::size_t>(args_.options.num_oov_indices), args_.options.oov_token);
    }
    v.insert(v.end(), tokens_.begin(), tokens_.end());
    return v;
  }

  // Keras's set_vocabulary: special tokens at the start are dropped; repeats, and the mask (or,
  // inverted, the OOV) token elsewhere, are errors.
  void set_vocabulary(const std::vector<int64_t>& vocabulary) {
    const IntegerLookupOptions& o = args_.options;
    const std::vector<int64_t> with_special = get_vocabulary(true);
    const std::vector<int64_t> specials(with_special.begin(), with_special.begin() + token_start());
    std::vector<int64_t> tokens = vocabulary;
    if (vocabulary.size() >= specials.size() && std::equal(specials.begin(), specials.end(), vocabulary.begin()))
      tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(specials.size()));
    if (tokens.empty()) throw ValueError(who() + ": the vocabulary is empty");
    std::set<int64_t> seen;
    for (int64_t t : tokens) {
      if (!seen.insert(t).second) throw ValueError(who() + ": the vocabulary repeats " + std::to_string(t));
      if (o.mask_token && t == *o.mask_token)
        throw ValueError(who() + ": the vocabulary holds the mask token " + std::to_string(t) +
                         " after its start; give the special tokens only at the start, or not at all");
      if (o.invert && t == o.oov_token)
        throw ValueError(who() + ": the vocabulary holds the OOV token " + std::to_string(t) + " after its start (invert)");
    }
    if (o.max_tokens && token_start() + static_cast<int64_t>(tokens.size()) > o.max_tokens)
      throw ValueError(who() + ": a vocabulary of " + std::to_string(token_start() + static_cast<int64_t>(tokens.size())) +
                       " indices is larger than max_tokens " + std::to_string(o.max_tokens));
    tokens_ = std::move(tokens);
    has_vocabulary_ = true;
  }

  void adapt(const Tensor& data) {
    if (!args_.options.vocabulary.empty() && !adapted_)
      throw ValueError(who() + ": cannot adapt a layer given a vocabulary");
    if (data.dtype() != DType::I32 && data.dtype() != DType::I64)
      throw ValueError(who() + ": adapt() expects integer data, got " + dtype_name(data.dtype()));
    const Tensor v = data.cast(DType::I64);
    std::map<int64_t, int64_t> counts;
    for (int64_t x : v.values<int64_t>()) ++counts[x];
    if (args_.options.mask_token) counts.erase(*args_.options.mask_token);
    counts.erase(args_.options.oov_token);
    std::vector<std::pair<int64_t, int64_t>> order(counts.begin(), counts.end());  // (value, count)
    // Keras: np.lexsort((tokens, counts))[::-1]: descending count, ties by descending value.
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first > b.first; });
    if (args_.options.max_tokens) order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(std::max<int64_t>(0, args_.options.max_tokens - token_start()))));
    tokens_.clear();
    for (const auto& [value, count] : order) tokens_.push_back(value);
    has_vocabulary_ = !tokens_.empty();
    args_.options.vocabulary = tokens_;  // saved in the config, where Keras reads a given vocabulary
    adapted_ = true;
  }

  graph::Value emit(CallContext& ctx, const std::vector<graph::Value>& inputs) override {
    graph::Graph& g = ctx.g;
    if (!has_vocabulary_) throw ValueError(who() + ": has no vocabulary; give one or call adapt() before using the layer");
    const IntegerLookupOptions& o = args_.options;
    const TensorType& t = g.type(inputs[0]);
    const graph::Value ids = t.dtype == DType::I32 || t.dtype == DType::I64 ? inputs[0] : ops::cast(g, inputs[0], DType::I64);
    ops::IntegerTable table;
    const int64_t start = token_start();
    if (o.invert) {
      for (std::size_t i = 0; i < tokens_.size(); ++i) table.keys.push_back(start + static_cast<int64_t>(i)), table.values.push_back(tokens_[i]);
      table.missing = o.oov_token;
      if (o.mask_token) table.has_mask = true, table.mask_key = 0, table.mask_value = *o.mask_token;
    } else {
      std::vector<std::size_t> by_value(tokens_.size());
      std::iota(by_value.begin(), by_value.end(), std::size_t{0});
      std::sort(by_value.begin(), by_value.end(), [&](std::size_t a, std::size_t b) { return tokens_[a] < tokens_[b]; });
      for (std::size_t i : by_value) table.keys.push_back(tokens_[i]), table.values.push_back(start + static_cast<int64_t>(i));
      // One OOV index: it; several: value mod n from the first; none: -1 (Keras raises; a graph cannot).
      table.missing = o.num_oov_indices == 1 ? oov_start() : -1;
      if (o.num_oov_indices > 1) table.buckets = o.num_oov_indices, table.bucket_start = oov_start();
      // The mask maps to 0 for "int" output and is dropped from encodings (an index no encoding has).
      if (o.mask_token) table.has_mask = true, table.mask_key = *o.mask_token, table.mask_value = o.output_mode == "int" ? 0 : -1;
    }
    const graph::Value looked = ops::integer_lookup(g, ids, table);
    if (o.output_mode == "int") return looked;
    return detail::encode_categories(g, looked, o.pad_to_max_tokens ? o.max_tokens : vocabulary_size(), o.output_mode, dtype(), who());
  }

 private:
  IntegerLookupArgs args_;
  std::vector<int64_t> tokens_;  // the vocabulary without special tokens: index token_start() + i
  bool has_vocabulary_ = false, adapted_ = false;
};

const Fields<IntegerLookupArgs>& fields() {
  static const Fields<IntegerLookupArgs> f{
      field<IntegerLookupArgs>("invert", [](auto& a) -> auto& { return a.options.invert; }),
      max_tokens_field(),
      field<IntegerLookupArgs>("num_oov_indices", [](auto& a) -> auto& { return a.options.num_oov_indices; }),
      field<IntegerLookupArgs>("oov_token", [](auto& a) -> auto& { return a.options.oov_token; }),
      mask_token_field(),
      field<IntegerLookupArgs>("output_mode", [](auto& a) -> auto& { return a.options.output_mode; },
                               rules::one_of({"int", "one_hot", "multi_hot", "count"})),
      fixed<IntegerLookupArgs>("sparse", false),
      field<IntegerLookupArgs>("pad_to_max_tokens", [](auto& a) -> auto& { return a.options.pad_to_max_tokens; }),
      fixed<IntegerLookupArgs>("vocabulary_dtype", "int64"),
      unused<IntegerLookupArgs>("idf_weights"),
      vocabulary_field(),
      fixed<IntegerLookupArgs>("oov_method", "floormod"),
      unused<IntegerLookupArgs>("salt"),
  };
  return f;
}

IntegerLookupLayer& lookup_of(const LayerRef& ref) {
  auto* layer = dynamic_cast<IntegerLookupLayer*>(ref.ptr().get());
  if (!layer) throw ValueError(ref->class_name() + " \"" + ref->name() + "\": not an IntegerLookup layer");
  return *layer;
}

const RegisterLayer registered("IntegerLookup", [](const ConfigReader& c) -> std::shared_ptr<Layer> {
  IntegerLookupArgs a = fields().read(c, {.options = {.name = c.name()}});
  c.value("vocabulary_size");  // derived from the vocabulary
  return std::make_shared<IntegerLookupLayer>(std::move(a));
});
}  // namespace

void IntegerLookupRef::adapt(const Tensor& data) const { lookup_of(*this).adapt(data); }
std::vector<int64_t> IntegerLookupRef::get_vocabulary(bool include_special_tokens) const {
  return lookup_of(*this).get_vocabulary(include_special_tokens);
}
int64_t IntegerLookupRef::vocabulary_size() const { return lookup_of(*this).vocabulary_size(); }

IntegerLookupRef IntegerLookup(const IntegerLookupOptions& options) {
  return IntegerLookupRef(std::make_shared<IntegerLookupLayer>(IntegerLookupArgs{options}));
}

}  // namespace tandem::layers
