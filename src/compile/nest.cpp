#include "compile/nest.h"

#include <algorithm>

#include "tandem/errors.h"

namespace tandem::compile {

namespace {
bool communicates(const graph::Node& n) { return n.attrs.has("ranks") || n.attrs.has("peer") || n.attrs.has("bucket"); }

// The physical ranks of a collective that spanned `ranks` ranks (or the subset `group`) of one
// axis of the mesh.
std::vector<int64_t> ranks_along(const graph::Attrs& a, const std::function<int64_t(int64_t)>& physical) {
  std::vector<int64_t> ranks;
  if (a.has("group"))
    for (int64_t r : a.ints("group")) ranks.push_back(physical(r));
  else
    for (int64_t r = 0; r < a.i("ranks"); ++r) ranks.push_back(physical(r));
  return ranks;
}

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
  int64_t outer_buckets = 0;
  for (Program& p : outer.programs)
    for (int id = 0; id < p.graph.size(); ++id) {
      graph::Node& n = p.graph.node(id);
      if (!communicates(n)) continue;
      n.attrs.set("across_rows", true);
      if (n.attrs.has("bucket")) outer_buckets = std::max(outer_buckets, n.attrs.i("bucket") + 1);
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
        graph::Attrs& a = p.graph.node(id).attrs;
        if (!communicates(p.graph.node(id))) continue;
        // Along the column (outer) or the row (inner): rank r of that axis is device r·m + j or i·m + r.
        const bool across = a.b("across_rows");
        const std::function<int64_t(int64_t)> physical = [&](int64_t r) { return across ? r * m + j : int64_t{i} * m + r; };
        if (a.has("ranks")) {
          std::vector<int64_t> ranks = ranks_along(a, physical);
          a.set("ranks", static_cast<int64_t>(ranks.size()));
          a.set("group", std::move(ranks));
        }
        if (a.has("peer")) a.set("peer", physical(a.i("peer")));
        if (a.has("bucket") && !across) a.set("bucket", a.i("bucket") + outer_buckets);
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
