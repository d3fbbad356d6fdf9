// keras.utils.plot_model: the layer graph in Graphviz's DOT language, rendered by the `dot`
// program when it is installed, each layer coloured by where a placing strategy runs it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "distribute/strategy.h"
#include "io/atomic_file.h"
#include "model/model_impl.h"
#include "tandem/errors.h"
#include "tandem/plot.h"

extern char** environ;

namespace tandem {

// The one door into Model's internals that plotting needs (a friend of Model).
struct ModelPlotAccess {
  using Impl = Model::Impl;
  static const Impl& impl(const Model& m) { return *m.impl_; }
};
using ModelImpl = ModelPlotAccess::Impl;

namespace {

// Pale enough for black text, distinct enough side by side (ColorBrewer's Paired and Set3).
const char* const kPalette[] = {"#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99",
                                "#8dd3c7", "#fccde5", "#bebada", "#80b1d3", "#ccebc5", "#d9d9d9"};
constexpr std::size_t kColours = sizeof(kPalette) / sizeof(kPalette[0]);

// A DOT string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

// Where each layer runs: the strategy's placement (what summary() prints below Keras's table), a
// group per stage and set of devices. A strategy that runs every layer everywhere (Mirrored,
// ModelSplit over a mesh) places none: no colours.
struct Placement {
  std::string title;                            // the strategy's line: "Pipeline: 2 stages, GPipe"
  std::vector<std::string> groups;              // "stage 0 · cpu:0", in the placement's order
  std::map<std::string, std::size_t> group_of;  // layer name -> index into groups
};

std::string group_name(const distribute::LayerPlace& place) {
  std::string name;
  if (place.stage >= 0) {
    name = "stage " + std::to_string(place.stage);
    if (place.chunk >= 0) name += " (" + std::to_string(place.chunk) + ")";
    name += " · ";
  }
  for (std::size_t d = 0; d < place.devices.size(); ++d) name += (d ? ", " : "") + place.devices[d];
  return name;
}

Placement placement_of(const ModelImpl& m) {
  Placement p;
  if (!m.compiled || !m.strategy) return p;
  const distribute::PlacementTable t = m.strategy->placement(m.layer_graph(32));  // as summary() does
  if (t.layers.empty()) return p;
  p.title = t.title;
  for (const distribute::LayerPlace& place : t.layers) {
    const std::string group = group_name(place);
    auto it = std::find(p.groups.begin(), p.groups.end(), group);
    if (it == p.groups.end()) it = p.groups.insert(p.groups.end(), group);
    p.group_of[place.layer] = static_cast<std::size_t>(it - p.groups.begin());
  }
  return p;
}

std::string node_label(const std::string& name, const std::string& class_name, const Shape& shape, DType dtype,
                       const PlotModelOptions& o) {
  std::string label = o.show_layer_names ? name + " (" + class_name + ")" : class_name;
  if (o.show_shapes) label.append("\nOutput shape: ").append(shape.str());
  if (o.show_dtype) label.append("\ndtype: ").append(dtype_name(dtype));
  return label;
}

// The extension of `path` that names a format plot_model writes; anything else is a ValueError.
std::string format_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".svg" || ext == ".png" || ext == ".pdf" || ext == ".dot") return ext.substr(1);
  throw ValueError("plot_model: \"" + path + "\": cannot tell the picture's format from its extension; use .svg, .png, .pdf or .dot");
}

// The executable `program` in PATH's folders, as a shell would find it; empty when there is none.
std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::string candidate = (folder.empty() ? std::string(".") : folder) + "/" + program;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Removes a scratch file however the scope is left.
struct ScratchFile {
  std::string path;
  ~ScratchFile() { ::unlink(path.c_str()); }
};

// Runs `argv` and waits for it (at most a minute: a graph of layers takes dot milliseconds). A
// failure to start, a non-zero exit status or a signal is a tandem::Error naming the command and
// quoting what it wrote to standard error.
void run(const std::vector<std::string>& argv, const std::string& stderr_path) {
  std::string command;
  for (const std::string& a : argv) command.append(command.empty() ? "" : " ").append(a);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (started != 0) throw Error("plot_model: cannot run `" + command + "`: " + std::strerror(started));
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw Error("plot_model: `" + command + "` did not finish within 60 s; it was stopped");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream err(stderr_path);
  std::string said((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
  std::string why = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                      : "was killed by signal " + std::to_string(WTERMSIG(status));
  if (!said.empty()) why.append(": ").append(said);
  throw Error("plot_model: `" + command + "` " + why);
}

void write_text(const std::string& path, const std::string& text) {
  io::write_atomically(path, [&](const std::string& temp) { io::write_file(temp, text.data(), text.size()); });
}

}  // namespace

std::string model_to_dot(const Model& model, const PlotModelOptions& o) {
  const ModelImpl& m = ModelPlotAccess::impl(model);
  if (m.calls.empty())
    throw ValueError(m.class_name + " \"" + m.name + "\": the model has no layers to plot yet; build it (or fit it) first");
  if (o.rankdir != "TB" && o.rankdir != "LR" && o.rankdir != "BT" && o.rankdir != "RL")
    throw ValueError("plot_model: rankdir must be \"TB\", \"LR\", \"BT\" or \"RL\", got \"" + o.rankdir + "\"");
  if (o.dpi < 1) throw ValueError("plot_model: dpi must be >= 1, got " + std::to_string(o.dpi));
  const Placement placement = placement_of(m);

  std::string dot = "digraph " + quoted(m.name) + " {\n";
  dot += "  graph [rankdir=" + o.rankdir + ", dpi=" + std::to_string(o.dpi) + ", fontname=\"Helvetica\", fontsize=12];\n";
  dot += "  node [shape=box, style=\"rounded,filled\", fillcolor=\"white\", fontname=\"Helvetica\", fontsize=11];\n";
  dot += "  edge [color=\"#555555\"];\n";
  // Ids by position: a layer called twice is two nodes with one name.
  std::map<const Symbol::Node*, std::string> id;
  std::string edges;
  int inputs = 0;
  for (std::size_t i = 0; i < m.calls.size(); ++i) {
    const Symbol::Node& call = *m.calls[i];
    for (const Symbol& s : call.inputs) {
      const Symbol::Node* from = s.node().get();
      if (!from->layer && !id.count(from)) {  // a model input, first seen here
        id[from] = "input_" + std::to_string(inputs++);
        dot += "  " + id[from] + " [label=" + quoted(node_label(from->input_name, "InputLayer", from->shape, from->dtype, o)) + "];\n";
      }
    }
    const std::string me = id[&call] = "call_" + std::to_string(i);
    dot += "  " + me + " [label=" + quoted(node_label(call.layer->name(), call.layer->class_name(), call.shape, call.dtype, o));
    if (const auto it = placement.group_of.find(call.layer->name()); it != placement.group_of.end())
      dot += ", fillcolor=\"" + std::string(kPalette[it->second % kColours]) + "\", tooltip=" + quoted(placement.groups[it->second]);
    dot += "];\n";
    for (const Symbol& s : call.inputs) edges += "  " + id.at(s.node()->call_node()) + " -> " + me + ";\n";
  }
  dot += edges;
  if (!placement.groups.empty()) {
    dot += "  subgraph cluster_legend {\n    label=" + quoted(placement.title) + ";\n    style=\"rounded\";\n    color=\"#999999\";\n";
    for (std::size_t g = 0; g < placement.groups.size(); ++g)
      dot += "    legend_" + std::to_string(g) + " [label=" + quoted(placement.groups[g]) + ", fillcolor=\"" + kPalette[g % kColours] + "\"];\n";
    for (std::size_t g = 1; g < placement.groups.size(); ++g)  // invisible links keep the entries in order
      dot += "    legend_" + std::to_string(g - 1) + " -> legend_" + std::to_string(g) + " [style=invis];\n";
    dot += "  }\n";
  }
  return dot + "}\n";
}

PlotResult plot_model(const Model& model, const std::string& path, const PlotModelOptions& options) {
  const std::string format = format_of(path);
  const std::string dot = model_to_dot(model, options);
  if (format == "dot") {
    write_text(path, dot);
    return {path, false, ""};
  }
  const std::string program = find_on_path("dot");
  if (program.empty()) {
    const std::string dot_path = std::filesystem::path(path).replace_extension(".dot").string();
    write_text(dot_path, dot);
    PlotResult r{dot_path, false, ""};
    r.message = "plot_model: Graphviz's `dot` is not on PATH, so " + dot_path + " holds the graph instead of " + path +
                "; install Graphviz (apt-get install graphviz) and run: dot -T" + format + " " + dot_path + " -o " + path;
    std::cerr << r.message << "\n";
    return r;
  }
  io::write_atomically(path, [&](const std::string& temp) {
    const ScratchFile source{temp + ".dot"}, err{temp + ".err"};
    io::write_file(source.path, dot.data(), dot.size());
    run({program, "-T" + format, source.path, "-o", temp}, err.path);
  });
  return {path, true, ""};
}

}  // namespace tandem
