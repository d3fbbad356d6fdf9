// "lag" devices, for tests of the input copies without a GPU: they run the CPU kernels but copy as
// a GPU does. Their host-to-device copies run later, on a copy thread of their own, each after a
// delay; only a CopyEvent says when they happened, and only memory from allocate_host ("pinned")
// is expected to be copied that way. A step that read its inputs before their copies, or a
// staging slot refilled before its copy read it, changes the results.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "backend/cpu/cpu_device.h"
#include "backend/device.h"

namespace lag {

using tandem::backend::DeviceName;
using tandem::backend::HostBuffer;

struct LagStats {
  std::size_t async_copies = 0;     // copy_in_async calls
  std::size_t unpinned = 0;         // of those, from memory allocate_host did not give
  std::size_t during_step = 0;      // issued between a step's hand-over and its end: overlapped
  std::size_t moved_in = 0;         // copy_in_step calls: inboxes moved into a step's memory
  std::size_t pinned_buffers = 0;   // allocate_host calls
};
inline std::mutex stats_mutex;
inline LagStats& stats() {
  static LagStats s;
  return s;
}

class LagDevice : public tandem::backend::cpu::CpuDevice {
 public:
  LagDevice(const DeviceName& name, int threads) : CpuDevice(name, threads), copier_([this] { copy_loop(); }) {}
  ~LagDevice() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    copier_.join();
  }
  HostBuffer allocate_host(std::size_t bytes) override {
    auto* data = static_cast<std::byte*>(std::aligned_alloc(64, (std::max<std::size_t>(64, bytes) + 63) / 64 * 64));
    REQUIRE(data);
    std::memset(data, 0, bytes);
    std::lock_guard lock(mutex_);
    pinned_[data] = bytes;
    std::lock_guard stats_lock(stats_mutex);
    ++stats().pinned_buffers;
    return HostBuffer(this, data, bytes);
  }
  bool copies_asynchronously() const override { return true; }
  void copy_in_async(void* device_dst, const void* host_src, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    {
      std::lock_guard stats_lock(stats_mutex);
      ++stats().async_copies;
      if (!is_pinned(host_src, bytes)) ++stats().unpinned;
      if (in_step_) ++stats().during_step;
    }
    queue_.push_back({device_dst, host_src, bytes});
    ++issued_;
    changed_.notify_all();
  }
  // A synchronous copy waits for the queue first, as cudaMemcpy after cudaMemcpyAsync on one stream.
  void copy_in(void* device_dst, const void* host_src, std::size_t bytes) override {
    wait_for(current());
    CpuDevice::copy_in(device_dst, host_src, bytes);
  }
  std::unique_ptr<CopyEvent> make_copy_event() override {
    struct Event : CopyEvent {
      LagDevice* device;
      uint64_t mark = 0;
      explicit Event(LagDevice* d) : device(d) {}
      void record() override {
        mark = device->current();
        std::lock_guard lock(device->mutex_);
        device->in_step_ = true;  // run() records right before it hands the step over
      }
      void wait() override { device->wait_for(mark); }
      // The CPU kernels run on the calling thread: a compute queue that waits is a thread that waits.
      void order_compute() override { device->wait_for(mark); }
    };
    return std::make_unique<Event>(this);
  }
  void copy_in_step(void* device_dst, const void* device_src, std::size_t bytes) override {
    CpuDevice::copy_in_step(device_dst, device_src, bytes);
    std::lock_guard lock(stats_mutex);
    ++stats().moved_in;
  }
  void synchronize() override {  // the end of a step
    std::lock_guard lock(mutex_);
    in_step_ = false;
  }

 protected:
  void release_host(std::byte* data, std::size_t) override {
    {
      std::lock_guard lock(mutex_);
      pinned_.erase(data);
    }
    std::free(data);
  }

 private:
  struct Copy {
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  uint64_t current() {
    std::lock_guard lock(mutex_);
    return issued_;
  }
  void wait_for(uint64_t mark) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return done_ >= mark; });
  }
  bool is_pinned(const void* p, std::size_t bytes) const {
    const auto* b = static_cast<const std::byte*>(p);
    auto it = pinned_.upper_bound(const_cast<std::byte*>(b));
    return it != pinned_.begin() && (--it, b >= it->first && b + bytes <= it->first + it->second);
  }
  void copy_loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      const Copy c = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(300));  // long enough for a missing wait to read stale memory
      std::memcpy(c.dst, c.src, c.bytes);
      lock.lock();
      ++done_;
      changed_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Copy> queue_;
  uint64_t issued_ = 0, done_ = 0;
  bool stop_ = false, in_step_ = false;
  std::map<std::byte*, std::size_t> pinned_;
  std::thread copier_;
};

REGISTER_DEVICE_KIND("lag", [](const DeviceName& name, int threads) { return std::make_unique<LagDevice>(name, threads); });

// The counts so far.
inline LagStats counts() {
  std::lock_guard lock(stats_mutex);
  return stats();
}

}  // namespace lag
