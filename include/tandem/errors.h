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

// A wait of the runtime outlived the watchdog's limit (see tandem/watchdog.h): a device did not
// finish its step, a collective did not finish, a batch was not gathered.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

}  // namespace tandem
