#include "runtime/variable_homes.h"

#include <cstring>
#include <vector>

#include "tandem/errors.h"

namespace tandem::runtime {

namespace {
// A block of a row-major tensor: along each axis, `extent` elements from `start` of `dim`.
struct Box {
  std::vector<std::size_t> dim, start, extent;
  std::size_t element = 0;  // bytes
};
Box box(const Tensor& t, const compile::VariableShard& s) {
  Box b;
  b.element = t.bytes() / static_cast<std::size_t>(std::max<int64_t>(1, t.size()));
  for (int i = 0; i < t.shape().rank(); ++i) {
    b.dim.push_back(static_cast<std::size_t>(t.shape()[i]));
    b.start.push_back(0);
    b.extent.push_back(b.dim.back());
  }
  for (const compile::VariableShard::Cut& c : s.cuts) {
    b.start[static_cast<std::size_t>(c.axis)] = static_cast<std::size_t>(c.offset);
    b.extent[static_cast<std::size_t>(c.axis)] = static_cast<std::size_t>(c.extent);
  }
  return b;
}

std::size_t shard_bytes(const Tensor& t, const compile::VariableShard& s) {
  const Box b = box(t, s);
  std::size_t bytes = b.element;
  for (std::size_t e : b.extent) bytes *= e;
  return bytes;
}

// The runs of one block of a whole tensor: each a run along the last axis, in row-major order of
// the block's other axes; fn(byte offset in the whole tensor, byte offset in the packed block, bytes).
template <class Fn>
void for_each_run(const Tensor& t, const compile::VariableShard& s, Fn fn) {
  const Box b = box(t, s);
  const std::size_t rank = b.dim.size();
  const std::size_t run = (rank ? b.extent[rank - 1] : 1) * b.element;
  std::size_t runs = 1;
  for (std::size_t i = 0; i + 1 < rank; ++i) runs *= b.extent[i];
  std::vector<std::size_t> at(rank ? rank - 1 : 0, 0);  // the run's index along the other axes
  for (std::size_t k = 0; k < runs && run > 0; ++k) {
    std::size_t offset = 0;  // of the run's first element in the whole tensor
    for (std::size_t i = 0; i < rank; ++i) offset = offset * b.dim[i] + b.start[i] + (i + 1 < rank ? at[i] : 0);
    fn(offset * b.element, k * run, run);
    for (std::size_t i = at.size(); i-- > 0;) {
      if (++at[i] < b.extent[i]) break;
      at[i] = 0;
    }
  }
}

// Copies between a whole host tensor and the packed bytes of one block of it.
void pack(const Tensor& t, const compile::VariableShard& s, std::byte* block) {
  const auto* whole = static_cast<const std::byte*>(t.raw());
  for_each_run(t, s, [&](std::size_t w, std::size_t b, std::size_t n) { std::memcpy(block + b, whole + w, n); });
}
void unpack(const std::byte* block, const compile::VariableShard& s, Tensor& t) {
  auto* whole = static_cast<std::byte*>(t.raw());
  for_each_run(t, s, [&](std::size_t w, std::size_t b, std::size_t n) { std::memcpy(whole + w, block + b, n); });
}

bool same(const std::optional<compile::VariableShard>& a, const compile::VariableShard* b) {
  if (!a || !b) return !a && !b;
  return *a == *b;
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
