// xf-assign-weight-storage's options: each bad one (or combination) is an error naming it.
// RUN: not xf-opt %s --xf-assign-weight-storage=weight-type=f16 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not xf-opt %s "--xf-assign-weight-storage=weight-type=bf16 block-parameters=w=q8_0" 2>&1 | FileCheck %s --check-prefix=EXCLUSIVE
// RUN: not xf-opt %s --xf-assign-weight-storage=block-parameters=w=q5_0 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not xf-opt %s --xf-assign-weight-storage=block-parameters=w 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not xf-opt %s --xf-assign-weight-storage=bf16-gemm-inputs 2>&1 | FileCheck %s --check-prefix=INPUTS

// TYPE: error: xf-assign-weight-storage: weight-type 'f16': expected f32 or bf16
// EXCLUSIVE: error: xf-assign-weight-storage: weight-type=bf16 and block-parameters are exclusive (xfc --weight-type=bf16 and --quantized-like)
// ENTRY: error: xf-assign-weight-storage: block-parameters entry 'w=q5_0': expected NAME=q8_0, q4_0 or q4_1
// NAME: error: xf-assign-weight-storage: block-parameters entry 'w': expected NAME=q8_0, q4_0 or q4_1
// INPUTS: error: xf-assign-weight-storage: bf16-gemm-inputs needs weight-type=bf16 (xfc --bf16-gemm-inputs needs --weight-type=bf16)

func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = xf.parameter "w" : tensor<32x64xf32>
  %a = xf.gemm %x, %w activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}
