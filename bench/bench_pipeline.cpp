// Pipeline on 2 virtual CPU devices (one core each): the bubble, read from a traced step, against
// the schedule's theory, for 1 to 8 micro-batches under GPipe and 1F1B. The model is four Dense
// layers of equal cost (the first, which needs no input gradient, reads 1.5× as many inputs), so
// the automatic cut balances the stages. Each figure is the median of 5 traced steps.
//
// A stage's idle fraction = 1 − (time it computes) / (the step's span over both stages), where it
// computes during its actions (the trace's "forward j" / "backward j" / "update" slices) except
// while a recv kernel waits for the other stage; theory: (S−1)/(M+S−1).
#include <tandem/tandem.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace tl = tandem::layers;
namespace dist = tandem::distribute;

namespace {
constexpr int64_t kBatch = 256, kWidth = 512, kInputs = 768;

tandem::Tensor random(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (float& x : v) x = normal(gen);
  return tandem::Tensor::from({rows, cols}, std::span<const float>(v));
}

struct Bubble {
  double idle[2] = {0, 0};
  double step_ms = 0;
};

Bubble measure(int64_t micro, dist::PipelineSchedule schedule, const tandem::Dataset& d, int64_t step) {
  tandem::set_random_seed(0);
  tandem::Sequential model({tl::InputLayer({kInputs}), tl::Dense(kWidth, "relu"), tl::Dense(kWidth, "relu"), tl::Dense(kWidth, "relu"),
                            tl::Dense(kWidth, "relu")});
  model.compile({.optimizer = "sgd", .loss = tandem::losses::MeanSquaredError(),
                 .strategy = dist::Pipeline({"cpu:0", "cpu:1"}, {.virtual_stages = schedule == dist::PipelineSchedule::Interleaved ? 2 : 1,
                                                                 .micro_batches = micro, .schedule = schedule})});
  const std::string trace = "bench_pipeline_trace.json";
  model.fit(d, {.batch_size = kBatch, .shuffle = false, .verbose = 0, .trace_path = trace, .trace_step = step});
  std::ifstream in(trace);
  const auto events = nlohmann::json::parse(in)["traceEvents"];
  double begin = 1e300, end = 0, busy[2] = {0, 0};
  for (const auto& e : events) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    const int tid = e["tid"];
    if (tid % 2 != 0) continue;  // the compute tracks
    const double b = e["ts"], dur = e["dur"];
    if (name == "recv") busy[tid / 2] -= dur;
    if (!(name.starts_with("forward") || name.starts_with("backward") || name == "update")) continue;
    begin = std::min(begin, b);
    end = std::max(end, b + dur);
    busy[tid / 2] += dur;
  }
  std::remove(trace.c_str());
  Bubble r;
  for (int s = 0; s < 2; ++s) r.idle[s] = 1.0 - busy[s] / (end - begin);
  r.step_ms = (end - begin) / 1000.0;
  return r;
}

Bubble median(int64_t micro, dist::PipelineSchedule schedule, const tandem::Dataset& d) {
  std::vector<Bubble> runs;
  for (int64_t step = 3; step < 8; ++step) runs.push_back(measure(micro, schedule, d, step));
  auto mid = [&](auto field) {
    std::vector<double> v;
    for (const Bubble& b : runs) v.push_back(field(b));
    std::nth_element(v.begin(), v.begin() + 2, v.end());
    return v[2];
  };
  Bubble m;
  m.idle[0] = mid([](const Bubble& b) { return b.idle[0]; });
  m.idle[1] = mid([](const Bubble& b) { return b.idle[1]; });
  m.step_ms = mid([](const Bubble& b) { return b.step_ms; });
  return m;
}

// `--trace PATH`: writes the trace of one step of 4 stages, 1F1B, 8 micro-batches (the picture
// in docs/distributed.md is scripts/trace-to-svg.py of it).
int write_trace(const std::string& path, const tandem::Dataset& d) {
  tandem::set_random_seed(0);
  std::vector<tandem::LayerRef> layers{tl::InputLayer({kInputs})};
  for (int i = 0; i < 8; ++i) layers.push_back(tl::Dense(kWidth, "relu"));
  tandem::Sequential model(layers);
  model.compile({.optimizer = "sgd", .loss = tandem::losses::MeanSquaredError(),
                 .strategy = dist::Pipeline({"cpu:0", "cpu:1", "cpu:2", "cpu:3"}, {.micro_batches = 8})});
  model.summary();
  model.fit(d, {.batch_size = kBatch, .shuffle = false, .verbose = 0, .trace_path = path, .trace_step = 3});
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const tandem::Dataset d{random(8 * kBatch, kInputs, 1), random(8 * kBatch, kWidth, 2)};
  if (argc == 3 && std::string(argv[1]) == "--trace") return write_trace(argv[2], d);
  std::printf("## Pipeline bubble, 2 stages (one core each), 4 × Dense(%lld), batch %lld\n\n", static_cast<long long>(kWidth),
              static_cast<long long>(kBatch));
  std::printf("| schedule | micro-batches | step ms | idle stage 0 | idle stage 1 | theory |\n|---|---:|---:|---:|---:|---:|\n");
  // Theory: (S−1)/(M+S−1), and (S−1)/(v·M+S−1) with v chunks per device (interleaved).
  for (auto schedule : {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB, dist::PipelineSchedule::Interleaved})
    for (int64_t micro : {1, 2, 4, 8}) {
      const bool interleaved = schedule == dist::PipelineSchedule::Interleaved;
      if (interleaved && micro % 2 != 0) continue;
      const Bubble b = median(micro, schedule, d);
      const char* name = schedule == dist::PipelineSchedule::GPipe ? "GPipe" : interleaved ? "interleaved, 2 chunks" : "1F1B";
      std::printf("| %s | %lld | %.2f | %.2f | %.2f | %.2f |\n", name, static_cast<long long>(micro), b.step_ms, b.idle[0], b.idle[1],
                  1.0 / double((interleaved ? 2 : 1) * micro + 1));
    }
}
