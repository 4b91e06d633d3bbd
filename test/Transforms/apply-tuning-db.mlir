// RUN: xf-opt %s --xf-apply-tuning-db="db=%S/Inputs/tuning.db target=test-target threads=2" 2>&1 | FileCheck %s
// RUN: xf-opt %s --xf-apply-tuning-db="db=%S/Inputs/tuning.db target=test-target threads=4" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: xf-opt %s --xf-apply-tuning-db="db=%S/Inputs/tuning-unknown.db target=test-target threads=2" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not xf-opt %s --xf-apply-tuning-db="db=%t.missing target=test-target threads=2" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not xf-opt %s --xf-apply-tuning-db="db=%S/Inputs/tuning-illegal.db target=test-target threads=2" 2>&1 | FileCheck %s --check-prefix=ILLEGAL
// RUN: head -c 200 %S/Inputs/tuning.db > %t.truncated
// RUN: not xf-opt %s --xf-apply-tuning-db="db=%t.truncated target=test-target threads=2" 2>&1 | FileCheck %s --check-prefix=TRUNCATED

// Kernels with an entry for this signature, target, thread count and xf
// version take its schedule and are marked xf.tuned; the others are left to
// xf-assign-schedules.
// Diagnostics come first (stderr), then the IR.
// CHECK: warning: tuning database '{{.*}}tuning.db': 1 kernel(s) were tuned only for another target, thread count or xf version; they use default schedules (target test-target, 2 threads
// CHECK-LABEL: func.func @kernels
func.func @kernels(%x: tensor<?x768xf32>, %w: tensor<768x2304xf32>, %w2: tensor<768x768xf32>, %gamma: tensor<768xf32>) -> (tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>) {
  // CHECK: xf.gemm {{.*}} {schedule = #xf.gemm_schedule<tile_cols = 32, tile_rows = 4, k_block = 384, pack_weights = false, rows_per_task = 64, panel_cols = 128, gemv_rows_below = 4, gemv_rows_per_pass = 8, gemv_tasks = 2>, xf.tuned}
  %g = xf.gemm %x, %w activation none : (tensor<?x768xf32>, tensor<768x2304xf32>) -> tensor<?x2304xf32>
  // Tuned for another target only: untouched (and counted in the warning).
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation none : (tensor<?x768xf32>, tensor<768x768xf32>)
  %h = xf.gemm %x, %w2 activation none : (tensor<?x768xf32>, tensor<768x768xf32>) -> tensor<?x768xf32>
  // CHECK: xf.attention causal heads 12 {{.*}} {schedule = #xf.attention_schedule<query_block = 32, key_block = 48, row_tile = 3, decode_key_tile = 2>, xf.tuned}
  %a = xf.attention causal heads 12 %x, %x, %x : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  // A loop kernel's entry is keyed by op, operand types and attributes.
  // CHECK: xf.layer_norm {{.*}} {xf.loop_schedule = #xf.loop_schedule<rows_per_task = 3, vector_bits = 256>, xf.tuned}
  %n = xf.layer_norm %x gamma %gamma beta %gamma eps 1.0E-5 : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x768xf32>
  // Another epsilon is another kernel: untouched.
  // CHECK: xf.layer_norm {{.*}} eps 9.9999999999999995E-7 : tensor
  %m = xf.layer_norm %n gamma %gamma beta %gamma eps 1.0E-6 : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<?x768xf32>
  return %g, %h, %a, %m : tensor<?x2304xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>
}


// THREADS: warning: tuning database '{{.*}}tuning.db': 4 kernel(s) were tuned only for another target, thread count or xf version; they use default schedules (target test-target, 4 threads
// THREADS-NOT: xf.tuned

// UNKNOWN: warning: tuning database '{{.*}}tuning-unknown.db': ignoring the entry for unknown kernel 'conv2d k=3'

// MISSING: error: tuning database: {{.*}}missing
// ILLEGAL: error: tuning database '{{.*}}tuning-illegal.db': the entry for 'gemm k=768 n=2304 weight=kn:f32 x=f32 act=none' holds an illegal schedule: #xf.gemm_schedule: tile_rows = 99 is out of range [1, 32]
// TRUNCATED: error: tuning database: {{.*}}truncated
