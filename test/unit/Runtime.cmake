# libxfrt tests (included from test/unit/CMakeLists.txt): GoogleTest unit tests, an end-to-end
# test of main() through fake model objects, and a bounded libFuzzer run.
if(NOT TARGET xfRuntime)
  return()
endif()
set(XF_RUNTIME_TEST_INPUTS ${XF_SOURCE_DIR}/test/Runtime/Inputs)

xf_add_unit_test(xf-runtime-test
  SOURCES RuntimeJsonTest.cpp RuntimeSafetensorsTest.cpp RuntimeNpyRandomTest.cpp
          RuntimeCliTest.cpp RuntimeDriverTest.cpp RuntimeSamplingTest.cpp RuntimeServeTest.cpp
          RuntimeTrainingDataTest.cpp RuntimeManifestTest.cpp RuntimeMachinePeakTest.cpp
          RuntimeWeightRegionTest.cpp RuntimeSessionWeightsTest.cpp RuntimeThreadPoolTest.cpp
          RuntimePackedStepTest.cpp RuntimeProfileTest.cpp RuntimeMlirGemmLaunchTest.cpp
  LIBS xfRuntime)
target_include_directories(xf-runtime-test PRIVATE ${XF_RUNTIME_TEST_INPUTS}
                           ${XF_SOURCE_DIR}/runtime/lib)

# Fake generated objects linked with libxfrt_main, exactly as xfc links a model.
foreach(variant decoder seq2seq cached seq2seq-logits)
  add_executable(xf-fake-${variant} ${XF_RUNTIME_TEST_INPUTS}/FakeModel.cpp)
  target_link_libraries(xf-fake-${variant} PRIVATE xfRuntimeMain xfRuntime)
  set_target_properties(xf-fake-${variant} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endforeach()
target_compile_definitions(xf-fake-seq2seq PRIVATE FAKE_SEQ2SEQ)
target_compile_definitions(xf-fake-cached PRIVATE FAKE_CACHED)
target_compile_definitions(xf-fake-seq2seq-logits PRIVATE FAKE_SEQ2SEQ_LOGITS)

add_test(NAME runtime-e2e
         COMMAND ${Python3_EXECUTABLE} ${XF_SOURCE_DIR}/test/Runtime/runtime_e2e.py
                 $<TARGET_FILE:xf-fake-decoder> $<TARGET_FILE:xf-fake-seq2seq>
                 ${XF_SOURCE_DIR}/test/reference
                 $<TARGET_FILE:xf-fake-cached> $<TARGET_FILE:xf-fake-seq2seq-logits>)
set_tests_properties(runtime-e2e PROPERTIES TIMEOUT 300)
# Hostile and careless use (issue 18): non-file outputs, FIFOs, outputs that are inputs,
# failed writes, Halide errors, a checkpoint truncated while mapped, bounded traces.
add_test(NAME runtime-hostile
         COMMAND ${Python3_EXECUTABLE} ${XF_SOURCE_DIR}/test/Runtime/hostile_e2e.py
                 $<TARGET_FILE:xf-fake-decoder> $<TARGET_FILE:xf-fake-cached>
                 ${XF_SOURCE_DIR}/test/reference)
set_tests_properties(runtime-hostile PROPERTIES TIMEOUT 300)

add_subdirectory(${XF_SOURCE_DIR}/test/fuzz/runtime ${CMAKE_CURRENT_BINARY_DIR}/runtime-fuzz)

# --serve's HTTP parser and access checks (libxfrt_serve.so's sources), and their fuzzer.
get_property(serve_sources GLOBAL PROPERTY XF_SERVE_SOURCES)
xf_add_unit_test(xf-http-test SOURCES RuntimeHttpTest.cpp ${serve_sources} LIBS xfRuntime)
add_subdirectory(${XF_SOURCE_DIR}/test/fuzz/http ${CMAKE_CURRENT_BINARY_DIR}/http-fuzz)

# The optimizer (issue 15) against the float64 oracle, through a small .npy tool.
add_executable(xf-optimizer-steps ${XF_RUNTIME_TEST_INPUTS}/OptimizerSteps.cpp)
target_link_libraries(xf-optimizer-steps PRIVATE xfRuntime)
set_target_properties(xf-optimizer-steps PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
add_test(NAME runtime-optimizer
         COMMAND ${Python3_EXECUTABLE} ${XF_SOURCE_DIR}/test/Runtime/optimizer_e2e.py
                 $<TARGET_FILE:xf-optimizer-steps> ${XF_SOURCE_DIR}/test/reference)

# --serve's per-request limits, KV budget and KV slots' memory (runtime/lib/KvCacheSlots.cpp).
xf_add_unit_test(xf-serve-limits-test
  SOURCES RuntimeServeLimitsTest.cpp
  LIBS xfRuntime)
target_include_directories(xf-serve-limits-test PRIVATE ${XF_RUNTIME_TEST_INPUTS})

# One decode step of attention (runtime/lib/DecodeAttention.cpp), every ISA of this CPU.
xf_add_unit_test(xf-decode-attention-test
  SOURCES RuntimeDecodeAttentionTest.cpp
  LIBS xfRuntime)

# bf16 GEMMs on AMX tiles (runtime/lib/AmxBf16Gemm.cpp): emulated tiles bitwise against the
# SDM's tdpbf16ps and within the bf16 bound of float64; the instructions where AMX is usable.
xf_add_unit_test(xf-amx-bf16-gemm-test
  SOURCES RuntimeAmxBf16GemmTest.cpp
  LIBS xfRuntime)
