//===- SchedulePaths.h - a schedule searched path by path -------*- C++ -*-===//
//
// In: a kernel's search space, its default point and the paths its code
// takes (which knobs each path reads, which timed cases take it). Out: the
// sub-space each path is searched in, and the full points worth timing as
// the combined schedule once every path has its choice.
//
// A GEMM's code has a GEMV path (decode rows) and a tiled path (prefill
// rows) with separate knobs, an attention a decode and a prefill path.
// Judged on all cases together, a candidate's cost is a mean over paths, so
// a worse setting of one path's knobs rides along with a better setting of
// the other's (the tuner once chose an MLP GEMM 0.89x on its decode row
// that way). Searched path by path, each knob is judged only on the cases
// it affects. The paths stay one schedule per kernel: a path's sub-point
// fills its knobs, every other knob keeps the default's value.
//
// Knobs read by more than one path are *shared* (a weight packed at load
// is read in its tile layout by the GEMV path too, so tile_cols and
// pack_weights are shared by both GEMM paths): each path searches them
// with its own knobs, and where the paths' choices disagree on them,
// combinations() proposes one full point per disagreeing value, each path
// taking its best measured point with that value; the caller times those
// on all cases and keeps the fastest.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_SCHEDULEPATHS_H
#define XF_TUNING_SCHEDULEPATHS_H

#include "xf/Tuning/Search.h"

#include <string>
#include <vector>

namespace mlir::xf::tuning {

/// One code path of a kernel.
struct SchedulePath {
  std::string name;          // e.g. "gemv", "gemm", "decode", "prefill"
  std::vector<size_t> knobs; // indices into the full space's knobs it reads
  std::vector<size_t> cases; // indices of the timed cases that take it
};

/// A kernel's two paths split by rows: `few` takes the lengths up to `fewRowsUpTo` (by
/// index into `lengths`), `many` the others; of the two, those that take a length.
std::vector<SchedulePath> splitPathsByRows(SchedulePath few, SchedulePath many,
                                           const std::vector<int64_t> &lengths,
                                           int64_t fewRowsUpTo);

/// The knobs of `path`, each with its values in `full`, legal where the
/// full point (`base` with the path's knobs replaced) is.
SearchSpace pathSpace(const SearchSpace &full, const SchedulePath &path, const Point &base);

/// `base` with the path's knobs set from `sub` (one value per path knob).
Point embedPoint(const SchedulePath &path, const Point &sub, const Point &base);

/// The path's knobs of a full point.
Point projectPoint(const SchedulePath &path, const Point &full);

/// Knobs read by more than one path, ascending.
std::vector<size_t> sharedKnobs(const std::vector<SchedulePath> &paths);

/// Full points to time as the combined schedule. `choices[p]` is path p's
/// chosen sub-point and `measured[p]` its measured sub-points (a cost, or
/// a failure). For every distinct value of the shared knobs among the
/// choices (in the order of the paths), one point: each path takes its
/// choice where it has that value, else its lowest-cost measured
/// sub-point with it, else its base sub-point with the shared knobs set to
/// it. Without shared knobs (or when all choices agree) that is the one
/// point made of every path's choice. Points are distinct and legal in
/// `full` (an illegal combination is left out).
std::vector<Point> combinations(const SearchSpace &full, const std::vector<SchedulePath> &paths,
                                const Point &base,
                                const std::vector<Point> &choices,
                                const std::vector<std::vector<Trial>> &measured);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_SCHEDULEPATHS_H
