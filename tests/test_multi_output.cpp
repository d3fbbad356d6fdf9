// Layers whose call has several outputs, and inputs passed by keyword (what LSTM(return_state)
// and lstm(x, initial_state=[h, c]) need): each output is a symbol of its own, a model may use any
// of them, and a saved model records them as Keras does ([layer, node, tensor index]; the keyword
// inputs under "kwargs") and loads back to the same predictions. Truth: closed forms on the host.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "io/zip_archive.h"
#include "layer_base/call_context.h"
#include "ops/ops.h"
#include "tests/scratch_dir.h"

namespace tl = tandem::layers;
using Json = nlohmann::json;
using tandem::Symbol;
using tandem::Tensor;
using tandem::graph::Value;

namespace {

const ScratchRoot scratch("test_multi_output");

// A test layer with two outputs from x (batch, 4) and a state h (batch, 4) passed by keyword
// (zero when absent): y = tanh(x · kernel + h), and s = x + h.
class TwoOutputs : public tandem::Layer {
 public:
  explicit TwoOutputs(const std::string& name = "") : Layer("two_outputs", name) {}
  std::string class_name() const override { return "TwoOutputs"; }
  tandem::CallKeywordInputs keyword_inputs() const override { return {1, "initial_state"}; }
  std::vector<Value> emit_outputs(tandem::CallContext& ctx, const std::vector<Value>& in) override {
    namespace o = tandem::ops;
    const Value h = in.size() > 1 ? in[1] : o::fill(ctx.g, ctx.g.type(in[0]), 0.0);
    return {o::tanh(ctx.g, o::add(ctx.g, o::matmul(ctx.g, in[0], ctx.variable(*kernel_)), h)), o::add(ctx.g, in[0], h)};
  }
  const tandem::VariablePtr& kernel() const { return kernel_; }

 protected:
  void build(const std::vector<tandem::Shape>&) override { kernel_ = add_weight("kernel", {4, 4}, "glorot_uniform"); }
  tandem::LayerConfig get_config() const override { return tandem::LayerConfig(); }

 private:
  tandem::VariablePtr kernel_;
};

const bool registered = [] {
  tandem::register_layer("TwoOutputs", [](const tandem::LayerConfig& c) { return std::make_shared<TwoOutputs>(c.name()); });
  return true;
}();

Tensor rows(int64_t n, double offset, int64_t width = 4) {
  std::vector<float> v(static_cast<std::size_t>(n * width));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + offset));
  return Tensor::from({n, width}, std::span<const float>(v));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tandem::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a layer with two outputs and a keyword input: each output is used, predicted and saved as Keras records it") {
  REQUIRE(registered);
  auto layer = std::make_shared<TwoOutputs>("two");
  tandem::LayerRef two(layer);
  const Symbol x = tandem::Input({4}, tandem::DType::F32, "x"), h0 = tandem::Input({4}, tandem::DType::F32, "h0");
  const std::vector<Symbol> ys = two.outputs({x, h0});
  REQUIRE(ys.size() == 2);
  CHECK(ys[1].shape() == tandem::Shape({-1, 4}));
  const Symbol z = tl::Dense(2, "", {.name = "head"})(ys[1]);
  tandem::Model model({x, h0}, {ys[0], z, ys[1]}, "two_heads");

  const int64_t n = 5;
  const Tensor xs = rows(n, 0.0), hs = rows(n, 1.0);
  const std::vector<Tensor> p = model.predict({xs, hs});
  REQUIRE(p.size() == 3);
  const Tensor& k = layer->kernel()->value();
  double worst = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < 4; ++j) {
      double a = hs.item(r * 4 + j);
      for (int64_t i = 0; i < 4; ++i) a += xs.item(r * 4 + i) * k.item(i * 4 + j);
      worst = std::max(worst, std::abs(p[0].item(r * 4 + j) - std::tanh(a)));
      worst = std::max(worst, std::abs(p[2].item(r * 4 + j) - (xs.item(r * 4 + j) + hs.item(r * 4 + j))));
    }
  CHECK(worst < 1e-6);

  // The summary lists both shapes; the plot draws the one call once.
  CHECK(contains(model.summary_string(), "[(None, 4), (None, 4)]"));
  CHECK(contains(model.summary_string(), "two[0][1]"));
  CHECK(contains(tandem::model_to_dot(model), "label=\"two"));

  const auto dir = scratch.fresh("save");
  model.save((dir / "two.keras").string());
  Json config;
  for (const auto& e : tandem::io::read_zip((dir / "two.keras").string()))
    if (e.name == "config.json") config = Json::parse(e.bytes);
  const Json& layers = config.at("config").at("layers");
  for (const Json& l : layers) {
    if (l.at("name") == "two") {
      const Json& node = l.at("inbound_nodes").at(0);
      CHECK(node.at("args").size() == 1);
      CHECK(node.at("args").at(0).at("config").at("keras_history") == Json::array({"x", 0, 0}));
      CHECK(node.at("kwargs").at("initial_state").at(0).at("config").at("keras_history") == Json::array({"h0", 0, 0}));
    }
    if (l.at("name") == "head")
      CHECK(l.at("inbound_nodes").at(0).at("args").at(0).at("config").at("keras_history") == Json::array({"two", 0, 1}));
  }
  CHECK(config.at("config").at("output_layers") == Json::parse(R"([["two", 0, 0], ["head", 0, 0], ["two", 0, 1]])"));

  const std::unique_ptr<tandem::Model> loaded = tandem::load_model((dir / "two.keras").string());
  const std::vector<Tensor> q = loaded->predict({xs, hs});
  REQUIRE(q.size() == 3);
  for (std::size_t o = 0; o < 3; ++o)
    for (int64_t i = 0; i < q[o].size(); ++i) CHECK(q[o].item(i) == p[o].item(i));

  // Training goes through both outputs' losses.
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const tandem::History hist = model.fit({xs, hs}, {rows(n, 2.0), rows(n, 3.0, 2), rows(n, 4.0)}, {.epochs = 1, .verbose = 0});
  CHECK(std::isfinite(hist.history.at("loss").back()));
}

TEST_CASE("errors of several outputs name the layer") {
  REQUIRE(registered);
  tandem::LayerRef two(std::make_shared<TwoOutputs>("pair"));
  const Symbol x = tandem::Input({4});
  const std::string e = error_of([&] { two(x); });
  CHECK(contains(e, "TwoOutputs \"pair\""));
  CHECK(contains(e, "2 outputs"));
  CHECK(contains(e, ".outputs("));

  // A saved connection to output 2 of a call of two outputs.
  const std::vector<Symbol> ys = two.outputs(x);
  tandem::Model model(x, tl::Dense(1, "", {.name = "after"})(ys[1]), "m");
  const auto dir = scratch.fresh("bad_index");
  model.save((dir / "m.keras").string());
  std::vector<tandem::io::ZipEntry> entries = tandem::io::read_zip((dir / "m.keras").string());
  for (auto& entry : entries)
    if (entry.name == "config.json") {
      Json config = Json::parse(entry.bytes);
      for (Json& l : config.at("config").at("layers"))
        if (l.at("name") == "after") l["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = Json::array({"pair", 0, 2});
      entry.bytes = config.dump();
    }
  tandem::io::write_zip((dir / "bad.keras").string(), entries);
  const std::string bad = error_of([&] { tandem::load_model((dir / "bad.keras").string()); });
  CHECK(contains(bad, "Dense \"after\""));
  CHECK(contains(bad, "[\"pair\", 0, 2] refers to output 2 of call 0 of TwoOutputs \"pair\", which has 2 outputs"));
}
