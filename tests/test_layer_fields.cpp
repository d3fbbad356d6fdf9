// The field table behind every layer's config (layers/fields.h): one declaration writes the
// config, reads it back with the argument struct's defaults, and checks values, naming the layer,
// the argument, what it accepts and what came.
#include <doctest/doctest.h>

#include <functional>
#include <optional>

#include "layers/fields.h"

namespace tl = tandem::layers;
using tl::Fields;
using tl::Json;

namespace {
struct Args {
  int64_t units = 0;
  double rate = 0.5;
  bool use_bias = true;
  std::string activation;
  std::string padding = "valid";
  tl::Int2 strides = 1;
  std::string kernel_initializer = "glorot_uniform";
};

const Fields<Args> kFields{
    tl::required<Args>("units", [](auto& a) -> auto& { return a.units; }, tl::rules::positive),
    tl::field<Args>("rate", [](auto& a) -> auto& { return a.rate; }, tl::rules::in_range(0, 1, false)),
    tl::field<Args>("use_bias", [](auto& a) -> auto& { return a.use_bias; }),
    tl::activation<Args>("activation", [](auto& a) -> auto& { return a.activation; }),
    tl::field<Args>("padding", [](auto& a) -> auto& { return a.padding; }, tl::rules::one_of({"valid", "same", "causal"})),
    tl::field<Args>("strides", [](auto& a) -> auto& { return a.strides; }, tl::rules::positive),
    tl::initializer<Args>("kernel_initializer", [](auto& a) -> auto& { return a.kernel_initializer; }),
    tl::fixed<Args>("data_format", "channels_last"),
    tl::unused<Args>("kernel_regularizer"),
};

Args read(const Json& config) {
  const tl::ConfigReader reader("Thing", config);
  Args a = kFields.read(reader);
  reader.check_all_read();
  return a;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("layer fields: a config missing optional keys reads the struct's defaults; a required one must be there") {
  const Args a = read(Json{{"units", 4}});
  CHECK(a.units == 4);
  CHECK(a.rate == 0.5);
  CHECK(a.use_bias);
  CHECK(a.padding == "valid");
  CHECK(a.strides.h == 1);
  CHECK(a.kernel_initializer == "glorot_uniform");
  CHECK(error_of([] { read(Json::object()); }).find("\"units\"") != std::string::npos);
}

TEST_CASE("layer fields: the keys are written in the table's order, as Keras writes them, and read back to the same values") {
  const Args a{.units = 7, .rate = 0.25, .use_bias = false, .activation = "", .padding = "same", .strides = {2, 3},
               .kernel_initializer = "he_normal"};
  const Json written = kFields.write(a);
  const Json expected = {{"units", 7}, {"rate", 0.25}, {"use_bias", false}, {"activation", "linear"}, {"padding", "same"},
                         {"strides", {2, 3}}, {"kernel_initializer", tandem::config::initializer_json("he_normal")},
                         {"data_format", "channels_last"}, {"kernel_regularizer", nullptr}};
  CHECK(written.dump() == expected.dump());  // the order too
  const Args b = read(written);
  CHECK(b.units == a.units);
  CHECK(b.rate == a.rate);
  CHECK(b.use_bias == a.use_bias);
  CHECK(b.activation == "linear");
  CHECK(b.padding == "same");
  CHECK(b.strides.h == 2);
  CHECK(b.strides.w == 3);
  CHECK(b.kernel_initializer == "he_normal");
}

TEST_CASE("layer fields: rules name the layer, the argument, what it accepts and what came") {
  const std::string who = "Thing \"t\"";
  auto check = [&](Args a) { return error_of([&] { kFields.check(who, a); }); };
  CHECK(check({.units = 0}) == "Thing \"t\": units must be positive, got 0");
  CHECK(check({.units = 1, .rate = 1.0}) == "Thing \"t\": rate must be in [0, 1), got 1");
  CHECK(check({.units = 1, .padding = "full"}) == "Thing \"t\": padding must be \"valid\", \"same\" or \"causal\", got \"full\"");
  CHECK(check({.units = 1, .strides = {1, 0}}) == "Thing \"t\": strides must be positive integers, got (1, 0)");
  CHECK(check({.units = 1, .activation = "swishy"}).find("swishy") != std::string::npos);
  CHECK(check({.units = 1}) == "no error");
}

TEST_CASE("layer fields: a fixed key with another value and an unused key that is set are refused, naming the key") {
  CHECK(error_of([] { read(Json{{"units", 1}, {"data_format", "channels_first"}}); }).find("data_format") != std::string::npos);
  CHECK(error_of([] { read(Json{{"units", 1}, {"kernel_regularizer", "l2"}}); }).find("kernel_regularizer") != std::string::npos);
  CHECK(error_of([] { read(Json{{"units", 1}, {"units_typo", 3}}); }).find("units_typo") != std::string::npos);
}

namespace {
// Lists of integers, ZeroPadding2D's padding and a shape led by the batch dimension.
struct ShapeArgs {
  tandem::Shape target_shape;
  tandem::Shape sample;
  tl::Padding2D padding;
};

const Fields<ShapeArgs> kShapeFields{
    tl::required<ShapeArgs>("target_shape", [](auto& a) -> auto& { return a.target_shape; }),
    tl::batch_shape<ShapeArgs>("batch_shape", [](auto& a) -> auto& { return a.sample; }, "batch_input_shape"),
    tl::field<ShapeArgs>("padding", [](auto& a) -> auto& { return a.padding; },
                         [](const tl::Padding2D& p) { return p.top >= 0 && p.left >= 0 ? "" : "non-negative"; }),
};

ShapeArgs read_shapes(const Json& config) {
  const tl::ConfigReader reader("Thing", config);
  ShapeArgs a = kShapeFields.read(reader);
  reader.check_all_read();
  return a;
}

struct MoreArgs {
  int axis = -1;
  tandem::Shape output_shape{};
  std::optional<uint64_t> seed;
};

const Fields<MoreArgs> kMoreFields{
    tl::field<MoreArgs>("axis", [](auto& a) -> auto& { return a.axis; },
                        [](int v) { return std::string(v != 0 ? "" : "a non-batch axis"); }),
    tl::field<MoreArgs>("output_shape", [](auto& a) -> auto& { return a.output_shape; }),
    tl::field<MoreArgs>("seed", [](auto& a) -> auto& { return a.seed; }),
};

MoreArgs read_more(const Json& config, MoreArgs defaults = {}) {
  const tl::ConfigReader reader("Thing", config);
  MoreArgs a = kMoreFields.read(reader, defaults);
  reader.check_all_read();
  return a;
}
}  // namespace

TEST_CASE("layer fields: lists of integers, padding pairs and batch shapes are written as Keras writes them and read back") {
  const ShapeArgs a{.target_shape = {2, -1}, .sample = {28, 28, 1}, .padding = tl::Padding2D({1, 2}, {3, 4})};
  const Json written = kShapeFields.write(a);
  CHECK(written.dump() == R"({"target_shape":[2,-1],"batch_shape":[null,28,28,1],"padding":[[1,2],[3,4]]})");
  const ShapeArgs b = read_shapes(written);
  CHECK(b.target_shape == a.target_shape);
  CHECK(b.sample == a.sample);
  CHECK((b.padding.top == 1 && b.padding.bottom == 2 && b.padding.left == 3 && b.padding.right == 4));
  // Defaults, Keras's shorter spellings of padding and Keras 2's batch_input_shape.
  const ShapeArgs c = read_shapes(Json{{"target_shape", {3}}, {"batch_input_shape", {nullptr, 5}}});
  CHECK(c.sample == tandem::Shape{5});
  CHECK((c.padding.top == 1 && c.padding.right == 1));
  const ShapeArgs d = read_shapes(Json{{"target_shape", {3}}, {"batch_shape", {nullptr, 5}}, {"padding", 2}});
  CHECK((d.padding.top == 2 && d.padding.bottom == 2 && d.padding.left == 2 && d.padding.right == 2));
  const ShapeArgs e = read_shapes(Json{{"target_shape", {3}}, {"batch_shape", {nullptr, 5}}, {"padding", {1, 2}}});
  CHECK((e.padding.top == 1 && e.padding.bottom == 1 && e.padding.left == 2 && e.padding.right == 2));
  // What is refused names the key; rules show the value as Keras writes it.
  CHECK(error_of([] { read_shapes(Json{{"batch_shape", {nullptr, 5}}}); }).find("\"target_shape\"") != std::string::npos);
  CHECK(error_of([] { read_shapes(Json{{"target_shape", {3}}}); }).find("\"batch_input_shape\"") != std::string::npos);
  CHECK(error_of([] { read_shapes(Json{{"target_shape", {3}}, {"batch_shape", {nullptr, 0}}}); }).find("positive sizes") !=
        std::string::npos);
  CHECK(error_of([] { read_shapes(Json{{"target_shape", {3}}, {"batch_shape", {nullptr, 5}}, {"padding", {1, 2, 3}}}); })
            .find("\"padding\"") != std::string::npos);
  CHECK(error_of([] { kShapeFields.check("Thing \"t\"", {.padding = tl::Padding2D({0, 1}, {-2, 3})}); }) ==
        "Thing \"t\": padding must be non-negative, got ((0, 1), (-2, 3))");
}

TEST_CASE("layer fields: an int, an optional shape (null when empty) and an optional seed (null when none)") {
  CHECK(kMoreFields.write({}).dump() == R"({"axis":-1,"output_shape":null,"seed":null})");
  const MoreArgs a{.axis = 2, .output_shape = {3, 4}, .seed = 17};
  CHECK(kMoreFields.write(a).dump() == R"({"axis":2,"output_shape":[3,4],"seed":17})");
  const MoreArgs b = read_more(kMoreFields.write(a));
  CHECK(b.axis == 2);
  CHECK(b.output_shape == tandem::Shape{3, 4});
  CHECK(b.seed == std::optional<uint64_t>(17));

  // Absent keys keep the struct's values; null clears a seed and leaves a shape empty.
  const MoreArgs absent = read_more(Json::object(), a);
  CHECK(absent.axis == 2);
  CHECK(absent.output_shape == tandem::Shape{3, 4});
  CHECK(absent.seed == std::optional<uint64_t>(17));
  const MoreArgs nulls = read_more(Json{{"output_shape", nullptr}, {"seed", nullptr}});
  CHECK(nulls.output_shape.rank() == 0);
  CHECK(!nulls.seed);

  // A one-dimensional shape may be one integer, as Keras writes it.
  CHECK(read_more(Json{{"output_shape", 5}}).output_shape == tandem::Shape{5});
  CHECK(error_of([] { read_more(Json{{"output_shape", "x"}}); }).find("output_shape") != std::string::npos);
  CHECK(error_of([] { read_more(Json{{"seed", -1}}); }).find("seed") != std::string::npos);
  CHECK(error_of([] { read_more(Json{{"axis", 1.5}}); }).find("axis") != std::string::npos);

  CHECK(error_of([] { kMoreFields.check("Thing \"t\"", {.axis = 0}); }) == "Thing \"t\": axis must be a non-batch axis, got 0");
}
