// pad_sequences: ragged id sequences to one rectangular tensor, as keras.utils.pad_sequences.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tandem/data.h"
#include "tandem/errors.h"

namespace tandem {
namespace {

void check_side(const std::string& argument, const std::string& side) {
  if (side != "pre" && side != "post")
    throw ValueError(std::string("pad_sequences: ").append(argument).append(" must be \"pre\" or \"post\", got \"").append(side).append("\""));
}

// Whether `value` can be stored in an integer dtype without changing it.
template <class I>
bool fits(double value) {
  // max() + 1 is a power of two, exact in a double even where max() is not (int64).
  return value == std::floor(value) && value >= double(std::numeric_limits<I>::min()) &&
         value < double(std::numeric_limits<I>::max()) + 1.0;
}

// Fills the (n, maxlen) tensor of element type T.
template <class T>
void fill(const std::vector<std::vector<int32_t>>& sequences, const PadSequencesOptions& o, int64_t maxlen, T* out) {
  std::fill(out, out + static_cast<int64_t>(sequences.size()) * maxlen, static_cast<T>(o.value));
  for (std::size_t r = 0; r < sequences.size(); ++r) {
    const std::vector<int32_t>& s = sequences[r];
    const int64_t kept = std::min<int64_t>(maxlen, static_cast<int64_t>(s.size()));
    // Truncating "pre" drops the front of a long sequence, so the kept ids are its last ones.
    const auto first = o.truncating == "pre" ? s.end() - kept : s.begin();
    T* row = out + static_cast<int64_t>(r) * maxlen;
    T* at = o.padding == "pre" ? row + (maxlen - kept) : row;
    std::transform(first, first + kept, at, [](int32_t id) { return static_cast<T>(id); });
  }
}

}  // namespace

Tensor pad_sequences(const std::vector<std::vector<int32_t>>& sequences, const PadSequencesOptions& options) {
  if (options.maxlen < 0) throw ValueError("pad_sequences: maxlen must be >= 0 (0: the longest sequence), got " + std::to_string(options.maxlen));
  check_side("padding", options.padding);
  check_side("truncating", options.truncating);
  const bool fits_dtype = options.dtype == DType::I32   ? fits<int32_t>(options.value)
                          : options.dtype == DType::I64 ? fits<int64_t>(options.value)
                                                        : true;  // a float dtype rounds it, as NumPy does
  if (!fits_dtype)
    throw ValueError(std::string("pad_sequences: value must be a whole number that ").append(dtype_name(options.dtype)).append(" can hold, got ").append(std::to_string(options.value)));
  int64_t maxlen = options.maxlen;
  if (maxlen == 0)
    for (const auto& s : sequences) maxlen = std::max<int64_t>(maxlen, static_cast<int64_t>(s.size()));
  Tensor out(Shape{static_cast<int64_t>(sequences.size()), maxlen}, options.dtype);
  switch (options.dtype) {
    case DType::F32: fill(sequences, options, maxlen, out.data<float>()); break;
    case DType::F64: fill(sequences, options, maxlen, out.data<double>()); break;
    case DType::I32: fill(sequences, options, maxlen, out.data<int32_t>()); break;
    case DType::I64: fill(sequences, options, maxlen, out.data<int64_t>()); break;
    case DType::BF16: fill(sequences, options, maxlen, out.data<bfloat16>()); break;
    case DType::F16: fill(sequences, options, maxlen, out.data<float16>()); break;
  }
  return out;
}

}  // namespace tandem
