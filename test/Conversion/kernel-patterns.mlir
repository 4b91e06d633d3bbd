// The host lowering by patterns (KernelPatterns.cpp): each entry point's body starts as a
// clone of @forward, and one pattern per op type replaces each cloned op by its kernel call,
// in the ops' order; xf.length becomes the entry point's rows as f64 and the
// arith ops on numbers stay where they were cloned (here between the gather and the scale).
// No xf op is left in the host module.
// RUN: xf-opt %s --split-input-file --verify-diagnostics --xf-lower-to-host | FileCheck %s --implicit-check-not="= xf."

// CHECK-LABEL: func.func @xf_forward(
// CHECK-SAME: %[[L:arg3]]: i64
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT: %[[N:.*]] = arith.sitofp %[[L]] : i64 to f64
// CHECK: call @xfrt_profile_enter(
// CHECK: call @xf_gather_rows_8(
// CHECK: call @xfrt_profile_exit(
// CHECK-NEXT: %[[INV:.*]] = arith.divf %[[ONE]], %[[N]] : f64
// CHECK: call @xfrt_profile_enter(
// CHECK: %[[F:.*]] = arith.mulf %[[INV]], %{{.*}} : f64
// CHECK: %[[BITS:.*]] = arith.bitcast %[[F]] : f64 to i64
// CHECK: call @xf_scale_by_8({{.*}}, %[[BITS]])
// CHECK: call @xf_relu_8(
// CHECK: return
// The cached entry point refuses (every row depends on the length), from the same patterns'
// plan: no body is cloned.
// CHECK-LABEL: func.func @xf_forward_cached(
// CHECK-NEXT: %[[REFUSED:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[REFUSED]] : i32
module attributes {xf.hyperparameters = {l_max = 16 : i64}, xf.model = "m"} {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x8xf32> {
    %one = arith.constant 1.000000e+00 : f64
    %t = xf.parameter "t" : tensor<16x8xf32>
    %n = xf.length %x : tensor<?xi32>
    %e = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %inv = arith.divf %one, %n : f64
    %s = xf.scale %e by 1.000000e+00 times %inv : tensor<?x8xf32>
    %r = xf.relu %s : tensor<?x8xf32>
    return %r : tensor<?x8xf32>
  }
}

// -----

// A number the host code cannot compute: the pattern's error, at the op, and no other (the
// ops after it are not lowered).
func.func @forward(%x: tensor<?xi32>) -> tensor<?x8xf32> {
  %one = arith.constant 1.000000e+00 : f64
  %t = xf.parameter "t" : tensor<16x8xf32>
  %n = xf.length %x : tensor<?xi32>
  // expected-error @below {{no host code for this number}}
  %m = arith.maximumf %n, %one : f64
  %e = xf.token_embed %t[%x] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %s = xf.scale %e by 1.000000e+00 times %m : tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}
