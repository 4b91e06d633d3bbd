// RUN: xf-opt %s --xf-assign-schedules="cuda=true" | FileCheck %s
// RUN: not xf-opt %s --xf-assign-schedules 2>&1 | FileCheck %s --check-prefix=CPU

// A CUDA target: every attention also gets the GPU schedule, the sizes the CUDA kernels had
// before it was typed (docs/gpu.md "The schedules"); one already there (from the tuning
// database) is kept.
// CHECK-LABEL: func.func @attentions
func.func @attentions(%q: tensor<?x768xf32>, %k: tensor<?x768xf32>, %v: tensor<?x768xf32>) -> (tensor<?x768xf32>, tensor<?x768xf32>) {
  // CHECK: xf.attention causal heads 12 {{.*}} {gpu_schedule = #xf.gpu_attention_schedule<query_block = 16, key_block = 32, decode_key_block = 32, decode_blocks = 264, decode_block_heads = 4>, schedule = #xf.attention_schedule<
  %a = xf.attention causal heads 12 %q, %k, %v : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  // CHECK: xf.attention causal heads 12 {{.*}} {gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64,
  %t = xf.attention causal heads 12 %q, %k, %v {gpu_schedule = #xf.gpu_attention_schedule<query_block = 8, key_block = 64, decode_key_block = 16, decode_blocks = 132, decode_block_heads = 2>} : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32> -> tensor<?x768xf32>
  return %a, %t : tensor<?x768xf32>, tensor<?x768xf32>
}

// A CPU target: no CPU kernel reads a GPU schedule.
// CPU: error: 'xf.attention' op has a gpu_schedule, but the target is not CUDA
