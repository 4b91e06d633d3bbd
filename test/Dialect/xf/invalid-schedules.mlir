// RUN: xf-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the schedule attributes.

// expected-error @+1 {{tile_cols = 0 is out of range [1, 256]}}
func.func @case0() attributes {xf.s = #xf.gemm_schedule<tile_cols = 0, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{tile_cols = 512 is out of range [1, 256]}}
func.func @case1() attributes {xf.s = #xf.gemm_schedule<tile_cols = 512, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{tile_rows = 0 is out of range [1, 32]}}
func.func @case2() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 0, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{tile_rows = 33 is out of range [1, 32]}}
func.func @case3() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 33, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{k_block = 0 is out of range [1, 65536]}}
func.func @case4() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 0, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{rows_per_task = -1 is out of range [1, 1048576]}}
func.func @case5() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = -1, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{panel_cols = -48 is out of range [0, 1048576]}}
func.func @case6() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = -48, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{panel_cols = 100 must be a multiple of tile_cols = 48}}
func.func @case7() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 100, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{gemv_rows_below = 65 is out of range [0, 64]}}
func.func @case8() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 65, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{gemv_rows_per_pass = 0 is out of range [1, 64]}}
func.func @case9() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 0, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{gemv_tasks = 5000 is out of range [0, 4096]}}
func.func @case10() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 5000>} {
  return
}

// -----

// expected-error @+1 {{a register tile of tile_rows × tile_cols = 8 × 256 exceeds 1024 accumulators}}
func.func @case11() attributes {xf.s = #xf.gemm_schedule<tile_cols = 256, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16, gemv_tasks = 0>} {
  return
}

// -----

// expected-error @+1 {{query_block = 0 is out of range [1, 4096]}}
func.func @case12() attributes {xf.s = #xf.attention_schedule<query_block = 0, key_block = 64, row_tile = 4, decode_key_tile = 4>} {
  return
}

// -----

// expected-error @+1 {{key_block = 2048 is out of range [1, 1024]}}
func.func @case13() attributes {xf.s = #xf.attention_schedule<query_block = 64, key_block = 2048, row_tile = 4, decode_key_tile = 4>} {
  return
}

// -----

// expected-error @+1 {{row_tile = 17 is out of range [1, 16]}}
func.func @case14() attributes {xf.s = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 17, decode_key_tile = 4>} {
  return
}

// -----

// expected-error @+1 {{decode_key_tile = 0 is out of range [1, 16]}}
func.func @case15() attributes {xf.s = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 0>} {
  return
}

// -----

// expected-error @+1 {{a score tile of row_tile × key_block = 8 × 1024 exceeds 4096 accumulators}}
func.func @case16() attributes {xf.s = #xf.attention_schedule<query_block = 64, key_block = 1024, row_tile = 8, decode_key_tile = 4>} {
  return
}

// -----

// A missing parameter: every knob is spelled out.
// expected-error @+1 {{expected ','}}
func.func @missing() attributes {xf.s = #xf.gemm_schedule<tile_cols = 48, tile_rows = 8, k_block = 256, pack_weights = true, rows_per_task = 256, panel_cols = 0, gemv_rows_below = 4, gemv_rows_per_pass = 16>} {
  return
}

// -----

// The schedule of a GEMM must be a gemm schedule.
func.func @wrong_kind(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{attribute 'schedule' failed to satisfy constraint}}
  %g = xf.gemm %x, %w activation none {schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return %g : tensor<?x16xf32>
}

// -----

// expected-error @+1 {{#xf.loop_schedule: rows_per_task = -1 is out of range [0, 1048576]}}
func.func @loop_rows() attributes {xf.s = #xf.loop_schedule<rows_per_task = -1, vector_bits = 0>} {
  return
}

// -----

// expected-error @+1 {{#xf.loop_schedule: vector_bits = 300 is not 0 (the target's choice), 128, 256 or 512}}
func.func @loop_bits() attributes {xf.s = #xf.loop_schedule<rows_per_task = 4, vector_bits = 300>} {
  return
}

// -----

// Only ops lowered to loop kernels take a loop schedule, and only a loop schedule.
func.func @loop_on_gemm(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'xf.loop_schedule' is only for ops lowered to loop kernels (norms, softmax, embeddings, elementwise), not 'xf.gemm'}}
  %g = xf.gemm %x, %w activation none {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 4, vector_bits = 0>} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return %g : tensor<?x16xf32>
}

// -----

func.func @gemm_schedule_on_softmax(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'xf.loop_schedule' must be a #xf.loop_schedule, not #xf.attention_schedule}}
  %s = xf.softmax %x {xf.loop_schedule = #xf.attention_schedule<query_block = 64, key_block = 64, row_tile = 4, decode_key_tile = 4>} : tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{reg_tile_cols = 2 is out of range [4, 256]}}
func.func @gpu_case0() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 2, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{reg_unroll_k = 0 is out of range [1, 64]}}
func.func @gpu_case1() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 0, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{gemv_lane_cols = 33 is out of range [1, 32]}}
func.func @gpu_case2() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 33>} {
  return
}

// -----

// expected-error @+1 {{reg_tile_cols = 66 must be a multiple of a thread's columns = 4}}
func.func @gpu_case3() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 66, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{reg_tile_rows = 6 must be a multiple of reg_thread_rows = 4}}
func.func @gpu_case4() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 6, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{reg_tall_tile_rows = 30 must be a multiple of reg_thread_rows = 4}}
func.func @gpu_case5() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 30, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{the register path needs 4096 threads a block (at most 1024)}}
func.func @gpu_case6() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 256, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 256, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{tile_cols = 66 must be a multiple of thread_cols = 4}}
func.func @gpu_case7() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 66, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{tile_rows = 30 must be a multiple of thread_rows = 4}}
func.func @gpu_case8() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 30, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{tile_cols = 60 must be a multiple of tile_rows / thread_rows = 8}}
func.func @gpu_case9() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 60, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{slice_k = 12 must be a multiple of tile_rows / thread_rows = 8}}
func.func @gpu_case10() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 12, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{the staged path needs 2048 threads a block (at most 1024)}}
func.func @gpu_case11() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 256, tile_rows = 32, thread_cols = 1, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{a register tile of thread_rows × thread_cols = 8 × 16 exceeds 64 accumulators}}
func.func @gpu_case12() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 64, thread_cols = 16, thread_rows = 8, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{the staged path's tile and slice need 86016 bytes of shared memory (at most 49152)}}
func.func @gpu_case13() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 128, tile_rows = 64, thread_cols = 8, thread_rows = 8, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{the [K, N] GEMV path needs 2048 threads a block (at most 1024)}}
func.func @gpu_case14() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 64, gemv_slices = 32, gemv_lane_cols = 8>} {
  return
}

// -----

// expected-error @+1 {{reg_split_k = 0 is out of range [1, 16]}}
func.func @gpu_case15() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, reg_split_k = 0>} {
  return
}

// -----

// 16 groups of 2 rows of 16 threads (512) fit, but their sums need 64 KiB of shared memory.
// expected-error @+1 {{the register path's split K needs 65536 bytes of shared memory (at most 49152)}}
func.func @gpu_case16() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, reg_split_k = 16>} {
  return
}

// -----

// expected-error @+1 {{reg_tile_rows = 8 must be a multiple of nk_thread_rows = 3}}
func.func @gpu_case17() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, nk_thread_rows = 3>} {
  return
}

// -----

// expected-error @+1 {{query_block = 0 is out of range [1, 32]}}
func.func @gpu_attention_case0() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 0, key_block = 32, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{query_block = 64 is out of range [1, 32]}}
func.func @gpu_attention_case1() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 64, key_block = 16, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{key_block = 0 is out of range [1, 256]}}
func.func @gpu_attention_case2() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 16, key_block = 0, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{decode_key_block = 512 is out of range [1, 256]}}
func.func @gpu_attention_case3() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 512, decode_blocks = 264, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{decode_blocks = 0 is out of range [1, 65536]}}
func.func @gpu_attention_case4() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 32, decode_blocks = 0, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{decode_block_heads = 16 is out of range [1, 8]}}
func.func @gpu_attention_case5() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 16>} {
  return
}

// -----

// expected-error @+1 {{key_block × query_block = 64 × 32 score threads exceed a block's 1024}}
func.func @gpu_attention_case6() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 32, key_block = 64, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 4>} {
  return
}

// -----

// expected-error @+1 {{decode_key_block × 4 rows × decode_block_heads = 64 × 4 × 8 score threads exceed a block's 1024}}
func.func @gpu_attention_case7() attributes {xf.s = #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 64, decode_blocks = 264, decode_block_heads = 8>} {
  return
}

// -----

// expected-error @+1 {{batch_cols = 0 is out of range [1, 32]}}
func.func @gpu_batch_case0() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 0>} {
  return
}

// -----

// expected-error @+1 {{the [K, N] batch GEMV path needs 2048 threads a block (at most 1024)}}
func.func @gpu_batch_case1() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 16, batch_slices = 128>} {
  return
}

// -----

// expected-error @+1 {{the batch GEMV path's partial sums need 131072 bytes of shared memory (at most 49152)}}
func.func @gpu_batch_case2() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_lane_cols = 32>} {
  return
}

// -----

// expected-error @+1 {{the batch GEMV path's partial sums need 65536 bytes of shared memory (at most 49152)}}
func.func @gpu_batch_case3() attributes {xf.s = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8, batch_cols = 8, batch_slices = 64>} {
  return
}
