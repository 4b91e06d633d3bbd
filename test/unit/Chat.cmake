# Chat templates (included from test/unit/CMakeLists.txt after Gguf.cmake, whose
# XF_SMOLLM2_GGUF and XF_GGUF_PYTHON it uses): GoogleTest unit tests of recognition, rendering
# and the --interactive loop, and the renderings and ids against Jinja and transformers.
if(NOT TARGET xfRuntime)
  return()
endif()

xf_add_unit_test(xf-chat-template-test
  SOURCES RuntimeChatTemplateTest.cpp RuntimeChatTest.cpp
  LIBS xfRuntime)

set(chat_tests ${XF_SOURCE_DIR}/test/chat)
add_executable(xf-chat-render ${chat_tests}/xf-chat-render.cpp)
target_link_libraries(xf-chat-render PRIVATE xfRuntime)

# Exit 77 = skipped (no jinja2 in XF_GGUF_PYTHON); the SmolLM2 part needs the file and
# transformers, the other templates only jinja2.
add_test(NAME runtime-chat-templates-hf
         COMMAND ${XF_GGUF_PYTHON} ${chat_tests}/check_chat_templates.py
                 $<TARGET_FILE:xf-chat-render> "${XF_SMOLLM2_GGUF}")
set_tests_properties(runtime-chat-templates-hf PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
