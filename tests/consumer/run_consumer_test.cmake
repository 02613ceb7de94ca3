# Installs the padless build tree into WORK_DIR/install, then configures, builds and runs the
# consumer project against it with only find_package(padless).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${PADLESS_BUILD_DIR} --prefix ${WORK_DIR}/install
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
list(PREPEND prefix_path ${WORK_DIR}/install)
set(cuda_arg "")
if(CMAKE_CUDA_COMPILER)
  set(cuda_arg -DCMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
  -G ${CMAKE_GENERATOR} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix_path}" ${cuda_arg}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed (${rc})")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer failed (${rc})")
endif()
