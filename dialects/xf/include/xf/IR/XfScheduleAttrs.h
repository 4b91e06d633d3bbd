//===- XfScheduleAttrs.h - the xf dialect's attributes ----------*- C++ -*-===//
//
// The enums (XfAttrs.td), the typed kernel schedules (XfScheduleAttrs.td) and
// the kernel descriptions that hold them (XfKernelAttrs.td).
//
//===----------------------------------------------------------------------===//

#ifndef XF_IR_XFSCHEDULEATTRS_H
#define XF_IR_XFSCHEDULEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "xf/IR/XfEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "xf/IR/XfAttrDefs.h.inc"

#endif // XF_IR_XFSCHEDULEATTRS_H
