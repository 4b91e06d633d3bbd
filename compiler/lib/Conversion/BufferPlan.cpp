//===- BufferPlan.cpp - one arena, slots reused by liveness ---------------===//

#include "xf/Conversion/BufferPlan.h"

#include <algorithm>
#include <map>

using namespace mlir::xf;

BufferPlan mlir::xf::planBuffers(const std::vector<BufferRequest> &requests) {
  BufferPlan plan;
  plan.columnOffset.assign(requests.size(), 0);
  // Live slots: offset → (columns, lastUse). Requests arrive in program order.
  std::map<int64_t, std::pair<int64_t, int64_t>> live;
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest &r = requests[i];
    // A slot is free once its last reader ran before this buffer is written.
    for (auto it = live.begin(); it != live.end();)
      it = it->second.second < r.firstUse ? live.erase(it) : std::next(it);
    int64_t offset = 0;
    for (auto &[start, slot] : live) {
      if (start - offset >= r.columns)
        break;
      offset = std::max(offset, start + slot.first);
    }
    live[offset] = {r.columns, r.lastUse};
    plan.columnOffset[i] = offset;
    plan.totalColumns = std::max(plan.totalColumns, offset + r.columns);
  }
  return plan;
}
