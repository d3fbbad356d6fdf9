// In-process ring all-reduce bandwidth against a plain memcpy, 1 MB to 256 MB of float32.
// Bus bandwidth follows NCCL's definition: algbw = bytes / time, busbw = algbw · 2(k−1)/k, the
// rate at which each rank moves data; a ring can at best match one memcpy per rank.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/inprocess.h"

using Clock = std::chrono::steady_clock;
namespace comm = tandem::comm;

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double memcpy_gbps(std::size_t bytes, int reps) {
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes);
  std::memcpy(b.data(), a.data(), bytes);
  const auto t = Clock::now();
  for (int i = 0; i < reps; ++i) std::memcpy(b.data(), a.data(), bytes);
  return double(bytes) * reps / seconds_since(t) / 1e9;
}

double allreduce_busbw(int k, std::size_t bytes, int reps, comm::Wire wire) {
  std::vector<std::string> names;
  for (int r = 0; r < k; ++r) names.push_back("cpu:" + std::to_string(r));
  comm::InProcessCommunicator c(names);
  const std::size_t n = bytes / sizeof(float);
  std::vector<std::vector<float>> data(static_cast<std::size_t>(k), std::vector<float>(n, 1.0f));
  double elapsed = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      float* d = data[static_cast<std::size_t>(r)].data();
      c.all_reduce(r, d, n, tandem::DType::F32, comm::ReduceOp::Mean, wire);  // warm-up: touch pages
      c.barrier(r);
      const auto t = Clock::now();
      for (int i = 0; i < reps; ++i) c.all_reduce(r, d, n, tandem::DType::F32, comm::ReduceOp::Mean, wire);
      c.barrier(r);
      if (r == 0) elapsed = seconds_since(t);
    });
  for (auto& t : threads) t.join();
  const double algbw = double(bytes) * reps / elapsed / 1e9;
  return algbw * 2.0 * (k - 1) / k;
}
}  // namespace

int main() {
  std::printf("| size | memcpy GB/s | ring k=2 busbw GB/s | ratio | ring k=2 bf16 busbw GB/s | ring k=4 busbw GB/s | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (std::size_t mb : {1, 4, 16, 64, 256}) {
    const std::size_t bytes = mb << 20;
    const int reps = mb <= 4 ? 50 : mb <= 16 ? 10 : mb <= 64 ? 4 : 2;
    const double copy = memcpy_gbps(bytes, reps);
    const double k2 = allreduce_busbw(2, bytes, reps, comm::Wire::Native);
    const double k2h = allreduce_busbw(2, bytes, reps, comm::Wire::BFloat16);
    const double k4 = allreduce_busbw(4, bytes, reps, comm::Wire::Native);
    std::printf("| %zu MB | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |\n", mb, copy, k2, k2 / copy, k2h, k4, k4 / copy);
  }
}
