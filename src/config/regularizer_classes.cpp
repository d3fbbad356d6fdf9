// tandem::Regularizer and tandem::Constraint: Keras's classes by name, their factories and checks.
#include <cmath>

#include "config/keras_classes.h"
#include "tandem/errors.h"

namespace tandem {

namespace {
std::string show(double v) { return std::to_string(v); }

void non_negative(const std::string& who, const char* arg, double v) {
  if (!(std::isfinite(v) && v >= 0)) throw ValueError(who + ": " + arg + " must be a non-negative finite number, got " + show(v));
}
}  // namespace

Regularizer::Regularizer(const char* name) : Regularizer(std::string(name ? name : "")) {}

Regularizer::Regularizer(const std::string& name) {
  // keras.regularizers.get: class names and their snake_case; Keras's defaults.
  if (name == "L1" || name == "l1") *this = regularizers::L1();
  else if (name == "L2" || name == "l2") *this = regularizers::L2();
  else if (name == "L1L2" || name == "l1l2" || name == "l1_l2") *this = regularizers::L1L2();
  else if (name == "OrthogonalRegularizer" || name == "orthogonal_regularizer") *this = regularizers::OrthogonalRegularizer();
  else class_name = name;  // "" is none; anything else is refused when the layer is made
}

Constraint::Constraint(const char* name) : Constraint(std::string(name ? name : "")) {}

Constraint::Constraint(const std::string& name) {
  if (name == "MaxNorm" || name == "max_norm") *this = constraints::MaxNorm();
  else if (name == "NonNeg" || name == "non_neg") *this = constraints::NonNeg();
  else if (name == "UnitNorm" || name == "unit_norm") *this = constraints::UnitNorm();
  else if (name == "MinMaxNorm" || name == "min_max_norm") *this = constraints::MinMaxNorm();
  else class_name = name;
}

namespace regularizers {
Regularizer L1(double l1) {
  Regularizer r;
  r.class_name = "L1", r.l1 = l1;
  check_regularizer(r, "L1");
  return r;
}
Regularizer L2(double l2) {
  Regularizer r;
  r.class_name = "L2", r.l2 = l2;
  check_regularizer(r, "L2");
  return r;
}
Regularizer L1L2(double l1, double l2) {
  Regularizer r;
  r.class_name = "L1L2", r.l1 = l1, r.l2 = l2;
  check_regularizer(r, "L1L2");
  return r;
}
Regularizer OrthogonalRegularizer(double factor, const std::string& mode) {
  Regularizer r;
  r.class_name = "OrthogonalRegularizer", r.factor = factor, r.mode = mode;
  check_regularizer(r, "OrthogonalRegularizer");
  return r;
}
}  // namespace regularizers

namespace constraints {
Constraint MaxNorm(double max_value, std::vector<int64_t> axis) {
  Constraint c;
  c.class_name = "MaxNorm", c.max_value = max_value, c.axis = std::move(axis);
  check_constraint(c, "MaxNorm");
  return c;
}
Constraint NonNeg() {
  Constraint c;
  c.class_name = "NonNeg";
  return c;
}
Constraint UnitNorm(std::vector<int64_t> axis) {
  Constraint c;
  c.class_name = "UnitNorm", c.axis = std::move(axis);
  check_constraint(c, "UnitNorm");
  return c;
}
Constraint MinMaxNorm(double min_value, double max_value, double rate, std::vector<int64_t> axis) {
  Constraint c;
  c.class_name = "MinMaxNorm", c.min_value = min_value, c.max_value = max_value, c.rate = rate, c.axis = std::move(axis);
  check_constraint(c, "MinMaxNorm");
  return c;
}
}  // namespace constraints

void check_regularizer(const Regularizer& r, const std::string& owner) {
  if (!r) return;
  const std::string who = owner + (owner == r.class_name ? "" : ": regularizer " + r.class_name);
  if (r.class_name == "L1" || r.class_name == "L2" || r.class_name == "L1L2") {
    non_negative(who, "l1", r.l1), non_negative(who, "l2", r.l2);
  } else if (r.class_name == "OrthogonalRegularizer") {
    non_negative(who, "factor", r.factor);
    if (r.mode != "rows" && r.mode != "columns") throw ValueError(who + ": mode must be \"rows\" or \"columns\", got \"" + r.mode + "\"");
  } else {
    throw ValueError(owner + ": unknown regularizer '" + r.class_name + "'; expected one of L1, L2, L1L2, OrthogonalRegularizer (or l1, l2, l1_l2, orthogonal_regularizer)");
  }
}

void check_constraint(const Constraint& c, const std::string& owner) {
  if (!c) return;
  const std::string who = owner + (owner == c.class_name ? "" : ": constraint " + c.class_name);
  if (c.class_name == "NonNeg") return;
  if (c.class_name != "MaxNorm" && c.class_name != "UnitNorm" && c.class_name != "MinMaxNorm")
    throw ValueError(owner + ": unknown constraint '" + c.class_name + "'; expected one of MaxNorm, NonNeg, UnitNorm, MinMaxNorm (or max_norm, non_neg, unit_norm, min_max_norm)");
  if (c.axis.empty()) throw ValueError(who + ": axis must name at least one axis");
  if (c.class_name == "UnitNorm") return;
  if (!std::isfinite(c.max_value)) throw ValueError(who + ": max_value must be finite, got " + show(c.max_value));
  if (c.class_name == "MinMaxNorm") {
    if (!std::isfinite(c.min_value) || !std::isfinite(c.rate)) throw ValueError(who + ": min_value and rate must be finite");
  }
}

}  // namespace tandem
