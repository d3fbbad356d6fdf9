#include "compile/nest.h"

#include <algorithm>

#include "tandem/errors.h"

namespace tandem::compile {

namespace {
// A fetch read from row programs, each of which holds it as its inner site says: from one row if
// the rows hold it whole, else its part (rows of a batch, a partial sum) from every row.
FetchSite compose(const FetchSite& outer, const std::vector<FetchSite>& inner, int m) {
  auto physical = [m](int i, const FetchSite& in) {
    std::vector<int> p;
    for (int j : in.programs) p.push_back(i * m + j);
    return p;
  };
  if (outer.layout.is_replicated()) {
    const int i = outer.programs.front();
    return {inner[static_cast<std::size_t>(i)].layout, physical(i, inner[static_cast<std::size_t>(i)])};
  }
  FetchSite site{outer.layout, {}};
  for (int i : outer.programs) {
    const FetchSite& in = inner[static_cast<std::size_t>(i)];
    if (in.layout.is_replicated()) {
      site.programs.push_back(i * m + in.programs.front());
    } else if (in.layout.is_partial() && outer.layout.is_partial()) {
      for (int p : physical(i, in)) site.programs.push_back(p);
    } else {
      throw Error("internal: nested lowering fetches a value that is " + outer.layout.str() + " over rows and " + in.layout.str() +
                  " within them");
    }
  }
  return site;
}
}  // namespace

Plan nest(Plan outer, const std::function<Plan(const Program& row, int i)>& inner) {
  const int rows = static_cast<int>(outer.programs.size());
  for (const Program& p : outer.programs)
    if (!p.blocks.empty())
      throw Error("internal: a nested lowering's outer plan must be lowered with final_programs = false (fused ops have no layout rule)");
  int outer_buckets = 0;
  for (Program& p : outer.programs)
    for (int id = 0; id < p.graph.size(); ++id) {
      std::optional<graph::Communication>& c = p.graph.node(id).communication;
      if (!c) continue;
      c->across_rows = true;
      outer_buckets = std::max(outer_buckets, c->bucket + 1);
    }
  std::vector<Plan> row_plans;
  for (int i = 0; i < rows; ++i) row_plans.push_back(inner(outer.programs[static_cast<std::size_t>(i)], i));
  const int m = static_cast<int>(row_plans[0].programs.size());
  Plan plan;
  for (int i = 0; i < rows; ++i) {
    Plan& row = row_plans[static_cast<std::size_t>(i)];
    if (static_cast<int>(row.programs.size()) != m) throw Error("internal: nested lowering with rows of different lengths");
    for (int j = 0; j < m; ++j) {
      Program p = std::move(row.programs[static_cast<std::size_t>(j)]);
      for (int id = 0; id < p.graph.size(); ++id) {
        std::optional<graph::Communication>& c = p.graph.node(id).communication;
        if (!c) continue;
        // Along the column (outer) or the row (inner): rank r of that axis is device r·m + j or i·m + r.
        const bool across = c->across_rows;
        auto physical = [&](int r) { return across ? r * m + j : i * m + r; };
        for (int& r : c->group) r = physical(r);
        if (c->peer >= 0) c->peer = physical(c->peer);
        if (c->bucket >= 0 && !across) c->bucket += outer_buckets;
        c->across_rows = false;
      }
      const Program& up = outer.programs[static_cast<std::size_t>(i)];
      for (auto& [name, rows_of] : p.feeds)
        if (auto it = up.feeds.find(name); it != up.feeds.end()) rows_of.offset += it->second.offset;
      // A variable split over the rows is the row's block; split again within the row, a block of it.
      for (auto& [id, shard] : p.shards)
        if (auto it = up.shards.find(id); it != up.shards.end()) shard = it->second.then(shard);
      for (const auto& [id, shard] : up.shards) p.shards.emplace(id, shard);
      p.rank = static_cast<int>(plan.programs.size());  // numbered over the whole mesh
      plan.programs.push_back(std::move(p));
      plan.schedule.push_back(std::move(row.schedule[static_cast<std::size_t>(j)]));
    }
  }
  for (std::size_t f = 0; f < outer.fetches.size(); ++f) {
    std::vector<FetchSite> inner_sites;
    for (const Plan& row : row_plans) inner_sites.push_back(row.fetches[f]);
    plan.fetches.push_back(compose(outer.fetches[f], inner_sites, m));
  }
  return plan;
}

}  // namespace tandem::compile
