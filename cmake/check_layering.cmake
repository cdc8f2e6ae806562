# The layering of src/: each folder is a stage of the pipeline (or a layer below or above it)
# and may include only folders of a lower rank, so that the folders never form a cycle and a
# stage can be read without what comes after it. Tests (*_test.*) may reach up: they assemble
# fixtures from higher stages. The README's "Layout" section shows the same table.
#
#   cmake -DSOURCE_DIR=<a src/ folder> -P cmake/check_layering.cmake
#
# Exits non-zero and names every include that goes up or sideways, and every folder the table
# does not place.
set(PTXBENCH_LAYERS
  "common:0"
  "record:1" "screen:1"
  "task:2"
  "compile:3"
  "inspect:4" "compare:4" "measure:4"
  "run:5"
  "child:6"
  "evaluate:7"
  "agent:8" "store:8"
  "report:9"
  "serve:10" "fixit:10"
  "cli:11")

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layering: pass -DSOURCE_DIR=<src folder>")
endif()

get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

foreach(entry IN LISTS PTXBENCH_LAYERS)
  string(REPLACE ":" ";" pair "${entry}")
  list(GET pair 0 folder)
  list(GET pair 1 rank)
  set(rank_of_${folder} ${rank})
endforeach()

set(problems "")
file(GLOB folders LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*")
foreach(folder IN LISTS folders)
  if(NOT IS_DIRECTORY "${SOURCE_DIR}/${folder}")
    continue()
  endif()
  if(NOT DEFINED rank_of_${folder})
    list(APPEND problems "src/${folder} has no place in the layer table (cmake/check_layering.cmake)")
    continue()
  endif()
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cc"
       "${SOURCE_DIR}/${folder}/*.cu" "${SOURCE_DIR}/${folder}/*.cuh")
  foreach(file IN LISTS files)
    if(file MATCHES "_test\\.[a-z]+$")
      continue()
    endif()
    file(STRINGS "${SOURCE_DIR}/${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" target "${line}")
      if(target STREQUAL folder OR NOT DEFINED rank_of_${target})
        continue()
      endif()
      if(NOT rank_of_${target} LESS rank_of_${folder})
        list(APPEND problems
             "src/${file} includes ${target}/ (rank ${rank_of_${target}}), not below ${folder}/ (rank ${rank_of_${folder}})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(LENGTH problems count)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "layering: ${count} problem(s):\n  ${text}")
endif()
message(STATUS "layering: every include in ${SOURCE_DIR} goes down")
