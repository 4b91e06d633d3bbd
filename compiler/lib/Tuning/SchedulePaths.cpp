//===- SchedulePaths.cpp - a schedule searched path by path ---------------===//

#include "xf/Tuning/SchedulePaths.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace mlir::xf::tuning;

std::vector<SchedulePath> mlir::xf::tuning::splitPathsByRows(SchedulePath few, SchedulePath many,
                                                             const std::vector<int64_t> &lengths,
                                                             int64_t fewRowsUpTo) {
  for (size_t i = 0; i < lengths.size(); ++i)
    (lengths[i] <= fewRowsUpTo ? few : many).cases.push_back(i);
  std::vector<SchedulePath> paths;
  for (SchedulePath *p : {&few, &many})
    if (!p->cases.empty())
      paths.push_back(std::move(*p));
  return paths;
}

SearchSpace mlir::xf::tuning::pathSpace(const SearchSpace &full, const SchedulePath &path,
                                        const Point &base) {
  SearchSpace sub;
  for (size_t k : path.knobs)
    sub.knobs.push_back(full.knobs[k]);
  if (full.legal)
    sub.legal = [legal = full.legal, path, base](llvm::ArrayRef<int64_t> p) {
      return legal(embedPoint(path, Point(p.begin(), p.end()), base));
    };
  return sub;
}

Point mlir::xf::tuning::embedPoint(const SchedulePath &path, const Point &sub, const Point &base) {
  Point full = base;
  for (size_t i = 0; i < path.knobs.size() && i < sub.size(); ++i)
    full[path.knobs[i]] = sub[i];
  return full;
}

Point mlir::xf::tuning::projectPoint(const SchedulePath &path, const Point &full) {
  Point sub;
  for (size_t k : path.knobs)
    sub.push_back(full[k]);
  return sub;
}

std::vector<size_t> mlir::xf::tuning::sharedKnobs(const std::vector<SchedulePath> &paths) {
  std::map<size_t, size_t> readers;
  for (const SchedulePath &p : paths)
    for (size_t k : p.knobs)
      ++readers[k];
  std::vector<size_t> shared;
  for (auto [k, n] : readers)
    if (n > 1)
      shared.push_back(k);
  return shared;
}

std::vector<Point> mlir::xf::tuning::combinations(const SearchSpace &full,
                                                  const std::vector<SchedulePath> &paths,
                                                  const Point &base,
                                                  const std::vector<Point> &choices,
                                                  const std::vector<std::vector<Trial>> &measured) {
  const std::vector<size_t> shared = sharedKnobs(paths);
  // The shared knobs' values of a path's sub-point (base's where it does
  // not read one), and whether a sub-point agrees with a key on the shared
  // knobs the path reads.
  auto sharedOf = [&](const SchedulePath &path, const Point &sub) {
    Point f = embedPoint(path, sub, base), key;
    for (size_t k : shared)
      key.push_back(f[k]);
    return key;
  };
  auto agrees = [&](const SchedulePath &path, const Point &sub, const Point &key) {
    Point f = embedPoint(path, sub, base);
    for (size_t i = 0; i < shared.size(); ++i)
      if (std::count(path.knobs.begin(), path.knobs.end(), shared[i]) && f[shared[i]] != key[i])
        return false;
    return true;
  };
  // The shared values to try, in the order of the paths' choices.
  std::vector<Point> keys;
  for (size_t p = 0; p < paths.size() && p < choices.size(); ++p) {
    Point key = sharedOf(paths[p], choices[p]);
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      keys.push_back(key);
  }
  std::vector<Point> out;
  for (const Point &key : keys) {
    Point combined = base;
    for (size_t p = 0; p < paths.size(); ++p) {
      const SchedulePath &path = paths[p];
      const Point *pick = nullptr;
      if (p < choices.size() && agrees(path, choices[p], key)) {
        pick = &choices[p];
      } else if (p < measured.size()) {
        std::optional<double> bestCost;
        for (const Trial &t : measured[p])
          if (t.cost && t.point.size() == path.knobs.size() && agrees(path, t.point, key) &&
              (!bestCost || *t.cost < *bestCost))
            bestCost = t.cost, pick = &t.point;
      }
      Point sub = pick ? *pick : projectPoint(path, base);
      for (size_t i = 0; i < path.knobs.size(); ++i) {
        auto at = std::find(shared.begin(), shared.end(), path.knobs[i]);
        combined[path.knobs[i]] = at == shared.end() ? sub[i] : key[size_t(at - shared.begin())];
      }
    }
    if ((!full.legal || full.legal(combined)) &&
        std::find(out.begin(), out.end(), combined) == out.end())
      out.push_back(std::move(combined));
  }
  return out;
}
