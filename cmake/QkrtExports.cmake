# libqkrt.so's exports: a linker version script naming exactly the functions
# runtime/qkrt.h declares, so that the runtime's internals (qkrt_json_*,
# qkrt_vk_fail, ...), its benchmark hooks (qkrt_bench.h) and qkcommon stay
# hidden. Run as: cmake -DHEADER="qkrt.h;qkrt_ops.h" -DOUT=qkrt.map -P QkrtExports.cmake
set(text "")
foreach(h IN LISTS HEADER)
  file(READ "${h}" one)
  string(APPEND text "${one}\n")
endforeach()
# comments name functions too (see qkrt_create): drop them first
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" text "${text}")
string(REGEX REPLACE "//[^\n]*" "" text "${text}")
string(REGEX MATCHALL "qkrt_[a-z0-9_]+[ \t\r\n]*\\(" calls "${text}")
set(names)
foreach(c IN LISTS calls)
  string(REGEX REPLACE "[ \t\r\n]*\\($" "" c "${c}")
  list(APPEND names "${c}")
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
list(LENGTH names n)
if(n EQUAL 0)
  message(FATAL_ERROR "${HEADER}: no qkrt_ function declared")
endif()
list(JOIN names ";\n    " body)
file(WRITE "${OUT}.tmp" "/* generated from ${HEADER} by cmake/QkrtExports.cmake */\n{\n  global:\n    ${body};\n  local: *;\n};\n")
# rewritten only when it changes, so that an edit elsewhere in the header does not relink
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
