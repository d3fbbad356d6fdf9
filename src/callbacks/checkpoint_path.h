// Checkpoint file names: the part of Python's str.format that Keras's ModelCheckpoint relies on
// ("ckpt/{epoch:02d}-{val_loss:.2f}.weights.h5").
#pragma once

#include <map>
#include <string>

namespace tandem::callbacks::detail {

// A named field's value. Integers (epoch, batch) and floats (logs) format as Python's int and
// float do: "{epoch:.1f}" works, "{loss:d}" does not.
struct FormatArg {
  double value = 0;
  bool integer = false;
};
using FormatArgs = std::map<std::string, FormatArg>;

// `pattern` with each "{name}" or "{name:spec}" replaced by the formatted value; "{{" and "}}" are
// literal braces. spec is [[fill]align][sign][0][width][.precision][type] with type one of
// d e E f F g G % or none (str() of the value: "0.1", "1e-05", "3"). Throws ValueError for a field
// with no value (the message is the field name in quotes, like Python's KeyError), for an
// unsupported spec and for malformed braces.
std::string format_path(const std::string& pattern, const FormatArgs& args);

// Python's repr() of a float: the shortest digits that read back exactly, "1.0", "0.0001", "1e-05", "1e+16".
std::string python_float_repr(double value);

}  // namespace tandem::callbacks::detail
