// RUN: xf-opt %s --xf-assign-schedules="cuda=true" | FileCheck %s
// RUN: not xf-opt %s --xf-assign-schedules 2>&1 | FileCheck %s --check-prefix=CPU

// A CUDA target: every GEMM also gets the GPU schedule, the defaults of docs/gpu.md "The
// schedules" (defaultGpuGemmSchedule: a [K, N] GEMV's 32 × 16 blocks narrowed to 8 columns
// × 64 K slices where N / 32 is under 264 blocks — N = 2304 here); one already there (from
// the tuning database) is kept.
// CHECK-LABEL: func.func @gemms
func.func @gemms(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>) -> (tensor<?x2304xf32>, tensor<?x2304xf32>) {
  // CHECK: xf.gemm {{.*}} {gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = true, reg_tile_cols = 64, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 8, gemv_slices = 64, gemv_lane_cols = 8>, schedule = #xf.gemm_schedule<
  %g = xf.gemm %x, %w activation none : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  // CHECK: xf.gemm {{.*}} {gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128,
  %t = xf.gemm %x, %w activation none {gpu_schedule = #xf.gpu_gemm_schedule<register_tiles = false, reg_tile_cols = 128, reg_tile_rows = 8, reg_tall_rows = 512, reg_tall_tile_rows = 32, reg_thread_rows = 4, reg_unroll_k = 8, tile_cols = 64, tile_rows = 32, thread_cols = 4, thread_rows = 4, slice_k = 16, gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>} : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  return %g, %t : tensor<?x2304xf32>, tensor<?x2304xf32>
}

// N = 8448 fills 264 blocks of 32 columns; an [N, K] weight's GEMV has its own blocks (32 lanes
// a column): both keep 32 × 16.
// CHECK-LABEL: func.func @wide
func.func @wide(%x: tensor<?x768xf32>, %w: tensor<768x8448xf32>, %v: tensor<768x768xf32>) -> (tensor<?x8448xf32>, tensor<?x768xf32>) {
  // CHECK: xf.gemm {{.*}} gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>
  %g = xf.gemm %x, %w activation none : (tensor<?x768xf32>, tensor<768x8448xf32>) -> tensor<?x8448xf32>
  // CHECK: xf.gemm {{.*}} transpose_weight {{.*}} gemv_cols = 32, gemv_slices = 16, gemv_lane_cols = 8>
  %t = xf.gemm %x, %v activation none transpose_weight : (tensor<?x768xf32>, tensor<768x768xf32>) -> tensor<?x768xf32>
  return %g, %t : tensor<?x8448xf32>, tensor<?x768xf32>
}

// A CPU target: no CPU kernel reads a GPU schedule.
// CPU: error: 'xf.gemm' op has a gpu_schedule, but the target is not CUDA
