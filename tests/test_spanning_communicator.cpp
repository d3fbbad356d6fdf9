// SpanningCommunicator (comm/spanning.h) with its workers simulated in one process: each worker
// has its own in-process communicator over its devices, and the mailbox between the workers is an
// in-memory one with MPI's mailbox contract (a post returns at once; a take waits, bounded, for
// the oldest message from that worker with its key). Every device is a thread — more threads than
// the machine's cores — and results are checked against closed form and for equal bits on every
// device. The same class between real processes runs in tests/spread_workers_test.sh.
#include <doctest/doctest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>

#include "comm/inprocess.h"
#include "comm/spanning.h"
#include "tandem/errors.h"

namespace comm = tandem::comm;
using tandem::DType;

namespace {
struct PostOffice {
  std::mutex mutex;
  std::condition_variable arrived;
  std::map<std::tuple<int, int, comm::MessageKey>, std::deque<std::vector<std::byte>>> boxes;  // (to, from, key)
  bool aborted = false;
  std::chrono::milliseconds wait{20000};  // a take's bound
};

class MemoryMailbox final : public comm::Mailbox {
 public:
  MemoryMailbox(std::shared_ptr<PostOffice> office, int worker) : office_(std::move(office)), worker_(worker) {}
  void post(int to, const comm::MessageKey& key, const void* data, std::size_t bytes) override {
    std::lock_guard lock(office_->mutex);
    const auto* p = static_cast<const std::byte*>(data);
    office_->boxes[{to, worker_, key}].emplace_back(p, p + bytes);
    office_->arrived.notify_all();
  }
  void take(int from, const comm::MessageKey& key, void* data, std::size_t bytes) override {
    std::unique_lock lock(office_->mutex);
    auto& box = office_->boxes[{worker_, from, key}];
    if (!office_->arrived.wait_for(lock, office_->wait, [&] { return !box.empty() || office_->aborted; }))
      throw tandem::TimeoutError("take on worker " + std::to_string(worker_) + ": nothing from worker " + std::to_string(from) + " within " +
                                 std::to_string(office_->wait.count()) + " ms");
    if (office_->aborted) throw comm::Aborted("take on worker " + std::to_string(worker_) + " abandoned");
    REQUIRE(box.front().size() == bytes);
    std::memcpy(data, box.front().data(), bytes);
    box.pop_front();
  }
  void abort(const std::string&) override {
    std::lock_guard lock(office_->mutex);
    office_->aborted = true;
    office_->arrived.notify_all();
  }
  void reset() override { office_->aborted = false; }

 private:
  std::shared_ptr<PostOffice> office_;
  int worker_;
};

// `workers` simulated workers of `local` devices each: worker w's communicator over all of them.
std::vector<std::shared_ptr<comm::Communicator>> spanning(int workers, int local, std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  auto office = std::make_shared<PostOffice>();
  office->wait = wait;
  std::vector<std::shared_ptr<comm::Communicator>> out;
  for (int w = 0; w < workers; ++w) {
    std::vector<std::string> names;
    for (int d = 0; d < local; ++d) names.push_back("cpu:" + std::to_string(d));
    auto in_process = std::make_shared<comm::InProcessCommunicator>(names);
    in_process->set_timeout(std::chrono::seconds(20));
    out.push_back(std::make_shared<comm::SpanningCommunicator>(in_process, std::make_shared<MemoryMailbox>(office, w), w, workers));
  }
  return out;
}

// body(rank) on a thread of its own for each of `ranks`; the first exception is rethrown.
void run_ranks(const std::vector<int>& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::mutex m;
  std::exception_ptr first;
  for (int r : ranks)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard lock(m);
        if (!first) first = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}
}  // namespace

TEST_CASE("spanning communicator: all_reduce, all_gather and broadcast over 3 workers of 2 devices equal closed form") {
  const int workers = 3, local = 2, n = workers * local;
  const auto comms = spanning(workers, local);
  constexpr std::size_t count = 1000;
  std::vector<std::vector<float>> sums(n), gathered(n), broadcast(n);
  std::vector<std::vector<double>> means(n);
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  run_ranks(all, [&](int r) {
    comm::Communicator& c = *comms[static_cast<std::size_t>(r / local)];
    auto& sum = sums[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < count; ++i) sum.push_back(static_cast<float>(r) + 0.5f * static_cast<float>(i));  // exact in float
    c.all_reduce(r, sum.data(), count, DType::F32, comm::ReduceOp::Sum);
    auto& mean = means[static_cast<std::size_t>(r)];
    mean.assign(3, static_cast<double>(r));
    c.all_reduce(r, mean.data(), mean.size(), DType::F64, comm::ReduceOp::Mean);
    const float mine[2] = {static_cast<float>(r), static_cast<float>(10 * r)};
    auto& g = gathered[static_cast<std::size_t>(r)];
    g.resize(2 * n);
    c.all_gather(r, mine, g.data(), 2, DType::F32);
    auto& b = broadcast[static_cast<std::size_t>(r)];
    b.assign(4, r == 3 ? 7.0f : -1.0f);
    c.broadcast(r, b.data(), b.size() * sizeof(float), 3);  // from worker 1's second device
  });
  for (int r = 0; r < n; ++r) {
    const auto R = static_cast<std::size_t>(r);
    for (std::size_t i = 0; i < count; ++i) REQUIRE(sums[R][i] == static_cast<float>(15 + 6 * 0.5 * static_cast<double>(i)));  // Σr = 15
    for (double m : means[R]) CHECK(m == doctest::Approx(2.5));
    for (int s = 0; s < n; ++s) {
      CHECK(gathered[R][static_cast<std::size_t>(2 * s)] == static_cast<float>(s));
      CHECK(gathered[R][static_cast<std::size_t>(2 * s + 1)] == static_cast<float>(10 * s));
    }
    for (float v : broadcast[R]) CHECK(v == 7.0f);
  }
}

TEST_CASE("spanning communicator: every device of every worker ends an all-reduce of random floats with the same bits") {
  const int workers = 2, local = 3, n = workers * local;
  const auto comms = spanning(workers, local);
  constexpr std::size_t count = 4097;
  std::vector<std::vector<float>> data(n);
  std::vector<double> exact(count, 0.0);
  std::mt19937 gen(11);
  std::normal_distribution<float> normal;
  for (auto& d : data)
    for (std::size_t i = 0; i < count; ++i) exact[i] += d.emplace_back(normal(gen));
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  run_ranks(all, [&](int r) { comms[static_cast<std::size_t>(r / local)]->all_reduce(r, data[static_cast<std::size_t>(r)].data(), count, DType::F32, comm::ReduceOp::Sum); });
  for (int r = 1; r < n; ++r) REQUIRE(std::memcmp(data[0].data(), data[static_cast<std::size_t>(r)].data(), count * sizeof(float)) == 0);
  for (std::size_t i = 0; i < count; ++i) CHECK(data[0][i] == doctest::Approx(exact[i]).epsilon(1e-5));
}

TEST_CASE("spanning communicator: a group of devices on three workers, and transfers between workers taken in another order than sent") {
  const int workers = 3, local = 2;
  const auto comms = spanning(workers, local);
  // Group {1, 2, 5}: worker 0's second device, worker 1's first, worker 2's second.
  const std::vector<int64_t> members{1, 2, 5};
  std::vector<std::shared_ptr<comm::Communicator>> groups;
  for (int w = 0; w < workers; ++w) groups.push_back(comms[static_cast<std::size_t>(w)]->subgroup({1, 2, 5}));
  std::vector<double> got(6, 0);
  float first = 0, second = 0;
  run_ranks({0, 1, 2, 3, 5}, [&](int r) {
    comm::Communicator& c = *comms[static_cast<std::size_t>(r / local)];
    if (r == 0) {  // to worker 1's second device: tag 1, then tag 2
      const float a = 1.5f, b = 2.5f;
      c.send(0, 3, &a, sizeof a, 1);
      c.send(0, 3, &b, sizeof b, 2);
    }
    if (r == 3) {  // takes tag 2 first
      c.recv(3, 0, &second, sizeof second, 2);
      c.recv(3, 0, &first, sizeof first, 1);
    }
    const auto at = std::find(members.begin(), members.end(), r);
    if (at == members.end()) return;
    const int g = static_cast<int>(at - members.begin());
    double v = 100.0 * r;
    groups[static_cast<std::size_t>(r / local)]->all_reduce(g, &v, 1, DType::F64, comm::ReduceOp::Sum);
    got[static_cast<std::size_t>(r)] = v;
  });
  CHECK(first == 1.5f);
  CHECK(second == 2.5f);
  for (int64_t r : members) CHECK(got[static_cast<std::size_t>(r)] == 800.0);  // 100 + 200 + 500
}

TEST_CASE("spanning communicator: a take whose message never comes ends with an error naming the worker, and abort releases a waiting device") {
  float x = 0;
  const auto quick = spanning(2, 1, std::chrono::milliseconds(200));
  CHECK_THROWS_WITH_AS(quick[1]->recv(1, 0, &x, sizeof x, 9), doctest::Contains("nothing from worker 0"), tandem::TimeoutError);
  // Released by the abort, whenever it comes: the take itself would wait 20 s.
  const auto comms = spanning(2, 1);
  std::thread waiter([&] { CHECK_THROWS_AS(comms[1]->recv(1, 0, &x, sizeof x, 10), comm::Aborted); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  comms[1]->abort("a device failed");
  waiter.join();
}
