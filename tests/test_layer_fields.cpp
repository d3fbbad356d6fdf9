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
