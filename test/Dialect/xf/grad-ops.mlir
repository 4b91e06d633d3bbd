// RUN: xf-opt %s | FileCheck %s
// RUN: xf-opt %s --mlir-print-op-generic | xf-opt | FileCheck %s

// The loss and backward ops of XfGradOps.td round-trip through their assembly.

// CHECK-LABEL: func.func @grad_ops
func.func @grad_ops(%x: tensor<?x16xf32>, %dy: tensor<?x16xf32>, %t: tensor<?xi32>,
                    %logits: tensor<?x64xf32>, %g: tensor<16xf32>, %q: tensor<?x48xf32>)
    -> (tensor<f32>, tensor<?x64xf32>, tensor<16x16xf32>, tensor<64x16xf32>, tensor<16xf32>,
        tensor<?x16xf32>, tensor<16xf32>, tensor<?x16xf32>, tensor<?x16xf32>,
        tensor<64x16xf32>, tensor<32x16xf32>, tensor<?x48xf32>) {
  // CHECK: xf.cross_entropy %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?xi32> -> tensor<f32>
  %loss = xf.cross_entropy %logits, %t : tensor<?x64xf32>, tensor<?xi32> -> tensor<f32>
  // CHECK: xf.cross_entropy_grad %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %dl = xf.cross_entropy_grad %logits, %t : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: xf.weight_grad %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16x16xf32>
  %dw = xf.weight_grad %x, %dy : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16x16xf32>
  // CHECK: xf.weight_grad %{{.*}}, %{{.*}} transpose_result : tensor<?x16xf32>, tensor<?x64xf32> -> tensor<64x16xf32>
  %de = xf.weight_grad %x, %dl transpose_result : tensor<?x16xf32>, tensor<?x64xf32> -> tensor<64x16xf32>
  // CHECK: xf.row_sum %{{.*}} : tensor<?x16xf32> -> tensor<16xf32>
  %db = xf.row_sum %dy : tensor<?x16xf32> -> tensor<16xf32>
  // CHECK: xf.layer_norm_grad %{{.*}}, %{{.*}} gamma %{{.*}} eps 1.000000e-05 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %dx = xf.layer_norm_grad %x, %dy gamma %g eps 1.0e-5 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  // CHECK: xf.layer_norm_gamma_grad %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16xf32>
  %dg = xf.layer_norm_gamma_grad %x, %dy eps 1.0e-5 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16xf32>
  // CHECK: xf.gelu_grad tanh %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %du = xf.gelu_grad tanh %x, %dy : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: xf.attention_grad causal heads 2 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale 2.500000e-01 :
  %dq, %dk, %dv = xf.attention_grad causal heads 2 %x, %x, %x, %dy scale 0.25 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  // CHECK: xf.token_embed_grad %{{.*}}, %{{.*}} : tensor<?xi32>, tensor<?x16xf32> -> tensor<64x16xf32>
  %dte = xf.token_embed_grad %t, %dy : tensor<?xi32>, tensor<?x16xf32> -> tensor<64x16xf32>
  // CHECK: xf.pos_embed_grad %{{.*}} : tensor<?x16xf32> -> tensor<32x16xf32>
  %dpe = xf.pos_embed_grad %dy : tensor<?x16xf32> -> tensor<32x16xf32>
  // CHECK: xf.slice_grad %{{.*}} axis 1 offset 16 : tensor<?x16xf32> -> tensor<?x48xf32>
  %dqkv = xf.slice_grad %dk axis 1 offset 16 : tensor<?x16xf32> -> tensor<?x48xf32>
  // CHECK: xf.row_grad %{{.*}} row 1 : tensor<16xf32> -> tensor<2x16xf32>
  %drow = xf.row_grad %db row 1 : tensor<16xf32> -> tensor<2x16xf32>
  return %loss, %dl, %dw, %de, %db, %dx, %dg, %du, %dq, %dte, %dpe, %dqkv
      : tensor<f32>, tensor<?x64xf32>, tensor<16x16xf32>, tensor<64x16xf32>, tensor<16xf32>,
        tensor<?x16xf32>, tensor<16xf32>, tensor<?x16xf32>, tensor<?x16xf32>,
        tensor<64x16xf32>, tensor<32x16xf32>, tensor<?x48xf32>
}

// CHECK-LABEL: func.func @norm_and_activation_grads
func.func @norm_and_activation_grads(%x: tensor<?x16xf32>, %dy: tensor<?x16xf32>, %g: tensor<16xf32>)
    -> (tensor<?x16xf32>, tensor<16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: xf.rms_norm_grad %{{.*}}, %{{.*}} gamma %{{.*}} eps 1.000000e-05 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %dx = xf.rms_norm_grad %x, %dy gamma %g eps 1.0e-5 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  // CHECK: xf.rms_norm_gamma_grad %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16xf32>
  %dg = xf.rms_norm_gamma_grad %x, %dy eps 1.0e-5 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<16xf32>
  // CHECK: xf.relu_grad %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %dr = xf.relu_grad %x, %dy : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: xf.silu_grad %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %ds = xf.silu_grad %x, %dy : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %dx, %dg, %dr, %ds : tensor<?x16xf32>, tensor<16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// CHECK-LABEL: func.func @grouped_and_rotary_grads
func.func @grouped_and_rotary_grads(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %dy: tensor<?x16xf32>)
    -> (tensor<?x8xf32>, tensor<?x16xf32>) {
  // CHECK: xf.attention_grad causal heads 4 kv_heads 2 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x16xf32> -> tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %dq, %dk, %dv = xf.attention_grad causal heads 4 kv_heads 2 %q, %k, %k, %dy : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x16xf32> -> tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  // CHECK: xf.rope_grad halves heads 2 %{{.*}} base 1.000000e+04 : tensor<?x16xf32> -> tensor<?x16xf32>
  %dr = xf.rope_grad halves heads 2 %dy base 1.0e4 : tensor<?x16xf32> -> tensor<?x16xf32>
  return %dk, %dr : tensor<?x8xf32>, tensor<?x16xf32>
}
