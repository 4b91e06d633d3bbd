//===- Version.h - the xf version -------------------------------*- C++ -*-===//
//
// Part of every tuning database key: a new version may generate different
// kernels from the same schedule, so its measurements are not reused.
//
//===----------------------------------------------------------------------===//

#ifndef XF_VERSION_H
#define XF_VERSION_H

namespace mlir::xf {
inline constexpr const char *kXfVersion = "0.2.0";
} // namespace mlir::xf

#endif // XF_VERSION_H
