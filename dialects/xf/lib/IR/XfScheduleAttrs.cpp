//===- XfScheduleAttrs.cpp - typed kernel schedules -----------------------===//
//
// The verifiers state what any generator needs of a schedule: positive
// sizes, a panel of whole register tiles, and upper bounds that keep the
// unrolled register blocks (and so compile time and code size) bounded.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfScheduleAttrs.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::xf;

#define GET_ATTRDEF_CLASSES
#include "xf/IR/XfScheduleAttrs.cpp.inc"

void XfDialect::registerScheduleAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "xf/IR/XfScheduleAttrs.cpp.inc"
      >();
}

namespace {
/// `value` must lie in [lo, hi].
LogicalResult inRange(function_ref<InFlightDiagnostic()> emitError, llvm::StringRef attr,
                      llvm::StringRef name, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi)
    return success();
  return emitError() << "#xf." << attr << ": " << name << " = " << value << " is out of range ["
                     << lo << ", " << hi << "]";
}
} // namespace

LogicalResult GemmScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t tileCols, int64_t tileRows, int64_t kBlock,
                                       bool packWeights, int64_t rowsPerTask, int64_t panelCols,
                                       int64_t gemvRowsBelow, int64_t gemvRowsPerPass,
                                       int64_t gemvTasks) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "gemm_schedule", name, v, lo, hi);
  };
  if (failed(range("tile_cols", tileCols, 1, 256)) || failed(range("tile_rows", tileRows, 1, 32)) ||
      failed(range("k_block", kBlock, 1, 1 << 16)) ||
      failed(range("rows_per_task", rowsPerTask, 1, 1 << 20)) ||
      failed(range("panel_cols", panelCols, 0, 1 << 20)) ||
      failed(range("gemv_rows_below", gemvRowsBelow, 0, 64)) ||
      failed(range("gemv_rows_per_pass", gemvRowsPerPass, 1, 64)) ||
      failed(range("gemv_tasks", gemvTasks, 0, 4096)))
    return failure();
  // Every accumulator of the register block is unrolled code.
  if (tileCols * tileRows > 1024)
    return emitError() << "#xf.gemm_schedule: a register tile of tile_rows × tile_cols = "
                       << tileRows << " × " << tileCols << " exceeds 1024 accumulators";
  if (panelCols % tileCols != 0)
    return emitError() << "#xf.gemm_schedule: panel_cols = " << panelCols
                       << " must be a multiple of tile_cols = " << tileCols;
  return success();
}

LogicalResult AttentionScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                            int64_t queryBlock, int64_t keyBlock, int64_t rowTile,
                                            int64_t decodeKeyTile) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "attention_schedule", name, v, lo, hi);
  };
  if (failed(range("query_block", queryBlock, 1, 4096)) ||
      failed(range("key_block", keyBlock, 1, 1024)) || failed(range("row_tile", rowTile, 1, 16)) ||
      failed(range("decode_key_tile", decodeKeyTile, 1, 16)))
    return failure();
  if (keyBlock * rowTile > 4096)
    return emitError() << "#xf.attention_schedule: a score tile of row_tile × key_block = "
                       << rowTile << " × " << keyBlock << " exceeds 4096 accumulators";
  return success();
}

LogicalResult LoopScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t rowsPerTask, int64_t vectorBits) {
  if (failed(inRange(emitError, "loop_schedule", "rows_per_task", rowsPerTask, 0, 1 << 20)))
    return failure();
  if (vectorBits != 0 && vectorBits != 128 && vectorBits != 256 && vectorBits != 512)
    return emitError() << "#xf.loop_schedule: vector_bits = " << vectorBits
                       << " is not 0 (the target's choice), 128, 256 or 512";
  return success();
}
