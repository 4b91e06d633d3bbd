// GEMMs on weights kept in ggml blocks (xf.weight_storage: xf-assign-weight-storage, from xfc
// --quantized-like) dequantize a packed block per K block on every call: their default K block
// stays at 256, where a float32 weight's spans all of K up to 1536.
// RUN: xf-opt %s --xf-assign-schedules | FileCheck %s

// CHECK-LABEL: func.func @forward
func.func @forward(%x: tensor<?x1536xf32>) -> (tensor<?x576xf32>, tensor<?x576xf32>) {
  // [N, K] weights, as GGUF stores them: rows of whole blocks.
  %wq = xf.parameter "wq" {xf.weight_storage = #xf.weight_storage<q4_1>} : tensor<576x1536xf32>
  %wf = xf.parameter "wf" : tensor<576x1536xf32>
  // CHECK: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256,
  %q = xf.gemm %x, %wq activation none transpose_weight : (tensor<?x1536xf32>, tensor<576x1536xf32>) -> tensor<?x576xf32>
  // CHECK: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 1536,
  %f = xf.gemm %x, %wf activation none transpose_weight : (tensor<?x1536xf32>, tensor<576x1536xf32>) -> tensor<?x576xf32>
  return %q, %f : tensor<?x576xf32>, tensor<?x576xf32>
}
