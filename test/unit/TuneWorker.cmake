# Protocol test of the tuner's measurement worker (tools/xf-tune-worker):
# runs it on small GEMM and attention batches and malformed requests.
# Included from test/unit/CMakeLists.txt.
if(TARGET xf-tune-worker)
  add_test(NAME xf-tune-worker-protocol
           COMMAND ${Python3_EXECUTABLE} ${XF_SOURCE_DIR}/test/tuning/worker_test.py
                   $<TARGET_FILE:xf-tune-worker>)
  set_tests_properties(xf-tune-worker-protocol PROPERTIES TIMEOUT 600 LABELS tuning)
endif()
