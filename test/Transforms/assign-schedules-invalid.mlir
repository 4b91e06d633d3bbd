// RUN: xf-opt %s -split-input-file --xf-assign-schedules -verify-diagnostics
// RUN: not xf-opt %s --xf-assign-schedules="vector-width=0" 2>&1 | FileCheck %s --check-prefix=SHAPE

// SHAPE: error: xf-assign-schedules: vector-width 0 and vector-registers 32 do not describe a vector unit

// A schedule must fit the target: register tiles of whole vectors (16 lanes here).
func.func @partial_vector(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>) -> tensor<?x2304xf32> {
  // expected-error @+1 {{schedule tile_cols = 24 is not a multiple of the target's vector width (16 float32 lanes)}}
  %t = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 24, tile_rows = 4, k_block = 512, pack_weights = true, rows_per_task = 128, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %t : tensor<?x2304xf32>
}
