// RUN: xf-opt %s --xf-assign-schedules | FileCheck %s

// CHECK-LABEL: func.func @kernels
func.func @kernels(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>, %w2: tensor<128x64xf32>, %y: tensor<?x128xf32>) -> (tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x64xf32>) {
  // CHECK: xf.gemm {{.*}} {schedule = {gemv_rows_below = 4 : i64, k_block = 256 : i64, pack_weights = true, panel_cols = 0 : i64, rows_per_task = 256 : i64, tile_cols = 48 : i64, tile_rows = 8 : i64}}
  %g = xf.gemm %x, %w activation none : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  // A K smaller than the default block keeps one block.
  // CHECK: xf.gemm {{.*}} {schedule = {gemv_rows_below = 4 : i64, k_block = 128 : i64,
  %s = xf.gemm %y, %w2 activation none : (tensor<?x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  // CHECK: xf.attention causal heads 12 {{.*}} {schedule = {key_block = 64 : i64, query_block = 64 : i64}}
  %a = xf.attention causal heads 12 %x, %x, %x : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  // An existing schedule (e.g. from the tuner) is kept.
  // CHECK: xf.gemm {{.*}} {schedule = {tile_cols = 32 : i64}}
  %t = xf.gemm %x, %w activation none {schedule = {tile_cols = 32 : i64}} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %g, %a, %s : tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x64xf32>
}
