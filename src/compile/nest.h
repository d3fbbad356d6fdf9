// Lowering over a two-axis mesh of devices, one axis after the other: an outer plan over the rows
// of the mesh (data parallel over the batch axis, say), then each of its programs lowered again
// over the devices of its row (the model axis). The outer plan's communication then runs among
// the devices of one column, the inner plans' among those of one row.
#pragma once

#include <functional>

#include "compile/plan.h"

namespace tandem::compile {

// `outer` has one program per mesh row, lowered with LoweringOptions::final_programs = false (so
// the inner lowerings see the global graph's ops, each with its layout rule, and only their
// programs are fused and planned); `inner(row, i)` lowers row i's program (its graph and
// fetches) over that row's devices, which become programs i·m, ..., i·m + m − 1 of the result.
Plan nest(Plan outer, const std::function<Plan(const Program& row, int i)>& inner);

}  // namespace tandem::compile
