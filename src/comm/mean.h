// A sum over k ranks turned into their mean, in place: what a communicator does last for
// ReduceOp::Mean when its sum came from parts (within a worker, then between workers). Each
// value is divided in double precision and rounded once to its own type.
#pragma once

#include <cstddef>

#include "tandem/errors.h"
#include "tandem/tensor.h"

namespace tandem::comm {

inline void divide_by(void* data, std::size_t count, DType dtype, int k) {
  const auto d = static_cast<double>(k);
  if (dtype == DType::F32)
    for (float* p = static_cast<float*>(data); p < static_cast<float*>(data) + count; ++p) *p = static_cast<float>(*p / d);
  else if (dtype == DType::F64)
    for (double* p = static_cast<double*>(data); p < static_cast<double*>(data) + count; ++p) *p /= d;
  else
    throw Error(std::string("mean: float32 or float64 buffers only, got ") + dtype_name(dtype));
}

}  // namespace tandem::comm
