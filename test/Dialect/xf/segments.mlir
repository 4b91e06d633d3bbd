// RUN: xf-opt %s | xf-opt | FileCheck %s
// A packed batch's `segments` (docs/dialect.md "Packed batches") round-trip
// on every op that sees a sequence whole; the invalid uses are in
// segments-invalid.mlir.

// CHECK-LABEL: func.func @packed
func.func @packed(%x: tensor<?xi32>, %n: tensor<?xi64>, %nz: tensor<?xi64>, %z: tensor<?x16xf32>,
                  %wpe: tensor<32x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x16xf32> {
  // CHECK: xf.pos_embed %{{.*}} for %{{.*}} segments %{{.*}} : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %p = xf.pos_embed %wpe for %x segments %n : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  // CHECK: xf.sinusoidal_embed for %{{.*}} segments %{{.*}} base 1.000000e+04
  %s = xf.sinusoidal_embed for %x segments %n base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
  // CHECK: xf.rope halves heads 2 %{{.*}} segments %{{.*}} base 1.000000e+04
  %r = xf.rope halves heads 2 %p segments %n base 1.0e4 : tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: xf.attention causal heads 2 rope adjacent base 1.000000e+04 %{{.*}}, %{{.*}}, %{{.*}} segments %{{.*}} :
  %a = xf.attention causal heads 2 rope adjacent base 1.0e4 %r, %s, %s segments %n : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: xf.attention cross heads 2 %{{.*}}, %{{.*}}, %{{.*}} segments %{{.*}} key_segments %{{.*}} :
  %c = xf.attention cross heads 2 %a, %z, %z segments %n key_segments %nz : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: xf.mha cross heads 2 %{{.*}} context %{{.*}} q %{{.*}} k %{{.*}} v %{{.*}} o %{{.*}} segments %{{.*}} key_segments %{{.*}} :
  %m = xf.mha cross heads 2 %c context %z q %w k %w v %w o %w segments %n key_segments %nz : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x16xf32>
  // CHECK: xf.mha causal heads 2 %{{.*}} q %{{.*}} k %{{.*}} v %{{.*}} o %{{.*}} segments %{{.*}} :
  %y = xf.mha causal heads 2 %m q %w k %w v %w o %w segments %n : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<?xi64>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
