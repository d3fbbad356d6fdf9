#include "runtime/variable_homes.h"

#include <cstring>

#include "tandem/errors.h"

namespace tandem::runtime {

namespace {
// A block along `axis` of a row-major tensor is `outer` runs of `extent · inner` bytes, one every
// `dim · inner` bytes.
struct Runs {
  std::size_t outer = 1, inner, dim;
};
Runs runs(const Tensor& t, int axis) {
  Runs r{1, t.bytes() / static_cast<std::size_t>(std::max<int64_t>(1, t.size())), 1};
  const Shape& s = t.shape();
  for (int i = 0; i < s.rank(); ++i) {
    const auto n = static_cast<std::size_t>(s[i]);
    if (i < axis) r.outer *= n;
    else if (i == axis) r.dim = n;
    else r.inner *= n;
  }
  return r;
}

std::size_t shard_bytes(const Tensor& t, const compile::VariableShard& s) {
  const Runs r = runs(t, s.axis);
  return r.outer * static_cast<std::size_t>(s.extent) * r.inner;
}

// Copies between a whole host tensor and the packed bytes of one block of it.
void pack(const Tensor& t, const compile::VariableShard& s, std::byte* block) {
  const Runs r = runs(t, s.axis);
  const std::size_t run = static_cast<std::size_t>(s.extent) * r.inner;
  for (std::size_t o = 0; o < r.outer; ++o)
    std::memcpy(block + o * run, static_cast<const std::byte*>(t.raw()) + (o * r.dim + static_cast<std::size_t>(s.offset)) * r.inner, run);
}
void unpack(const std::byte* block, const compile::VariableShard& s, Tensor& t) {
  const Runs r = runs(t, s.axis);
  const std::size_t run = static_cast<std::size_t>(s.extent) * r.inner;
  for (std::size_t o = 0; o < r.outer; ++o)
    std::memcpy(static_cast<std::byte*>(t.raw()) + (o * r.dim + static_cast<std::size_t>(s.offset)) * r.inner, block + o * run, run);
}

bool same(const std::optional<compile::VariableShard>& a, const compile::VariableShard* b) {
  if (!a || !b) return !a && !b;
  return a->axis == b->axis && a->offset == b->offset && a->extent == b->extent;
}
}  // namespace

void VariableHomes::fill(Home& h, const Tensor& host) {
  if (!h.shard) {
    h.device->copy_in(h.buffer.data(), host.raw(), host.bytes());
    return;
  }
  std::vector<std::byte> block(shard_bytes(host, *h.shard));
  pack(host, *h.shard, block.data());
  h.device->copy_in(h.buffer.data(), block.data(), block.size());
}

void* VariableHomes::home(backend::Device& device, const Variable& v, const compile::VariableShard* shard) {
  std::vector<Home>& homes = homes_[v.id()];
  for (Home& h : homes)
    if (h.device == &device) {
      if (!same(h.shard, shard))
        throw Error("internal: variable '" + v.path() + "' is wanted on " + device.name() + " whole and as a block");
      return h.buffer.data();
    }
  const Tensor& host = v.value();
  Home h{&device, device.allocate(shard ? shard_bytes(host, *shard) : host.bytes()), {}};
  if (shard) h.shard = *shard;
  fill(h, host);
  homes.push_back(std::move(h));
  return homes.back().buffer.data();
}

void VariableHomes::to_devices(const std::vector<VariablePtr>& vars) {
  for (const VariablePtr& v : vars) {
    auto it = homes_.find(v->id());
    if (it == homes_.end()) continue;
    for (Home& h : it->second) fill(h, v->value());
  }
}

void VariableHomes::to_host(Variable& v) const {
  auto it = homes_.find(v.id());
  if (it == homes_.end() || it->second.empty()) return;
  for (const Home& h : it->second)
    if (!h.shard) {
      h.device->copy_out(v.value().raw(), h.buffer.data(), v.value().bytes());
      return;
    }
  for (const Home& h : it->second) {  // blocks only: each writes its part
    std::vector<std::byte> block(shard_bytes(v.value(), *h.shard));
    h.device->copy_out(block.data(), h.buffer.data(), block.size());
    unpack(block.data(), *h.shard, v.value());
  }
}

bool VariableHomes::holds_whole(const Variable& v) const {
  auto it = homes_.find(v.id());
  if (it == homes_.end()) return false;
  for (const Home& h : it->second)
    if (!h.shard) return true;
  return false;
}

std::vector<compile::VariableShard> VariableHomes::blocks_held(const Variable& v) const {
  std::vector<compile::VariableShard> blocks;
  if (auto it = homes_.find(v.id()); it != homes_.end())
    for (const Home& h : it->second)
      if (h.shard) blocks.push_back(*h.shard);
  return blocks;
}

void VariableHomes::copy_block(const Tensor& from, const compile::VariableShard& s, Tensor& to) {
  std::vector<std::byte> block(shard_bytes(from, s));
  pack(from, s, block.data());
  unpack(block.data(), s, to);
}

void VariableHomes::to_host(const std::vector<VariablePtr>& vars) const {
  for (const VariablePtr& v : vars) to_host(*v);
}

}  // namespace tandem::runtime
