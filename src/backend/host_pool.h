// Freed host buffers kept for the next request, for a device whose host memory is slow to get and
// to give back: page-locked memory pins each page when allocated, and freeing it waits for the
// GPU. Every fit, evaluate and predict asks for its staging slots anew, so without a pool a loop
// of short calls (train_on_batch, a validation evaluate per epoch) pays both each time.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace tandem::backend {

class HostPool {
 public:
  using Allocate = std::function<std::byte*(std::size_t bytes)>;  // throws when it cannot
  using Free = std::function<void(std::byte* data)>;
  // Frees with `free`; keeps at most `keep_bytes` of freed buffers.
  HostPool(Free free, std::size_t keep_bytes) : free_(std::move(free)), keep_bytes_(keep_bytes) {}
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;
  ~HostPool();  // frees what it keeps (buffers still taken are the takers' to give back first)

  // At least `bytes`, the first `bytes` zeroed: the smallest kept buffer that holds them and is at
  // most twice their size, else a new one from `allocate` (of whole pages).
  std::byte* take(std::size_t bytes, const Allocate& allocate);
  void give(std::byte* data);  // kept while the pool has room, else freed
  std::size_t kept_bytes() const;

 private:
  Free free_;
  std::size_t keep_bytes_;
  mutable std::mutex mutex_;
  std::map<std::byte*, std::size_t> capacity_;     // every buffer this pool made and has not freed
  std::multimap<std::size_t, std::byte*> kept_;    // the free ones, by capacity
  std::size_t kept_bytes_ = 0;
};

}  // namespace tandem::backend
