// Errors raised for bad input. Messages name the layer or argument, the expected and the actual value.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Wrong shapes or ranks: `Dense "dense_2": expected input of last dimension 256, got (None, 128)`.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// Bad arguments or data: unknown names, labels out of range, mismatched lengths.
class ValueError : public Error {
 public:
  using Error::Error;
};

}  // namespace tandem
