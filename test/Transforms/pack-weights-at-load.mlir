// xf-pack-weights-at-load: each GEMM of @forward and @forward_packed whose
// weight is a constant of the model, not in blocks, and whose schedule packs
// it gets `xf.packed_weight`; one case per rule below. The host lowering and
// the kernel's description (#xf.gemm_kernel `packed`) read the mark.
// RUN: xf-opt %s --xf-pack-weights-at-load | FileCheck %s

// CHECK-LABEL: func.func @forward(
func.func @forward(%x: tensor<?x64xf32>, %y: tensor<64x32xf32>) -> (tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  // A parameter: packed.
  // CHECK: %[[A:.*]] = xf.gemm {{.*}} {schedule = {{.*}}, xf.packed_weight}
  %w = xf.parameter "w" : tensor<64x32xf32>
  %a = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  // A concatenation of parameters (fused Q/K/V): a derived weight, packed.
  // CHECK: %[[B:.*]] = xf.gemm {{.*}} {schedule = {{.*}}, xf.packed_weight}
  %u = xf.parameter "u" : tensor<64x32xf32>
  %uv = xf.concat %u, %w axis 1 : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
  %b = xf.gemm %x, %uv activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // An activation as the weight: read as it is.
  // CHECK: %[[C:.*]] = xf.gemm {{.*}} {schedule = {{.*}}} :
  %g = xf.gelu erf %y : tensor<64x32xf32>
  %c = xf.gemm %x, %g activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  // A schedule that reads the weight as stored (pack_weights = false): not packed.
  // CHECK: %[[D:.*]] = xf.gemm {{.*}} {schedule = {{.*}}pack_weights = false{{.*}}} :
  %d = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = false, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  // A weight in ggml blocks: dequantized as stored.
  // CHECK: %[[E:.*]] = xf.gemm {{.*}} transpose_weight {schedule = {{.*}}} :
  %q = xf.parameter "q" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
  %e = xf.gemm %x, %q activation none transpose_weight {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  // No schedule yet (the pass runs after the schedules): not packed.
  // CHECK: %[[F:.*]] = xf.gemm %{{.*}}, %{{.*}} activation none : (
  %f = xf.gemm %x, %w activation none : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a, %b, %c, %d, %e, %f : tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// The packed batch's copy is marked as @forward; the training step never is.
// CHECK-LABEL: func.func @forward_packed(
// CHECK: xf.gemm {{.*}} {schedule = {{.*}}, xf.packed_weight}
// CHECK-LABEL: func.func @loss_and_gradients(
// CHECK: xf.gemm {{.*}} {schedule = {{.*}}} :
func.func @forward_packed(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  %a = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}
func.func @loss_and_gradients(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<64x32xf32>
  %a = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 64, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 0>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}
