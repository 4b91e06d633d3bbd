//===- XfScheduleAttrs.h - typed kernel schedules ---------------*- C++ -*-===//

#ifndef XF_IR_XFSCHEDULEATTRS_H
#define XF_IR_XFSCHEDULEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "xf/IR/XfScheduleAttrs.h.inc"

#endif // XF_IR_XFSCHEDULEATTRS_H
