//===- ScheduleSpace.h - knobs of a kernel's schedule -----------*- C++ -*-===//
//
// The search space of one kernel: a Knob per schedule field with the values
// worth trying on this vector unit, a legality rule (register tiles that fit
// the registers, bounds of the attribute verifiers), and the two directions
// between a Point (one value per knob) and the generator's schedule. Knobs
// that the tuned lengths never exercise (the GEMV path when no length is
// below gemv_rows_below; the tiles when all are) keep their default value.
// The paths (SchedulePaths.h) say which knobs each code path reads and which
// lengths take it, so that each is searched on its own lengths.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_SCHEDULESPACE_H
#define XF_TUNING_SCHEDULESPACE_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Tuning/SchedulePaths.h"
#include "xf/Tuning/Search.h"

#include <vector>

namespace mlir::xf::tuning {

SearchSpace gemmSpace(const GemmKernelSpec &spec, const VectorShape &shape,
                      const std::vector<int64_t> &lengths);
/// GEMV (lengths below gemv_rows_below) and tiled GEMM (the others, few
/// rows included), the smaller space first; paths no length takes are left
/// out. The GEMV path also reads the weight-layout knobs (tile_cols,
/// pack_weights) unless the weight is in ggml blocks (never packed).
std::vector<SchedulePath> gemmPaths(const GemmKernelSpec &spec,
                                    const std::vector<int64_t> &lengths);
Point gemmPoint(const GemmSchedule &s);
GemmSchedule gemmScheduleAt(const Point &p);

SearchSpace attentionSpace(const AttentionKernelSpec &spec, const VectorShape &shape,
                           const std::vector<int64_t> &lengths);
/// Decode (at most 4 query rows) and prefill, as for gemmPaths.
std::vector<SchedulePath> attentionPaths(const std::vector<int64_t> &lengths);
Point attentionPoint(const AttentionSchedule &s);
AttentionSchedule attentionScheduleAt(const Point &p);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_SCHEDULESPACE_H
