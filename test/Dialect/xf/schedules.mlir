// RUN: xf-opt %s | FileCheck %s
// RUN: xf-opt %s | xf-opt | FileCheck %s
// RUN: xf-opt %s --mlir-print-op-generic | xf-opt | FileCheck %s

// Round trip of the typed schedules: every parameter is printed and parsed back.

// CHECK-LABEL: func.func @gemm_schedule
func.func @gemm_schedule(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>) -> tensor<?x2304xf32> {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation none {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 6, k_block = 384, pack_weights = false, rows_per_task = 64, panel_cols = 256, gemv_rows_below = 2, gemv_rows_per_pass = 8, gemv_tasks = 4>}
  %g = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 6, k_block = 384, pack_weights = false, rows_per_task = 64, panel_cols = 256, gemv_rows_below = 2, gemv_rows_per_pass = 8, gemv_tasks = 4>} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %g : tensor<?x2304xf32>
}

// A CUDA target's GEMM carries both: every field of the GPU schedule round-trips too.
// CHECK-LABEL: func.func @gpu_gemm_schedule
func.func @gpu_gemm_schedule(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>) -> tensor<?x2304xf32> {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation none {gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128, reg_tile_rows = 16, reg_tall_rows = 256, reg_tall_tile_rows = 64, reg_thread_rows = 8, reg_unroll_k = 4, tile_cols = 128, tile_rows = 32, thread_cols = 8, thread_rows = 4, slice_k = 8, gemv_cols = 64, gemv_slices = 8, gemv_lane_cols = 4, reg_split_k = 2, reg_fill_blocks = 128, nk_thread_rows = 4>, schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 6, k_block = 384, pack_weights = false, rows_per_task = 64, panel_cols = 256, gemv_rows_below = 2, gemv_rows_per_pass = 8, gemv_tasks = 4>}
  %g = xf.gemm %x, %w activation none {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 6, k_block = 384, pack_weights = false, rows_per_task = 64, panel_cols = 256, gemv_rows_below = 2, gemv_rows_per_pass = 8, gemv_tasks = 4>, gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128, reg_tile_rows = 16, reg_tall_rows = 256, reg_tall_tile_rows = 64, reg_thread_rows = 8, reg_unroll_k = 4, tile_cols = 128, tile_rows = 32, thread_cols = 8, thread_rows = 4, slice_k = 8, gemv_cols = 64, gemv_slices = 8, gemv_lane_cols = 4, reg_split_k = 2, reg_fill_blocks = 128, nk_thread_rows = 4>} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %g : tensor<?x2304xf32>
}

// The split-K fields (reg_split_k, reg_fill_blocks) and nk_thread_rows have defaults: omitted,
// they read as 4, 264 and 2 and print as omitted; set, they round-trip.
// CHECK-LABEL: func.func @gpu_gemm_schedule_split_k
func.func @gpu_gemm_schedule_split_k() attributes {
    // CHECK-SAME: xf.d = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>
    xf.d = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, reg_split_k = 4, reg_fill_blocks = 264>,
    // CHECK-SAME: xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, reg_split_k = 2, reg_fill_blocks = 528>
    xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, reg_split_k = 2, reg_fill_blocks = 528>} {
  return
}

// The batch GEMV's fields (4 < M <= 16) round-trip where set, and are omitted at their
// defaults (16, 16, 8).
// CHECK-LABEL: func.func @gpu_gemm_schedule_batch_gemv
func.func @gpu_gemm_schedule_batch_gemv() attributes {
    // CHECK-SAME: xf.d = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>
    xf.d = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 16, batch_slices = 16, batch_lane_cols = 8>,
    // CHECK-SAME: xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 8, batch_slices = 32, batch_lane_cols = 4>
    xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 8, batch_slices = 32, batch_lane_cols = 4>} {
  return
}

// CHECK-LABEL: func.func @attention_schedule
func.func @attention_schedule(%q: tensor<?x768xf32>) -> tensor<?x768xf32> {
  // CHECK: xf.attention causal heads 12 {{.*}} {schedule = #xf.attention_schedule<query_block = 32, key_block = 48, row_tile = 3, decode_key_tile = 8>}
  %a = xf.attention causal heads 12 %q, %q, %q {schedule = #xf.attention_schedule<query_block = 32, key_block = 48, row_tile = 3, decode_key_tile = 8>} : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  return %a : tensor<?x768xf32>
}

// Loop kernel ops carry theirs as the discardable attribute xf.loop_schedule.
// CHECK-LABEL: func.func @loop_schedule
func.func @loop_schedule(%x: tensor<?x768xf32>) -> tensor<?x768xf32> {
  // CHECK: xf.softmax %{{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 21, vector_bits = 512>} : tensor<?x768xf32>
  %s = xf.softmax %x {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 21, vector_bits = 512>} : tensor<?x768xf32>
  // CHECK: xf.gelu tanh %{{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 0, vector_bits = 0>} : tensor<?x768xf32>
  %g = xf.gelu tanh %s {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 0, vector_bits = 0>} : tensor<?x768xf32>
  return %g : tensor<?x768xf32>
}

// A schedule is an attribute of its own: usable (and verified) anywhere.
// CHECK-LABEL: func.func @standalone
// CHECK-SAME: xf.s = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>
func.func @standalone() attributes {xf.s = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>} {
  return
}

// CHECK-L#xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>BEL: func.func @gpu_attention_schedule
func.func @gpu_attention_schedule(%q: tensor<?x768xf32>, %k: tensor<?x768xf32>, %v: tensor<?x768xf32>) -> tensor<?x768xf32> {
  // CHECK: xf.attention causal heads 12 %{{.*}}, %{{.*}}, %{{.*}} {gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>}
  %o = xf.attention causal heads 12 %q, %k, %v {gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>} : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  return %o : tensor<?x768xf32>
}
