# Unit tests of the Halide kernel generators (compiler/lib/Conversion/HalideKernels).
# Included from test/unit/CMakeLists.txt.
if(TARGET xfHalideKernels)
  xf_add_unit_test(xf-halide-kernels-test
    SOURCES HalideKernelsGemmTest.cpp HalideKernelsAttentionTest.cpp HalideKernelsApiTest.cpp
    LIBS xfHalideKernels)
endif()
