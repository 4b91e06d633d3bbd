// RUN: xf-opt %s --xf-fuse-gemm-epilogue | FileCheck %s

// GPT-2's MLP: x + c_proj(gelu(c_fc(x))) is two GEMMs, the first with a GELU
// epilogue, the second with its bias and the residual.
// CHECK-LABEL: func.func @mlp_block
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W1:.*]]: tensor<64x256xf32>, %[[B1:.*]]: tensor<256xf32>, %[[W2:.*]]: tensor<256x64xf32>, %[[B2:.*]]: tensor<64xf32>)
func.func @mlp_block(%x: tensor<?x64xf32>, %w1: tensor<64x256xf32>, %b1: tensor<256xf32>,
                     %w2: tensor<256x64xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[H:.*]] = xf.gemm %[[X]], %[[W1]] bias %[[B1]] activation gelu_tanh : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  // CHECK: %[[Y:.*]] = xf.gemm %[[H]], %[[W2]] bias %[[B2]] residual %[[X]] activation none : (tensor<?x256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  // CHECK-NEXT: return %[[Y]]
  %h = xf.linear %x, %w1, %b1 : tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %g = xf.gelu tanh %h : tensor<?x256xf32>
  %m = xf.linear %g, %w2, %b2 : tensor<?x256xf32>, tensor<256x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %y = xf.add %x, %m : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Seed 000's ffn: W2·relu(W1·z + b1) + b2, biases written as separate sums.
// CHECK-LABEL: func.func @relu_and_bias_adds
func.func @relu_and_bias_adds(%z: tensor<?x64xf32>, %w1: tensor<256x64xf32>, %b1: tensor<256xf32>,
                              %w2: tensor<64x256xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[H:.*]] = xf.gemm %{{.*}}, %{{.*}} bias %{{.*}} activation relu transpose_weight
  // CHECK: xf.gemm %[[H]], %{{.*}} bias %{{.*}} activation none transpose_weight
  // CHECK-NOT: xf.add
  // CHECK-NOT: xf.relu
  %h = xf.matmul %z, %w1 transpose_rhs : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  %hb = xf.add %h, %b1 : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %r = xf.relu %hb : tensor<?x256xf32>
  %o = xf.matmul %r, %w2 transpose_rhs : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  %ob = xf.add %o, %b2 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %ob : tensor<?x64xf32>
}

// A GEMM result with a second use keeps its epilogue out of the kernel.
// CHECK-LABEL: func.func @shared_result
func.func @shared_result(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: %[[G:.*]] = xf.gemm %{{.*}}, %{{.*}} activation none
  // CHECK: xf.relu %[[G]]
  %h = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %r = xf.relu %h : tensor<?x64xf32>
  return %h, %r : tensor<?x64xf32>, tensor<?x64xf32>
}

// Tied unembedding reads W_e [N_V, d_e] transposed.
// CHECK-LABEL: func.func @tied_unembedding
func.func @tied_unembedding(%x: tensor<?x64xf32>, %we: tensor<256x64xf32>) -> tensor<?x256xf32> {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation none transpose_weight : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %l = xf.unembed %x, tied %we : tensor<?x64xf32>, tensor<256x64xf32> -> tensor<?x256xf32>
  return %l : tensor<?x256xf32>
}

// Post-LN (BERT): the residual add feeds layer_norm; it still fuses, the norm stays.
// CHECK-LABEL: func.func @post_ln_residual
func.func @post_ln_residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[S:.*]] = xf.gemm %{{.*}}, %{{.*}} bias %{{.*}} residual %{{.*}} activation gelu_erf
  // CHECK: xf.layer_norm %[[S]]
  %h = xf.linear %x, %w, %b : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %g = xf.gelu erf %h : tensor<?x64xf32>
  %s = xf.add %g, %x : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %n = xf.layer_norm %s eps 1.0e-12 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// SiLU fuses like ReLU and GELU.
// CHECK-LABEL: func.func @silu
func.func @silu(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation silu : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // CHECK-NOT: xf.silu
  %h = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %s = xf.silu %h : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// SwiGLU over a GEMM of 2·N columns (gate | up, as xf-fuse-qkv joins them):
// one GEMM with the gated epilogue, then the down projection with its residual.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[WGU:.*]]: tensor<96x64xf32>, %[[WD:.*]]: tensor<64x48xf32>
func.func @swiglu(%x: tensor<?x64xf32>, %wgu: tensor<96x64xf32>, %wd: tensor<64x48xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[P:.*]] = xf.gemm %[[X]], %[[WGU]] activation swiglu transpose_weight : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x48xf32>
  // CHECK-NOT: xf.mul
  // CHECK-NOT: xf.silu
  // CHECK: xf.gemm %[[P]], %[[WD]] residual %[[X]] activation none transpose_weight
  %gu = xf.linear %x, %wgu transpose_weight : tensor<?x64xf32>, tensor<96x64xf32> -> tensor<?x96xf32>
  %g = xf.slice %gu axis 1 offset 0 : tensor<?x96xf32> -> tensor<?x48xf32>
  %u = xf.slice %gu axis 1 offset 48 : tensor<?x96xf32> -> tensor<?x48xf32>
  %s = xf.silu %g : tensor<?x48xf32>
  %p = xf.mul %u, %s : tensor<?x48xf32>
  %d = xf.linear %p, %wd transpose_weight : tensor<?x48xf32>, tensor<64x48xf32> -> tensor<?x64xf32>
  %y = xf.add %x, %d : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Up first, gate second: not the gated layout, so the product stays a loop op.
// CHECK-LABEL: func.func @swiglu_swapped_halves
func.func @swiglu_swapped_halves(%x: tensor<?x64xf32>, %wgu: tensor<96x64xf32>) -> tensor<?x48xf32> {
  // CHECK: xf.gemm %{{.*}}, %{{.*}} activation none transpose_weight
  // CHECK: xf.silu
  // CHECK: xf.mul
  %gu = xf.linear %x, %wgu transpose_weight : tensor<?x64xf32>, tensor<96x64xf32> -> tensor<?x96xf32>
  %u = xf.slice %gu axis 1 offset 0 : tensor<?x96xf32> -> tensor<?x48xf32>
  %g = xf.slice %gu axis 1 offset 48 : tensor<?x96xf32> -> tensor<?x48xf32>
  %s = xf.silu %g : tensor<?x48xf32>
  %p = xf.mul %s, %u : tensor<?x48xf32>
  return %p : tensor<?x48xf32>
}
