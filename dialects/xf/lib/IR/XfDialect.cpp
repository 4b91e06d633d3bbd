//===- XfDialect.cpp - the xf dialect -------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfOps.h"

using namespace mlir;
using namespace mlir::xf;

#include "xf/IR/XfDialect.cpp.inc"

void XfDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "xf/IR/XfOps.cpp.inc"
      >();
  registerScheduleAttributes();
}
