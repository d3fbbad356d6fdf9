// The check every file source's read(index, out) starts with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tandem/data_source.h"
#include "tandem/errors.h"

namespace tandem::data {

// read(index, out) needs an index in [0, source.size()) and one buffer per column: a ValueError
// naming the source otherwise.
inline void check_read(const Source& source, int64_t index, std::size_t got_buffers, std::size_t buffers) {
  if (index < 0 || index >= source.size() || got_buffers != buffers)
    throw ValueError(source.describe() + ": read(" + std::to_string(index) + ") of " + std::to_string(source.size()) + " samples into " +
                     std::to_string(got_buffers) + " buffers (expected " + std::to_string(buffers) + ")");
}

}  // namespace tandem::data
