// RUN: xf-opt %s --xf-differentiate | FileCheck %s
// RUN: xf-opt %s --xf-differentiate --xf-fuse-gemm-epilogue | FileCheck %s --check-prefix=FUSED

// A one-layer decoder with every rule of GPT-2: embeddings, LayerNorm, a
// fused QKV weight read through parameter slices, causal attention, GELU MLP,
// residuals and a tied unembedding.
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %wp = xf.parameter "wpe" : tensor<16x8xf32>
    %g = xf.parameter "ln.g" : tensor<8xf32>
    %b = xf.parameter "ln.b" : tensor<8xf32>
    %wqkv = xf.parameter "qkv" : tensor<8x24xf32>
    %w1 = xf.parameter "fc" : tensor<8x16xf32>
    %b1 = xf.parameter "fc.b" : tensor<16xf32>
    %w2 = xf.parameter "proj" : tensor<8x16xf32>
    %wq = xf.slice %wqkv axis 1 offset 0 : tensor<8x24xf32> -> tensor<8x8xf32>
    %wk = xf.slice %wqkv axis 1 offset 8 : tensor<8x24xf32> -> tensor<8x8xf32>
    %wv = xf.slice %wqkv axis 1 offset 16 : tensor<8x24xf32> -> tensor<8x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %p = xf.pos_embed %wp for %x : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %h = xf.add %e, %p : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %a = xf.layer_norm %h gamma %g beta %b eps 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xf32>
    %q = xf.linear %a, %wq : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %k = xf.linear %a, %wk : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %v = xf.linear %a, %wv : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %y = xf.attention causal heads 2 %q, %k, %v : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %h1 = xf.add %h, %y : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %u = xf.linear %h1, %w1, %b1 : tensor<?x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %gu = xf.gelu tanh %u : tensor<?x16xf32>
    %m = xf.linear %gu, %w2 transpose_weight : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
    %h2 = xf.add %h1, %m : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %logits = xf.unembed %h2, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// @forward is left as it was.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: _grad
// CHECK: return

// CHECK-LABEL: func.func @loss_and_gradients
// CHECK-SAME: (%[[X:.*]]: tensor<?xi32>, %[[T:.*]]: tensor<?xi32>) -> (tensor<f32>, tensor<32x8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x24xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>)
// CHECK-SAME: xf.gradients = ["wte", "wpe", "ln.g", "ln.b", "qkv", "fc", "fc.b", "proj"]
// CHECK-SAME: xf.objective = "next-token"
// CHECK: %[[WE:.*]] = xf.parameter "wte"
// CHECK: xf.gelu
// CHECK: %[[H2:.*]] = xf.add
// CHECK: %[[LOGITS:.*]] = xf.unembed %[[H2]], tied %[[WE]]
// CHECK: %[[LOSS:.*]] = xf.cross_entropy %[[LOGITS]], %[[T]]
// CHECK: %[[DL:.*]] = xf.cross_entropy_grad %[[LOGITS]], %[[T]]
// Tied unembedding: dX = dlogits·W_e, dW_e = dlogitsᵀ·X.
// CHECK: %[[DH2:.*]] = xf.matmul %[[DL]], %[[WE]] : tensor<?x32xf32>, tensor<32x8xf32> -> tensor<?x8xf32>
// CHECK: %[[DWE_UN:.*]] = xf.weight_grad %[[H2]], %[[DL]] transpose_result : tensor<?x8xf32>, tensor<?x32xf32> -> tensor<32x8xf32>
// nn.Linear layout (transpose_weight): dx = dy·W, dW = dyᵀ·x.
// CHECK: %[[DGU:.*]] = xf.matmul %[[DH2]], %{{.*}} : tensor<?x8xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
// CHECK: %[[DPROJ:.*]] = xf.weight_grad %{{.*}}, %[[DH2]] transpose_result : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<8x16xf32>
// CHECK: %[[DU:.*]] = xf.gelu_grad tanh %{{.*}}, %[[DGU]]
// CHECK: %[[DB1:.*]] = xf.row_sum %[[DU]] : tensor<?x16xf32> -> tensor<16xf32>
// CHECK: %[[DH1P:.*]] = xf.matmul %[[DU]], %{{.*}} transpose_rhs : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
// The residual stream sums its two uses.
// CHECK: %[[DH1:.*]] = xf.add %[[DH2]], %[[DH1P]]
// CHECK: %[[DFC:.*]] = xf.weight_grad %{{.*}}, %[[DU]] : tensor<?x8xf32>, tensor<?x16xf32> -> tensor<8x16xf32>
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = xf.attention_grad causal heads 2 %{{.*}}, %{{.*}}, %{{.*}}, %[[DH1]]
// CHECK: xf.layer_norm_grad %{{.*}}, %{{.*}} gamma %{{.*}} eps 1.000000e-05
// CHECK: xf.layer_norm_gamma_grad
// CHECK: %[[DPE:.*]] = xf.pos_embed_grad %{{.*}} : tensor<?x8xf32> -> tensor<16x8xf32>
// CHECK: %[[DTE:.*]] = xf.token_embed_grad %[[X]], %{{.*}} : tensor<?xi32>, tensor<?x8xf32> -> tensor<32x8xf32>
// The tied table: unembedding and embedding gradients summed.
// CHECK: %[[DWE:.*]] = xf.add %[[DWE_UN]], %[[DTE]] : tensor<32x8xf32>, tensor<32x8xf32> -> tensor<32x8xf32>
// The slices of one fused weight send their gradients back into it, summed.
// CHECK-DAG: xf.slice_grad %{{.*}} axis 1 offset 16 : tensor<8x8xf32> -> tensor<8x24xf32>
// CHECK-DAG: xf.slice_grad %{{.*}} axis 1 offset 8 : tensor<8x8xf32> -> tensor<8x24xf32>
// CHECK-DAG: xf.slice_grad %{{.*}} axis 1 offset 0 : tensor<8x8xf32> -> tensor<8x24xf32>
// CHECK: %[[DQKV:.*]] = xf.add %{{.*}}, %{{.*}} : tensor<8x24xf32>, tensor<8x24xf32> -> tensor<8x24xf32>
// CHECK: return %[[LOSS]], %[[DWE]], %[[DPE]], %{{.*}}, %{{.*}}, %[[DQKV]], %[[DFC]], %[[DB1]], %[[DPROJ]] :

// The products by weights become GEMMs with the transpose in the weight's layout.
// FUSED-LABEL: func.func @loss_and_gradients
// FUSED: xf.gemm %{{.*}}, %{{.*}} activation none : (tensor<?x32xf32>, tensor<32x8xf32>) -> tensor<?x8xf32>
// FUSED: xf.gemm %{{.*}}, %{{.*}} activation none : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
// A gradient sum folds into the GEMM epilogue as its residual.
// FUSED: xf.gemm %{{.*}}, %{{.*}} residual %{{.*}} activation none transpose_weight : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// FUSED-NOT: xf.matmul
