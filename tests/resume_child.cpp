// The training run that test_checkpoints interrupts and restarts.
//
//   resume_child BACKUP_DIR OUT_FILE [KILL_AT_STEP]
//
// Trains a small MLP with Dropout on fixed synthetic data (fixed seed, shuffled batches of 32 with
// a partial last batch, a validation split, 4 epochs) with BackupAndRestore(BACKUP_DIR, every 7
// batches), then writes to OUT_FILE every weight and optimizer variable (raw bytes) followed by the
// History as text. With KILL_AT_STEP the process sends itself SIGKILL when the run reaches that
// training step (counted from the start of training, across restarts), just before the backup that
// step would write. With RESUME_CHILD_STRATEGY=pipeline in the environment it trains under
// Pipeline over cpu:0 and cpu:1 with 2 micro-batches instead of Default; with =mesh, under
// ModelSplit over a 2×2 mesh (batch × model); with =sharded, under Mirrored over cpu:0 and cpu:1
// with sharded weights (ShardLevel::Weights); with =multiworker, under MultiWorkerMirrored (one
// device per worker, started by mpirun); with =spread_pipeline, under Pipeline with one stage on
// each worker's cpu:0 (across_workers). Under mpirun only the chief writes OUT_FILE and
// RESUME_CHILD_STOP_WORKER=W makes only worker W reach KILL_AT_STEP, which with
// RESUME_CHILD_STOP_HOW=stop it reaches by stopping (SIGSTOP) instead of dying;
// RESUME_CHILD_TIMEOUT_MS sets the strategy's timeout.
#include <tandem/tandem.h>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

namespace {

constexpr int64_t kRows = 2000, kFeatures = 16, kClasses = 4;

tandem::Dataset make_data() {
  std::mt19937_64 gen(2024);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(kRows * kFeatures));
  std::vector<int32_t> y(static_cast<std::size_t>(kRows));
  for (int64_t r = 0; r < kRows; ++r) {
    float s = 0;
    for (int64_t f = 0; f < kFeatures; ++f) s += (x[static_cast<std::size_t>(r * kFeatures + f)] = normal(gen)) * float(f % 5 - 2);
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(std::abs(static_cast<int>(s)) % kClasses);
  }
  return {tandem::Tensor::from({kRows, kFeatures}, std::span<const float>(x)), tandem::Tensor::from({kRows}, std::span<const int32_t>(y))};
}

class KillAtStep : public tandem::Callback {
 public:
  KillAtStep(int64_t step, int signal) : step_(step), signal_(signal) {}
  void on_train_batch_end(int64_t, const tandem::Logs&) override {
    if (model_->fit_progress().steps == step_) ::raise(signal_);
  }

 private:
  int64_t step_;
  int signal_;
};

std::string env_or(const char* name, const char* otherwise) {
  const char* v = std::getenv(name);
  return v ? v : otherwise;
}

void write_raw(std::ofstream& out, const tandem::Tensor& t) { out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.bytes())); }

}  // namespace

int run(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: resume_child BACKUP_DIR OUT_FILE [KILL_AT_STEP]\n");
    return 2;
  }
  namespace tl = tandem::layers;
  tandem::set_random_seed(77);
  const tandem::Dataset data = make_data();
  tandem::Sequential model({tl::InputLayer({kFeatures}), tl::Dense(32, "relu"), tl::Dropout(0.25), tl::Dense(16, "relu"), tl::Dropout(0.1),
                            tl::Dense(kClasses)});
  const std::string name = env_or("RESUME_CHILD_STRATEGY", "");
  namespace dist = tandem::distribute;
  dist::StrategyPtr strategy = dist::Default();
  if (name == "pipeline") strategy = dist::Pipeline({"cpu:0", "cpu:1"}, {.micro_batches = 2});
  if (name == "mesh")  // Megatron's split of the first two layers, data parallel over the rows
    strategy = dist::ModelSplit(dist::DeviceMesh{{2, 2}, {"batch", "model"}, {"cpu:0", "cpu:1", "cpu:2", "cpu:3"}},
                                {{"dense/kernel", {"", "model"}}, {"dense/bias", {"model"}}, {"dense_1/kernel", {"model", ""}}});
  if (name == "sharded") strategy = dist::Mirrored({"cpu:0", "cpu:1"}, {.shard = dist::ShardLevel::Weights});
  const int64_t timeout_ms = std::stoll(env_or("RESUME_CHILD_TIMEOUT_MS", "60000"));
  if (name == "multiworker") strategy = dist::MultiWorkerMirrored({"cpu:0"}, {.timeout_ms = timeout_ms});
  if (name == "spread_pipeline") strategy = dist::Pipeline(dist::across_workers({"cpu:0"}), {.micro_batches = 2, .timeout_ms = timeout_ms});
  model.compile({.optimizer = tandem::optimizers::Adam(3e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .strategy = strategy});
  std::vector<tandem::CallbackPtr> callbacks;
  const std::string stopping = env_or("RESUME_CHILD_STOP_WORKER", "");
  if (argc == 4 && (stopping.empty() || std::stoi(stopping) == dist::this_worker().rank))
    callbacks.push_back(std::make_shared<KillAtStep>(std::stoll(argv[3]), env_or("RESUME_CHILD_STOP_HOW", "kill") == "stop" ? SIGSTOP : SIGKILL));
  callbacks.push_back(tandem::callbacks::BackupAndRestore(argv[1], {.save_freq = 7}));
  const tandem::History history =
      model.fit(data, {.epochs = 4, .batch_size = 32, .validation_split = 0.1, .verbose = 0, .callbacks = callbacks});
  if (!dist::this_worker().chief()) return 0;

  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  for (const tandem::Tensor& w : model.get_weights()) write_raw(out, w);
  for (const tandem::VariablePtr& v : model.optimizer()->variables()) write_raw(out, v->value());
  out << "\nhistory";
  for (int e : history.epoch) out << " " << e;
  out << "\n";
  for (const auto& [key, values] : history.history) {
    out << key;
    char buffer[40];
    for (double v : values) std::snprintf(buffer, sizeof buffer, " %a", v), out << buffer;
    out << "\n";
  }
  out.close();
  return out ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resume_child: %s\n", e.what());
    return 1;
  }
}
