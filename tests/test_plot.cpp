// Pictures: plot_model's DOT graph (nodes, edges, labels, colours by stage and device, rendering
// with Graphviz's dot or the .dot file without it) and the History report (CSV, JSON, SVG charts).
// The files are checked by parsing them. Set TANDEM_PLOT_KEEP=<folder> to keep copies of them.
#include <doctest/doctest.h>
#include <tandem/tandem.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "strategy_helpers.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace dist = tandem::distribute;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("tandem_plot_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.insert(e.path().filename().string());
    return out;
  }
};

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void keep(const std::string& path) {
  if (const char* dir = std::getenv("TANDEM_PLOT_KEEP")) fs::copy_file(path, fs::path(dir) / fs::path(path).filename(), fs::copy_options::overwrite_existing);
}

bool dot_installed() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

// PATH for the scope of a test: an empty folder hides Graphviz, a folder with a fake `dot` fakes it.
struct PathSetTo {
  std::string old;
  explicit PathSetTo(const std::string& path) : old(std::getenv("PATH") ? std::getenv("PATH") : "") { ::setenv("PATH", path.c_str(), 1); }
  ~PathSetTo() { ::setenv("PATH", old.c_str(), 1); }
};

// features -> stem -> (left, right) -> merge -> head: a branch and a join.
std::unique_ptr<tandem::Model> branchy() {
  auto x = tandem::Input({8}, tandem::DType::F32, "features");
  auto stem = tl::Dense(16, "relu", {.name = "stem"})(x);
  auto left = tl::Dense(8, "relu", {.name = "left"})(stem);
  auto right = tl::Dense(8, "tanh", {.name = "right"})(stem);
  auto merged = tl::Concatenate({.name = "merge"})({left, right});
  return std::make_unique<tandem::Model>(x, tl::Dense(3, "", {.name = "head"})(merged), "branchy");
}

// The statements of a DOT graph as plot_model writes them: `id [key="value", ...];` and `a -> b;`.
struct Dot {
  std::map<std::string, std::map<std::string, std::string>> nodes;  // id -> attributes
  std::vector<std::pair<std::string, std::string>> edges;
  std::vector<std::pair<std::string, std::string>> invisible_edges;  // [style=invis]: the legend's order
  std::string graph_attrs;
};
Dot parse_dot(const std::string& text) {
  Dot d;
  REQUIRE(text.starts_with("digraph "));
  CHECK(std::count(text.begin(), text.end(), '{') == std::count(text.begin(), text.end(), '}'));
  const std::regex edge(R"(^\s*(\w+)\s*->\s*(\w+)\s*(\[style=invis\])?;$)"), node(R"(^\s*(\w+)\s*\[(.*)\];$)");
  const std::regex attr(R"re((\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+))re");
  std::istringstream lines(text);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, edge)) (m[3].matched ? d.invisible_edges : d.edges).emplace_back(m[1], m[2]);
    else if (std::regex_match(line, m, node)) {
      if (m[1] == "graph") d.graph_attrs = m[2];
      if (m[1] == "graph" || m[1] == "node" || m[1] == "edge") continue;
      auto& attrs = d.nodes[m[1]];
      const std::string body = m[2];
      for (std::sregex_iterator it(body.begin(), body.end(), attr), end; it != end; ++it) {
        std::string v = (*it)[2];
        if (v.front() == '"') v = std::regex_replace(v.substr(1, v.size() - 2), std::regex(R"(\\n)"), "\n");
        attrs[(*it)[1]] = v;
      }
    } else {  // nothing else but the braces of the graph and the legend's cluster and its attributes
      CHECK_MESSAGE(std::regex_match(line, std::regex(R"(^(digraph .*|\s*subgraph \w+ )\{$|^\s*\}$|^\s+\w+=.*;$)")), "unexpected line: " << line);
    }
  }
  return d;
}
bool is_legend(const std::string& id) { return id.starts_with("legend_"); }
// A node's layer name: its label's first word.
std::string name_of(const Dot& d, const std::string& id) {
  const std::string& label = d.nodes.at(id).at("label");
  return label.substr(0, label.find(' '));
}
std::string id_of(const Dot& d, const std::string& name) {
  for (const auto& [id, attrs] : d.nodes)
    if (!is_legend(id) && name_of(d, id) == name) return id;
  FAIL("no node for layer " << name);
  return "";
}

}  // namespace

TEST_CASE("plot_model: one node per layer call and the input, each edge from producer to consumer once, shapes in the labels") {
  auto model = branchy();
  const Dot d = parse_dot(tandem::model_to_dot(*model));
  int graph_nodes = 0;
  for (const auto& [id, attrs] : d.nodes) graph_nodes += !is_legend(id);
  CHECK(graph_nodes == static_cast<int>(model->layers().size()) + 1);
  std::multiset<std::pair<std::string, std::string>> edges, expected{{"features", "stem"}, {"stem", "left"}, {"stem", "right"},
                                                                       {"left", "merge"},    {"right", "merge"}, {"merge", "head"}};
  for (const auto& [from, to] : d.edges) edges.emplace(name_of(d, from), name_of(d, to));
  CHECK(edges == expected);
  CHECK(d.nodes.at(id_of(d, "features")).at("label") == "features (InputLayer)\nOutput shape: (None, 8)");
  CHECK(d.nodes.at(id_of(d, "stem")).at("label") == "stem (Dense)\nOutput shape: (None, 16)");
  CHECK(d.nodes.at(id_of(d, "merge")).at("label") == "merge (Concatenate)\nOutput shape: (None, 16)");
  CHECK(d.nodes.at(id_of(d, "head")).at("label") == "head (Dense)\nOutput shape: (None, 3)");
  CHECK(d.graph_attrs.find("rankdir=TB") != std::string::npos);
  CHECK(std::none_of(d.nodes.begin(), d.nodes.end(), [](const auto& n) { return is_legend(n.first); }));  // nothing placed

  // The options: class names alone, dtypes, left to right, the dpi.
  const Dot terse = parse_dot(tandem::model_to_dot(*model, {.show_shapes = false, .show_dtype = true, .show_layer_names = false, .rankdir = "LR", .dpi = 150}));
  for (const auto& [id, attrs] : terse.nodes) {
    CHECK(attrs.at("label").find("Output shape") == std::string::npos);
    CHECK(attrs.at("label").find("\ndtype: float32") != std::string::npos);
  }
  CHECK(terse.nodes.at("call_0").at("label").starts_with("Dense\n"));
  CHECK(terse.graph_attrs.find("rankdir=LR") != std::string::npos);
  CHECK(terse.graph_attrs.find("dpi=150") != std::string::npos);
  CHECK_THROWS_WITH_AS(tandem::model_to_dot(*model, {.rankdir = "up"}), "plot_model: rankdir must be \"TB\", \"LR\", \"BT\" or \"RL\", got \"up\"",
                       tandem::ValueError);
  tandem::Sequential unbuilt({tl::Dense(2)}, "unbuilt");
  CHECK_THROWS_WITH_AS(tandem::model_to_dot(unbuilt), "Sequential \"unbuilt\": the model has no layers to plot yet; build it (or fit it) first",
                       tandem::ValueError);
}

TEST_CASE("plot_model: under Pipeline and ModelSplit each layer is coloured by its stage and device, and the legend names them") {
  auto model = branchy();
  model->compile({.optimizer = "sgd", .loss = "mse", .strategy = dist::Pipeline(cpus(2), {.boundaries = {"merge"}, .micro_batches = 2})});
  const std::string text = tandem::model_to_dot(*model);
  const Dot d = parse_dot(text);
  auto colour = [&](const std::string& layer) { return d.nodes.at(id_of(d, layer)).at("fillcolor"); };
  CHECK(colour("stem") == colour("left"));
  CHECK(colour("left") == colour("right"));
  CHECK(colour("merge") == colour("head"));
  CHECK(colour("stem") != colour("head"));
  CHECK_FALSE(d.nodes.at(id_of(d, "features")).count("fillcolor"));  // the input is fed, not placed: the default white
  REQUIRE(d.nodes.count("legend_0"));
  REQUIRE(d.nodes.count("legend_1"));
  CHECK(d.nodes.at("legend_0").at("label") == "stage 0 · cpu:0");
  CHECK(d.nodes.at("legend_0").at("fillcolor") == colour("stem"));
  CHECK(d.nodes.at("legend_1").at("label") == "stage 1 · cpu:1");
  CHECK(d.nodes.at("legend_1").at("fillcolor") == colour("head"));
  CHECK(text.find("label=\"Pipeline: 2 stages, 1F1B\"") != std::string::npos);  // the legend's title
  for (const auto& [from, to] : d.edges) CHECK((!is_legend(from) && !is_legend(to)));
  CHECK(d.invisible_edges == std::vector<std::pair<std::string, std::string>>{{"legend_0", "legend_1"}});
  TempDir dir;
  if (dot_installed()) {  // what the docs show
    REQUIRE(tandem::plot_model(*model, dir.file("plot_model_pipeline.png")).rendered);
    keep(dir.file("plot_model_pipeline.png"));
  }

  model->compile({.optimizer = "sgd", .loss = "mse", .strategy = dist::ModelSplit(cpus(2), {.placement = {{"right", "cpu:1"}}})});
  const Dot split = parse_dot(tandem::model_to_dot(*model));
  auto split_colour = [&](const std::string& layer) { return split.nodes.at(id_of(split, layer)).at("fillcolor"); };
  CHECK(split_colour("stem") == split_colour("left"));
  CHECK(split_colour("right") == split_colour("head"));
  CHECK(split_colour("stem") != split_colour("right"));
  CHECK(split.nodes.at("legend_0").at("label") == "cpu:0");
  CHECK(split.nodes.at("legend_1").at("label") == "cpu:1");
}

TEST_CASE("plot_model: renders with dot when it is installed, and without it writes the .dot file and says so") {
  auto model = branchy();
  TempDir dir;
  if (dot_installed()) {
    const tandem::PlotResult svg = tandem::plot_model(*model, dir.file("model.svg"));
    CHECK(svg.rendered);
    CHECK(svg.path == dir.file("model.svg"));
    const std::string text = read(svg.path);
    CHECK(text.find("<svg") != std::string::npos);
    std::size_t drawn = 0;  // dot's SVG has a <g class="node"> per node
    for (std::size_t at = 0; (at = text.find("class=\"node\"", at)) != std::string::npos; ++at) ++drawn;
    CHECK(drawn == model->layers().size() + 1);
    const tandem::PlotResult png = tandem::plot_model(*model, dir.file("model.png"), {.rankdir = "LR"});
    CHECK(png.rendered);
    CHECK(read(png.path).starts_with("\x89PNG"));
    CHECK(read(tandem::plot_model(*model, dir.file("model.pdf")).path).starts_with("%PDF"));
    CHECK(dir.names() == std::set<std::string>{"model.svg", "model.png", "model.pdf"});  // no scratch files left
  } else {
    MESSAGE("Graphviz's dot is not installed: only the case without it runs");
  }
  {
    PathSetTo hidden(dir.file(""));  // a folder without dot
    const tandem::PlotResult r = tandem::plot_model(*model, dir.file("bare.png"));
    CHECK_FALSE(r.rendered);
    CHECK(r.path == dir.file("bare.dot"));
    CHECK(read(r.path) == tandem::model_to_dot(*model));
    CHECK(r.message.find("`dot` is not on PATH") != std::string::npos);
    CHECK(r.message.find("dot -Tpng " + dir.file("bare.dot") + " -o " + dir.file("bare.png")) != std::string::npos);
    CHECK_FALSE(fs::exists(dir.file("bare.png")));
  }
  {  // a dot that fails: the error names the command and quotes it; nothing is left behind
    TempDir fake;
    std::ofstream(fake.file("dot")) << "#!/bin/sh\necho 'syntax error in line 1' >&2\nexit 3\n";
    fs::permissions(fake.file("dot"), fs::perms::owner_all);
    PathSetTo faked(fake.path.string());
    const std::set<std::string> before = dir.names();
    try {
      tandem::plot_model(*model, dir.file("broken.svg"));
      FAIL("expected an error");
    } catch (const tandem::Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.starts_with(dir.file("broken.svg") + ": not saved: plot_model: `" + fake.file("dot") + " -Tsvg "));
      CHECK(what.ends_with("` exited with status 3: syntax error in line 1"));
    }
    CHECK(dir.names() == before);
  }
  CHECK_THROWS_WITH_AS(tandem::plot_model(*model, dir.file("model.gif")),
                       ("plot_model: \"" + dir.file("model.gif") + "\": cannot tell the picture's format from its extension; use .svg, .png, .pdf or .dot").c_str(),
                       tandem::ValueError);
  CHECK_THROWS_AS(tandem::plot_model(*model, "/no/such/folder/model.dot"), tandem::Error);
  try {
    tandem::plot_model(*model, "/no/such/folder/model.svg");
    FAIL("expected an error");
  } catch (const tandem::Error& e) {
    CHECK(std::string(e.what()).find("/no/such/folder/model.") != std::string::npos);
  }
}

namespace {
// Three epochs of the branchy model with validation data: a History as fit makes it.
tandem::History three_epochs() {
  tandem::set_random_seed(4);
  auto model = branchy();
  model->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  return model->fit(blobs(96, 8, 3), {.epochs = 3, .batch_size = 32, .validation_data = blobs(48, 8, 3), .verbose = 0});
}

// Every element of the SVG closed in order (XML's nesting), the declaration and comments aside.
void check_nesting(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    REQUIRE(end != std::string::npos);
    const std::string tag = svg.substr(at + 1, end - at - 1);
    if (tag.starts_with("?") || tag.starts_with("!")) continue;
    const std::string name = tag.substr(tag.starts_with("/"), tag.find_first_of(" />", 1) - tag.starts_with("/"));
    if (tag.starts_with("/")) {
      REQUIRE_MESSAGE(!open.empty(), "</" << name << "> closes nothing");
      CHECK(open.back() == name);
      open.pop_back();
    } else if (!tag.ends_with("/")) {
      open.push_back(name);
    }
  }
  CHECK(open.empty());
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("plot report: write_history writes CSV with a row per epoch under CSVLogger's header, and JSON with the same values") {
  const tandem::History h = three_epochs();
  REQUIRE(h.epoch == std::vector<int>{0, 1, 2});
  const std::vector<std::string> keys{"accuracy", "loss", "val_accuracy", "val_loss"};
  for (const std::string& k : keys) REQUIRE(h.history.at(k).size() == 3);
  TempDir dir;
  tandem::write_history(h, dir.file("history.csv"));
  std::istringstream csv(read(dir.file("history.csv")));
  std::string line;
  std::getline(csv, line);
  CHECK(line == "epoch,accuracy,loss,val_accuracy,val_loss");
  for (int e = 0; e < 3; ++e) {
    REQUIRE(std::getline(csv, line));
    std::istringstream cells(line);
    std::string cell;
    std::getline(cells, cell, ',');
    CHECK(cell == std::to_string(e));
    for (const std::string& k : keys) {
      REQUIRE(std::getline(cells, cell, ','));
      CHECK(std::stod(cell) == h.history.at(k)[static_cast<std::size_t>(e)]);  // Python's repr reads back exactly
    }
  }
  CHECK_FALSE(std::getline(csv, line));

  tandem::write_history(h, dir.file("history.json"));
  const nlohmann::json j = nlohmann::json::parse(read(dir.file("history.json")));
  CHECK(j.at("epoch").get<std::vector<int>>() == h.epoch);
  CHECK(j.at("history").size() == keys.size());
  for (const std::string& k : keys) CHECK(j.at("history").at(k).get<std::vector<double>>() == h.history.at(k));
}

TEST_CASE("plot report: plot_history draws an SVG chart per metric family, train and validation series with a marker per epoch, axes and a legend") {
  const tandem::History h = three_epochs();
  TempDir dir;
  tandem::plot_history(h, dir.file("history_report.svg"));
  keep(dir.file("history_report.svg"));
  const std::string svg = read(dir.file("history_report.svg"));
  CHECK(svg.starts_with("<?xml"));
  check_nesting(svg);
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "<g class=\"chart\"") == 2);
  for (const std::string& family : {std::string("loss"), std::string("accuracy")}) {
    const std::size_t begin = svg.find("<g class=\"chart\" data-family=\"" + family + "\">");
    REQUIRE(begin != std::string::npos);
    const std::string chart = svg.substr(begin, svg.find("<g class=\"chart\"", begin + 1) - begin);
    for (const std::string& key : {family, "val_" + family}) {
      const std::size_t at = chart.find("<g class=\"series\" data-key=\"" + key + "\">");
      REQUIRE_MESSAGE(at != std::string::npos, "no series " << key << " in the " << family << " chart");
      const std::string series = chart.substr(at, chart.find("</g>", at) - at);
      CHECK(count(series, "<polyline") == 1);
      CHECK(count(series, "<circle") == 3);
      const std::size_t points = series.find("points=\"") + 8;
      CHECK(count(series.substr(points, series.find('"', points) - points), ",") == 3);
      CHECK(chart.find(">" + key + "</text></g>") != std::string::npos);  // its legend entry
    }
    CHECK(count(chart, ">epoch</text>") == 1);  // the x axis's label, and its ticks 1, 2, 3
    for (const char* tick : {">1</text>", ">2</text>", ">3</text>"}) CHECK(count(chart, tick) == 1);
  }

  tandem::plot_history(h, dir.file("report.html"));
  const std::string html = read(dir.file("report.html"));
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(html.find(svg.substr(svg.find("<svg"))) != std::string::npos);  // the same SVG, inline
  CHECK(html.ends_with("</html>\n"));
}

TEST_CASE("plot report: clear errors for an empty History, a ragged one, an unknown extension and an unwritable path") {
  tandem::History empty;
  CHECK_THROWS_WITH_AS(tandem::plot_history(empty, "report.svg"),
                       "plot_history: the History has no epochs; pass the History that fit() returned after at least one epoch", tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::write_history(empty, "history.csv"),
                       "write_history: the History has no epochs; pass the History that fit() returned after at least one epoch", tandem::ValueError);
  tandem::History ragged;
  ragged.epoch = {0, 1};
  ragged.history["loss"] = {1.0};
  CHECK_THROWS_WITH_AS(tandem::plot_history(ragged, "report.svg"), "plot_history: History key \"loss\" has 1 values for 2 epochs", tandem::ValueError);
  tandem::History one;
  one.epoch = {0};
  one.history["loss"] = {0.5};
  CHECK_THROWS_WITH_AS(tandem::write_history(one, "history.txt"), "write_history: \"history.txt\": the extension must be .csv or .json",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::plot_history(one, "report.png"), "plot_history: \"report.png\": the extension must be .svg or .html", tandem::ValueError);
  for (const char* path : {"/no/such/folder/history.csv", "/no/such/folder/report.svg"}) {
    try {
      if (std::string(path).ends_with(".csv")) tandem::write_history(one, path);
      else tandem::plot_history(one, path);
      FAIL("expected an error");
    } catch (const tandem::Error& e) {
      CHECK(std::string(e.what()) == std::string(path) + ": cannot create a temporary file in /no/such/folder: No such file or directory");
    }
  }
  // One epoch plots too: its axes get room around the single point.
  TempDir dir;
  tandem::plot_history(one, dir.file("one.svg"));
  CHECK(count(read(dir.file("one.svg")), "<circle") == 1);
}
