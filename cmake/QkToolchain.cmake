# The shader toolchain qkgen links: with -DQKGEN_TOOLCHAIN=<prefix> that of
# scripts/toolchain.sh (glslang 15, SPIRV-Tools 2025.1); with 'system'
# Debian 12's glslang 12 and SPIRV-Tools 2023.1; unset (nor $QKGEN_TOOLCHAIN),
# the one the set-up cached for this recipe of scripts/toolchain.sh in
# QKGEN_TOOLCHAIN_CACHE, else Debian's with a warning of what it drops. Sets
# QK_COMPILER_LIBS, QK_COMPILER_INCLUDE (empty for Debian's), QK_COMPILER_BIN
# (its tools' folder, empty for PATH's) and QK_PROBES_INCLUDE (the folder of
# the generated qk_probes.h), and reports which toolchain it took and which of
# gen/compile/probes' GLSL extensions it compiles.
set(QKGEN_TOOLCHAIN "" CACHE STRING
    "prefix built by scripts/toolchain.sh; 'system': Debian's glslang and SPIRV-Tools; empty: the set-up's cached one, else Debian's")
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(qk_user_cache "$ENV{XDG_CACHE_HOME}/qkgen")
else()
  set(qk_user_cache "$ENV{HOME}/.cache/qkgen")
endif()
set(QKGEN_TOOLCHAIN_CACHE "/var/cache/qkgen;${qk_user_cache}" CACHE STRING
    "folders where scripts/toolchain.sh caches its toolchain (searched when QKGEN_TOOLCHAIN is empty)")

set(QK_TOOLCHAIN_PREFIX "${QKGEN_TOOLCHAIN}")
if(QK_TOOLCHAIN_PREFIX STREQUAL "" AND NOT "$ENV{QKGEN_TOOLCHAIN}" STREQUAL "")
  set(QK_TOOLCHAIN_PREFIX "$ENV{QKGEN_TOOLCHAIN}") # as scripts/setup.sh reads it
  set(QK_TOOLCHAIN_WHY "chosen by $QKGEN_TOOLCHAIN=${QK_TOOLCHAIN_PREFIX}")
elseif(NOT QK_TOOLCHAIN_PREFIX STREQUAL "")
  set(QK_TOOLCHAIN_WHY "chosen by -DQKGEN_TOOLCHAIN=${QK_TOOLCHAIN_PREFIX}")
endif()
if(QK_TOOLCHAIN_PREFIX STREQUAL "")
  # The stamp scripts/toolchain.sh writes for its pinned versions and recipe:
  # a cached prefix of another stamp is another toolchain, not this one.
  file(STRINGS ${CMAKE_SOURCE_DIR}/scripts/toolchain.sh qk_pins
       REGEX "^(glslang_v|tools_v|headers_v|recipe)=")
  foreach(pin ${qk_pins})
    string(REGEX REPLACE "^([a-z_]+)=(.*)$" "\\1" key "${pin}")
    string(REGEX REPLACE "^([a-z_]+)=(.*)$" "\\2" qk_pin_${key} "${pin}")
  endforeach()
  set(qk_want "glslang ${qk_pin_glslang_v}; spirv-tools ${qk_pin_tools_v}; spirv-headers ${qk_pin_headers_v}; recipe ${qk_pin_recipe}")
  set(qk_stale)
  foreach(dir ${QKGEN_TOOLCHAIN_CACHE})
    file(GLOB stamps "${dir}/*/qkgen-toolchain.stamp")
    foreach(stamp ${stamps})
      file(READ "${stamp}" got)
      string(STRIP "${got}" got)
      get_filename_component(prefix "${stamp}" DIRECTORY)
      if(got STREQUAL qk_want AND QK_TOOLCHAIN_PREFIX STREQUAL "")
        set(QK_TOOLCHAIN_PREFIX "${prefix}")
        set(QK_TOOLCHAIN_WHY "found in the set-up's cache (-DQKGEN_TOOLCHAIN=system for Debian's)")
      elseif(NOT got STREQUAL qk_want)
        list(APPEND qk_stale "${prefix}")
      endif()
    endforeach()
  endforeach()
  if(QK_TOOLCHAIN_PREFIX STREQUAL "")
    set(QK_TOOLCHAIN_PREFIX system)
    string(REPLACE ";" ", " qk_where "${QKGEN_TOOLCHAIN_CACHE}")
    set(qk_msg "qkgen: no shader toolchain of scripts/toolchain.sh in ${qk_where}")
    if(qk_stale)
      string(REPLACE ";" ", " qk_stale "${qk_stale}")
      string(APPEND qk_msg " (of another version: ${qk_stale})")
    endif()
    message(WARNING "${qk_msg}: configuring with Debian's glslang 12, which drops the "
                    "variants that need newer GLSL extensions (qkgen list --dropped). Run "
                    "scripts/toolchain.sh (or scripts/setup.sh) first, or pass "
                    "-DQKGEN_TOOLCHAIN=system to choose Debian's.")
    set(QK_TOOLCHAIN_WHY "none cached (see the warning above)")
  endif()
endif()

if(NOT QK_TOOLCHAIN_PREFIX STREQUAL "system")
  if(NOT EXISTS "${QK_TOOLCHAIN_PREFIX}/qkgen-toolchain.stamp")
    message(FATAL_ERROR "QKGEN_TOOLCHAIN=${QK_TOOLCHAIN_PREFIX}: no qkgen-toolchain.stamp there; "
                        "build it with scripts/toolchain.sh, or pass 'system' for Debian's")
  endif()
  file(READ "${QK_TOOLCHAIN_PREFIX}/qkgen-toolchain.stamp" QK_TOOLCHAIN_NAME)
  string(STRIP "${QK_TOOLCHAIN_NAME}" QK_TOOLCHAIN_NAME)
  set(QK_TOOLCHAIN_NAME "${QK_TOOLCHAIN_PREFIX} (${QK_TOOLCHAIN_NAME})")
  set(QK_FIND_IN PATHS "${QK_TOOLCHAIN_PREFIX}/lib" NO_DEFAULT_PATH)
  set(QK_COMPILER_INCLUDE "${QK_TOOLCHAIN_PREFIX}/include")
  set(QK_COMPILER_BIN "${QK_TOOLCHAIN_PREFIX}/bin")
else()
  set(QK_TOOLCHAIN_NAME "Debian's glslang and SPIRV-Tools")
  set(QK_FIND_IN)
  set(QK_COMPILER_INCLUDE)
  set(QK_COMPILER_BIN)
endif()

# find_library caches its answers: forget them when the toolchain changes in
# an existing build folder.
if(NOT "${QK_TOOLCHAIN_PREFIX}" STREQUAL "${QK_TOOLCHAIN_FOUND_FOR}")
  foreach(lib glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler SPIRV
              glslang-default-resource-limits SPIRV-Tools-opt SPIRV-Tools)
    unset(QK_LIB_${lib} CACHE)
  endforeach()
  set(QK_TOOLCHAIN_FOUND_FOR "${QK_TOOLCHAIN_PREFIX}" CACHE INTERNAL "")
endif()

# Static archives, so the binaries carry their compiler with them, in link
# order. glslang 15 compiles into one libglslang; the other glslang archives
# of glslang 12 are empty stubs there or gone, hence optional.
set(QK_COMPILER_LIBS)
foreach(lib glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler SPIRV
            glslang-default-resource-limits SPIRV-Tools-opt SPIRV-Tools)
  find_library(QK_LIB_${lib} NAMES lib${lib}.a ${lib} ${QK_FIND_IN})
  if(QK_LIB_${lib})
    list(APPEND QK_COMPILER_LIBS ${QK_LIB_${lib}})
  elseif(lib MATCHES "^(glslang|glslang-default-resource-limits|SPIRV-Tools-opt|SPIRV-Tools)$")
    message(FATAL_ERROR "lib${lib}.a not found in ${QK_TOOLCHAIN_NAME} "
                        "(Debian: glslang-dev, spirv-tools)")
  endif()
endforeach()

# The probes as C strings for gen/compile/features.c, and compiled here with
# the toolchain's own tools to report what it can do.
find_program(QK_GLSLANG_BIN NAMES glslang glslangValidator HINTS ${QK_COMPILER_BIN} NO_CACHE)
find_program(QK_SPIRV_VAL_BIN NAMES spirv-val HINTS ${QK_COMPILER_BIN} NO_CACHE)
set(QK_PROBES_INCLUDE ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${QK_PROBES_INCLUDE})
file(GLOB QK_PROBES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/gen/compile/probes/*.comp)
set(QK_PROBE_TABLE "/* generated by cmake/QkToolchain.cmake from gen/compile/probes */\n")
set(QK_HAS)
set(QK_HAS_NOT)
foreach(f ${QK_PROBES})
  get_filename_component(ext ${f} NAME_WE)
  file(READ ${f} src)
  # the target gen/compile/compile.c gives a module: Vulkan 1.3 (SPIR-V 1.6)
  # where it enables GL_NV_cooperative_matrix2, else 1.2
  set(env vulkan1.2)
  if(src MATCHES "#extension GL_NV_cooperative_matrix2 ")
    set(env vulkan1.3)
  endif()
  string(REPLACE "\\" "\\\\" src "${src}")
  string(REPLACE "\"" "\\\"" src "${src}")
  string(REPLACE "\n" "\\n\"\n    \"" src "${src}")
  string(APPEND QK_PROBE_TABLE "{\"${ext}\",\n    \"${src}\"},\n")
  set(rc 1)
  if(QK_GLSLANG_BIN AND QK_SPIRV_VAL_BIN)
    set(spv ${CMAKE_BINARY_DIR}/generated/${ext}.spv)
    execute_process(COMMAND ${QK_GLSLANG_BIN} --target-env ${env} -V ${f} -o ${spv}
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      execute_process(COMMAND ${QK_SPIRV_VAL_BIN} --target-env ${env} ${spv}
                      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    endif()
  endif()
  if(rc EQUAL 0)
    list(APPEND QK_HAS ${ext})
  else()
    list(APPEND QK_HAS_NOT ${ext})
  endif()
endforeach()
file(CONFIGURE OUTPUT ${QK_PROBES_INCLUDE}/qk_probes.h CONTENT "${QK_PROBE_TABLE}" @ONLY)
string(REPLACE ";" " " QK_HAS_TEXT "${QK_HAS}")
string(REPLACE ";" " " QK_HAS_NOT_TEXT "${QK_HAS_NOT}")
if(NOT QK_GLSLANG_BIN OR NOT QK_SPIRV_VAL_BIN)
  set(QK_HAS_NOT_TEXT "${QK_HAS_NOT_TEXT} (unknown: no glslang or spirv-val program to probe with)")
endif()
message(STATUS "qkgen shader toolchain: ${QK_TOOLCHAIN_NAME}, ${QK_TOOLCHAIN_WHY}")
message(STATUS "qkgen GLSL extensions: ${QK_HAS_TEXT}; not: ${QK_HAS_NOT_TEXT}")
