// MultiWorkerMirrored against one process, and the all-reduce between processes against the
// in-process ring. bench/run_multiworker.sh runs both sides in one go.
//
//   bench_multiworker train default|workers|pipeline|spread BATCH
//                                                   Fashion-MNIST MLP, 2 epochs: samples/s of the second
//   bench_multiworker allreduce                     (under mpirun -np 2) MPI ring vs in-process ring
#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "comm/inprocess.h"
#include "comm/world.h"

using Clock = std::chrono::steady_clock;
namespace comm = tandem::comm;
namespace tl = tandem::layers;

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class EpochTimer : public tandem::Callback {
 public:
  void on_epoch_begin(int, const tandem::Logs&) override { start_ = Clock::now(); }
  void on_epoch_end(int, const tandem::Logs&) override { last_ = seconds_since(start_); }
  double last_ = 0;

 private:
  Clock::time_point start_;
};

// default: one device; workers: MultiWorkerMirrored, a device per worker; pipeline: 2 stages on 2
// virtual devices of one process; spread: 2 stages, one on each worker's device (across_workers).
tandem::distribute::StrategyPtr strategy(const std::string& how) {
  namespace dist = tandem::distribute;
  if (how == "workers") return dist::MultiWorkerMirrored({"cpu:0"});
  if (how == "pipeline") return dist::Pipeline({"cpu:0", "cpu:1"}, {.micro_batches = 4});
  if (how == "spread") return dist::Pipeline(dist::across_workers({"cpu:0"}), {.micro_batches = 4});
  return dist::Default();
}

int train(const std::string& how, int64_t batch) {
  tandem::set_random_seed(1);
  auto [data, test] = tandem::datasets::fashion_mnist();
  tandem::Sequential model({tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(256, "relu"), tl::Dense(10)});
  namespace dist = tandem::distribute;
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .strategy = strategy(how)});
  auto timer = std::make_shared<EpochTimer>();
  model.fit(data, {.epochs = 2, .batch_size = batch, .verbose = 0, .callbacks = {timer}});
  if (dist::this_worker().chief()) std::printf("%.0f\n", double(data.size()) / timer->last_);
  return 0;
}

double busbw(std::size_t bytes, double seconds, int k) { return double(bytes) / seconds / 1e9 * 2.0 * (k - 1) / k; }

double in_process(std::size_t bytes, int reps) {
  comm::InProcessCommunicator c({"cpu:0", "cpu:1"});
  const std::size_t n = bytes / sizeof(float);
  std::vector<std::vector<float>> data(2, std::vector<float>(n, 1.0f));
  double elapsed = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      float* d = data[static_cast<std::size_t>(r)].data();
      c.all_reduce(r, d, n, tandem::DType::F32, comm::ReduceOp::Sum);
      c.barrier(r);
      const auto t = Clock::now();
      for (int i = 0; i < reps; ++i) c.all_reduce(r, d, n, tandem::DType::F32, comm::ReduceOp::Sum);
      if (r == 0) elapsed = seconds_since(t);
    });
  for (auto& t : threads) t.join();
  return busbw(bytes, elapsed / reps, 2);
}

int allreduce() {
  const tandem::distribute::Worker me = comm::world();
  auto c = comm::worker_communicator();
  if (me.chief()) std::printf("| size | MPI ring, 2 processes: busbw GB/s | in-process ring, 2 threads: busbw GB/s | ratio |\n|---|---|---|---|\n");
  for (std::size_t mb : {1, 4, 16, 64}) {
    const std::size_t bytes = mb << 20, n = bytes / sizeof(float);
    const int reps = mb <= 4 ? 40 : mb <= 16 ? 10 : 4;
    std::vector<float> d(n, 1.0f);
    c->all_reduce(me.rank, d.data(), n, tandem::DType::F32, comm::ReduceOp::Sum);
    c->barrier(me.rank);
    const auto t = Clock::now();
    for (int i = 0; i < reps; ++i) c->all_reduce(me.rank, d.data(), n, tandem::DType::F32, comm::ReduceOp::Sum);
    const double mpi = busbw(bytes, seconds_since(t) / reps, me.count);
    c->barrier(me.rank);
    if (me.chief()) {
      const double local = in_process(bytes, reps);  // the other worker waits in the barrier below
      std::printf("| %zu MB | %.2f | %.2f | %.2f |\n", mb, mpi, local, mpi / local);
    }
    c->barrier(me.rank);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "train" && argc == 4) return train(argv[2], std::stoll(argv[3]));
  if (mode == "allreduce") return allreduce();
  std::fprintf(stderr, "usage: bench_multiworker train default|workers BATCH | allreduce\n");
  return 2;
}
