#include "backend/host_pool.h"

#include <algorithm>
#include <cstring>

namespace tandem::backend {

HostPool::~HostPool() {
  for (const auto& [bytes, data] : kept_) free_(data);
}

std::byte* HostPool::take(std::size_t bytes, const Allocate& allocate) {
  const std::size_t rounded = (std::max<std::size_t>(64, bytes) + 4095) / 4096 * 4096;  // whole pages
  std::byte* data = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = kept_.lower_bound(rounded); it != kept_.end() && it->first <= 2 * rounded) {
      data = it->second;
      kept_bytes_ -= it->first;
      kept_.erase(it);
    }
  }
  if (!data) {
    data = allocate(rounded);
    std::lock_guard lock(mutex_);
    capacity_[data] = rounded;
  }
  std::memset(data, 0, bytes);
  return data;
}

void HostPool::give(std::byte* data) {
  {
    std::lock_guard lock(mutex_);
    const auto it = capacity_.find(data);
    if (it == capacity_.end()) return;  // not this pool's
    if (kept_bytes_ + it->second <= keep_bytes_) {
      kept_.emplace(it->second, data);
      kept_bytes_ += it->second;
      return;
    }
    capacity_.erase(it);
  }
  free_(data);
}

std::size_t HostPool::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_bytes_;
}

}  // namespace tandem::backend
