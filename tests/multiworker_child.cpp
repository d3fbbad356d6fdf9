// The training run that tests/multiworker_test.sh starts alone and under mpirun.
//
//   multiworker_child default OUT_FILE           Default strategy, one process
//   multiworker_child workers L OUT_FILE         MultiWorkerMirrored, L virtual devices per worker
//                                                (L = "rank+1": a different count on each worker)
//   multiworker_child deep OUT_FILE              Default strategy, one process, the deeper model below
//   multiworker_child spread KIND L OUT_FILE     the deeper model under a strategy over the devices
//                                                of every worker (across_workers, L per worker):
//     pipeline   Pipeline, one stage per worker (its L devices replicas), 4 micro-batches, 1F1B
//     pipemodel  Pipeline of 2 stages (from dense_2 on), each replica of a stage over 2 devices that
//                split its Dense layers (Megatron's pairs), workers·L/4 replicas: data × pipeline × model
//     split      ModelSplit by placement, the layers over all the devices
//     mesh       ModelSplit over a 2 × (workers·L/2) mesh (batch × model), Megatron's split of the
//                first two Dense layers: the model axis within a worker, or across workers
//     model      ModelSplit over a mesh of one "model" axis over every device: each weight's
//                blocks on different workers
//     tp2d       TensorParallel2D over a 2 × (workers·L/2) mesh: each Dense kernel in blocks over
//                both axes (blocks of blocks), the mesh's rows on different workers
//     sharded    Mirrored over every device with sharded weights (ShardLevel::Weights): each
//                weight's row blocks on different workers, gathered and reduce-scattered across
//     mwm-sharded  the same by MultiWorkerMirrored over each worker's L devices
//   multiworker_child compare A B TOLERANCE      exit 0 when every number of B is within
//                                                TOLERANCE·max|A| of A's, else print and exit 1
//
// With MULTIWORKER_CHILD_STREAMED=1 set, the same data is streamed from a Source (two decode
// threads), and each worker prints "worker R read N training samples": its share of the rows.
//
// Trains an MLP with Dropout on fixed synthetic data for one epoch of 5 shuffled steps (batch 32,
// 150 rows: the last batch has 22 rows, split unevenly over the replicas), then evaluates and
// predicts. The chief writes OUT_FILE: the weights, the optimizer's slots, the epoch's loss and
// accuracy, evaluate's loss and accuracy and predict's outputs, as float64 numbers.
#include <tandem/tandem.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kRows = 150, kFeatures = 12, kClasses = 3;

tandem::Dataset make_data() {
  std::mt19937_64 gen(7);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(kRows * kFeatures));
  std::vector<int32_t> y(static_cast<std::size_t>(kRows));
  for (int64_t r = 0; r < kRows; ++r) {
    float s = 0;
    for (int64_t f = 0; f < kFeatures; ++f) s += (x[static_cast<std::size_t>(r * kFeatures + f)] = normal(gen)) * float(f % 3 - 1);
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(std::abs(static_cast<int>(2 * s)) % kClasses);
  }
  return {tandem::Tensor::from({kRows, kFeatures}, std::span<const float>(x)), tandem::Tensor::from({kRows}, std::span<const int32_t>(y))};
}

// make_data()'s rows read one at a time, counted.
class CountingSource : public tandem::Source {
 public:
  explicit CountingSource(tandem::Dataset data) : data_(std::move(data)) {}
  int64_t size() const override { return kRows; }
  tandem::SampleType sample_type() const override { return {{{tandem::Shape{kFeatures}, tandem::DType::F32}}, {{tandem::Shape{}, tandem::DType::I32}}}; }
  void read(int64_t index, std::span<std::byte* const> out) const override {
    reads.fetch_add(1);
    std::memcpy(out[0], data_.x().data<float>() + index * kFeatures, kFeatures * sizeof(float));
    std::memcpy(out[1], data_.y().data<int32_t>() + index, sizeof(int32_t));
  }
  std::string describe() const override { return "counted rows"; }
  mutable std::atomic<int64_t> reads{0};

 private:
  tandem::Dataset data_;
};

void append(std::vector<double>& out, const tandem::Tensor& t) {
  for (int64_t i = 0; i < t.size(); ++i) out.push_back(t.item(i));
}

int train(tandem::distribute::StrategyPtr strategy, const std::string& out_file, bool deep = false) {
  namespace tl = tandem::layers;
  tandem::set_random_seed(5);
  const tandem::Dataset data = make_data();
  std::vector<tandem::LayerRef> layers{tl::InputLayer({kFeatures}), tl::Dense(24, "relu"), tl::Dropout(0.2)};
  if (deep) layers.insert(layers.end(), {tl::Dense(16, "relu"), tl::Dense(12, "relu")});
  layers.push_back(tl::Dense(kClasses));
  tandem::Sequential model(layers);
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .strategy = strategy});
  const char* streamed = std::getenv("MULTIWORKER_CHILD_STREAMED");
  const auto source = std::make_shared<CountingSource>(data);
  const tandem::History h = streamed && std::string(streamed) == "1"
                                ? model.fit(tandem::Dataset::from_source(source, {.num_parallel_calls = 2}), {.epochs = 1, .batch_size = 32, .verbose = 1})
                                : model.fit(data, {.epochs = 1, .batch_size = 32, .verbose = 1});
  if (streamed) std::printf("worker %d read %lld training samples\n", tandem::distribute::this_worker().rank, static_cast<long long>(source->reads.load()));
  const tandem::Logs eval = model.evaluate(data, {.batch_size = 40, .verbose = 0});
  const tandem::Tensor predicted = model.predict(data.x(), {.batch_size = 64});
  if (!tandem::distribute::this_worker().chief()) return 0;
  std::vector<double> numbers;
  for (const tandem::Tensor& w : model.get_weights()) append(numbers, w);
  for (const tandem::VariablePtr& v : model.optimizer()->variables()) append(numbers, v->value());
  numbers.push_back(h.history.at("loss").back());
  numbers.push_back(h.history.at("accuracy").back());
  numbers.push_back(eval.at("loss"));
  numbers.push_back(eval.at("accuracy"));
  append(numbers, predicted);
  std::ofstream out(out_file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(numbers.data()), static_cast<std::streamsize>(numbers.size() * sizeof(double)));
  return out ? 0 : 1;
}

tandem::distribute::StrategyPtr spread(const std::string& kind, int local) {
  namespace dist = tandem::distribute;
  std::vector<std::string> devices;
  for (int d = 0; d < local; ++d) devices.push_back("cpu:" + std::to_string(d));
  const std::vector<std::string> all = dist::across_workers(devices);
  const auto n = static_cast<int64_t>(all.size());
  const dist::LayoutMap megatron{{"dense/kernel", {"", "model"}}, {"dense/bias", {"model"}}, {"dense_1/kernel", {"model", ""}}};
  if (kind == "pipeline") return dist::Pipeline(all, {.micro_batches = 4, .replicas = local});
  if (kind == "pipemodel")  // 2 stages, each over pairs of devices splitting its Dense layers, replicated over the rest
    return dist::Pipeline(all, {.boundaries = {"dense_2"}, .micro_batches = 4, .replicas = n / 4, .model_split = 2,
                                .layout_map = {{"dense/kernel", {"", "model"}}, {"dense/bias", {"model"}}, {"dense_1/kernel", {"model", ""}},
                                               {"dense_2/kernel", {"", "model"}}, {"dense_2/bias", {"model"}}, {"dense_3/kernel", {"model", ""}}}});
  if (kind == "split") return dist::ModelSplit(all);
  if (kind == "mesh") return dist::ModelSplit(dist::DeviceMesh{{2, n / 2}, {"batch", "model"}, all}, megatron);
  if (kind == "model") return dist::ModelSplit(dist::DeviceMesh{{n}, {"model"}, all}, megatron);
  if (kind == "tp2d") return dist::TensorParallel2D(all, 2, n / 2);
  if (kind == "sharded") return dist::Mirrored(all, {.shard = dist::ShardLevel::Weights});
  if (kind == "mwm-sharded") return dist::MultiWorkerMirrored(devices, {.shard = dist::ShardLevel::Weights});
  throw std::invalid_argument("unknown kind " + kind);
}

std::vector<double> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<double> v;
  for (double x; in.read(reinterpret_cast<char*>(&x), sizeof x);) v.push_back(x);
  return v;
}

int compare(const std::string& a_file, const std::string& b_file, double tolerance) {
  const std::vector<double> a = read(a_file), b = read(b_file);
  if (a.empty() || a.size() != b.size()) {
    std::printf("%s has %zu numbers, %s has %zu\n", a_file.c_str(), a.size(), b_file.c_str(), b.size());
    return 1;
  }
  double scale = 0, worst = 0;
  std::size_t at = 0;
  for (double x : a) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > worst) worst = std::abs(a[i] - b[i]), at = i;
  std::printf("%zu numbers, largest difference %.3g at %zu (%.9g vs %.9g), relative to the largest value %.3g\n", a.size(), worst, at, a[at], b[at],
              worst / scale);
  return worst <= tolerance * scale ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "default" && argc == 3) return train(tandem::distribute::Default(), argv[2]);
    if (mode == "workers" && argc == 4) {
      std::vector<std::string> devices;
      const std::string l = argv[2];
      const int local = l == "rank+1" ? tandem::distribute::this_worker().rank + 1 : std::stoi(l);
      for (int d = 0; d < local; ++d) devices.push_back("cpu:" + std::to_string(d));
      return train(tandem::distribute::MultiWorkerMirrored(devices), argv[3]);
    }
    if (mode == "deep" && argc == 3) return train(tandem::distribute::Default(), argv[2], true);
    if (mode == "spread" && argc == 5) return train(spread(argv[2], std::stoi(argv[3])), argv[4], true);
    if (mode == "compare" && argc == 5) return compare(argv[2], argv[3], std::stod(argv[4]));
    std::fprintf(stderr, "usage: multiworker_child default OUT | workers L OUT | deep OUT | spread KIND L OUT | compare A B TOLERANCE\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multiworker_child: %s\n", e.what());
    return 1;
  }
}
