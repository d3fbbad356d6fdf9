# Installs the already-built tree into a scratch prefix under the build folder, then configures,
# builds and runs tests/find_package_project against it the way a user would: nothing but
# find_package(tandem) and CMAKE_PREFIX_PATH. Run by ctest as
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DBUILD_TYPE=... -DCXX_COMPILER=... -DGENERATOR=... -DSANITIZER_FLAGS=... -P this file
# `cmake --install` only copies what the build made, so the library is not rebuilt.
foreach(var BUILD_DIR SOURCE_DIR BUILD_TYPE CXX_COMPILER GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "find_package_test.cmake: -D${var}=... is required")
  endif()
endforeach()

set(work ${BUILD_DIR}/find_package_test)
set(prefix ${work}/prefix)
set(user_build ${work}/build)
file(REMOVE_RECURSE ${work})  # a stale prefix or cache would hide a missing file

function(run step)
  message(STATUS "${step}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc})")
  endif()
endfunction()

run(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# SANITIZER_FLAGS: a sanitized libtandem needs its sanitizer's runtime linked into the program
# (ASan insists on coming first in the library list), so the program is built as the library was.
run(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/find_package_project -B ${user_build} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
    "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
run(build ${CMAKE_COMMAND} --build ${user_build})
# The program finds libtandem through the RUNPATH CMake gives it, with no LD_LIBRARY_PATH.
run(train ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${user_build}/tandem_user)
