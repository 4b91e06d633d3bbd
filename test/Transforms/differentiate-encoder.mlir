// RUN: xf-opt %s --xf-differentiate | FileCheck %s

// An encoder with a head (Alg. 9, as examples/bert-mlm.xf): bidirectional
// attention makes Alg. 12's masked tokens the default objective, and the
// token-type row w_t0 = W_t[0] sends its gradient back into row 0 of W_t.
module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %wt = xf.parameter "wtt" : tensor<2x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %t0 = xf.row %wt[1] : tensor<2x8xf32> -> tensor<8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %h = xf.add %e, %t0 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
    %q = xf.linear %h, %w : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %y = xf.attention bidirectional heads 2 %q, %h, %h : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %g = xf.gelu erf %y : tensor<?x8xf32>
    %logits = xf.unembed %g, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// CHECK-LABEL: func.func @loss_and_gradients
// CHECK-SAME: xf.gradients = ["wte", "wtt", "w"]
// CHECK-SAME: xf.objective = "masked-token"
// CHECK: %[[LOSS:.*]] = xf.cross_entropy
// CHECK: xf.attention_grad bidirectional heads 2
// CHECK: %[[DT0:.*]] = xf.row_sum %{{.*}} : tensor<?x8xf32> -> tensor<8xf32>
// CHECK: %[[DWT:.*]] = xf.row_grad %[[DT0]] row 1 : tensor<8xf32> -> tensor<2x8xf32>
// CHECK: return %[[LOSS]], %{{.*}}, %[[DWT]], %{{.*}} :
