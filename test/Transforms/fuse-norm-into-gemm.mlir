// RUN: xf-opt %s --xf-fuse-norm-into-gemm | FileCheck %s
// RUN: xf-opt %s --xf-fuse-norm-into-gemm | xf-opt | FileCheck %s

// GPT-2's attention input: LN1 read only by the QKV GEMM becomes its prologue; the residual
// stream x stays the output projection's residual.
// CHECK-LABEL: func.func @layer_norm_qkv
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<64x192xf32>, %[[BW:.*]]: tensor<192xf32>)
func.func @layer_norm_qkv(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                          %w: tensor<64x192xf32>, %bw: tensor<192xf32>) -> tensor<?x192xf32> {
  // CHECK-NOT: xf.layer_norm
  // CHECK: %[[Y:.*]] = xf.gemm %[[X]] norm layer_norm eps 1.000000e-05 gamma %[[G]] beta %[[B]], %[[W]] bias %[[BW]] activation none : (tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x192xf32>
  // CHECK-NEXT: return %[[Y]]
  %n = xf.layer_norm %x gamma %g beta %b eps 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %y = xf.gemm %n, %w bias %bw activation none : (tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x192xf32>
  return %y : tensor<?x192xf32>
}

// Llama: RMSNorm into the SwiGLU GEMM (γ, no β), and into the tied unembedding ([N, K]).
// CHECK-LABEL: func.func @rms_norm
func.func @rms_norm(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x256xf32>,
                    %e: tensor<100x64xf32>) -> (tensor<?x128xf32>, tensor<?x100xf32>) {
  // CHECK-NOT: xf.rms_norm
  // CHECK: xf.gemm %{{.*}} norm rms_norm eps {{.*}} gamma %{{.*}}, %{{.*}} activation swiglu : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<?x128xf32>
  // CHECK: xf.gemm %{{.*}} norm rms_norm eps {{.*}}, %{{.*}} activation none transpose_weight :
  %n = xf.rms_norm %x gamma %g eps 1.0e-06 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %y = xf.gemm %n, %w activation swiglu : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x128xf32>
  %m = xf.rms_norm %x eps 1.0e-06 : tensor<?x64xf32> -> tensor<?x64xf32>
  %z = xf.gemm %m, %e activation none transpose_weight : (tensor<?x64xf32>, tensor<100x64xf32>) -> tensor<?x100xf32>
  return %y, %z : tensor<?x128xf32>, tensor<?x100xf32>
}

// A norm read by anything else stays: the kernel would recompute it, and its result is needed.
// CHECK-LABEL: func.func @norm_with_other_uses
func.func @norm_with_other_uses(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>,
                                %v: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: %[[N:.*]] = xf.layer_norm
  // CHECK: xf.gemm %[[N]], %{{.*}} activation none :
  // CHECK: xf.gemm %[[N]], %{{.*}} activation none :
  %n = xf.layer_norm %x eps 1.0e-05 : tensor<?x64xf32> -> tensor<?x64xf32>
  %y = xf.gemm %n, %w activation none : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %z = xf.gemm %n, %v activation none : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y, %z : tensor<?x64xf32>, tensor<?x64xf32>
}

// Without γ and β (seed 000's LayerNorm): a plain prologue.
// CHECK-LABEL: func.func @bare_layer_norm
func.func @bare_layer_norm(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  // CHECK: xf.gemm %{{.*}} norm layer_norm eps 1.000000e-05, %{{.*}} activation none :
  %n = xf.layer_norm %x eps 1.0e-05 : tensor<?x64xf32> -> tensor<?x64xf32>
  %y = xf.gemm %n, %w activation none : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
