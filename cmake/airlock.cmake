# Shared build settings for airlock's targets.

# Warnings and include root for every airlock target: includes are written from the repo root.
function(airlock_target_defaults target)
  # -Wmismatched-new-delete: GCC 12 misreads Asio's coroutine frame allocator (a known false positive).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Wno-mismatched-new-delete)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

# A library made of every .cpp beside its CMakeLists (excluding tests); the glob is re-checked at
# build time so a new file needs no CMake edit.
function(airlock_library target)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  add_library(${target} STATIC ${sources})
  airlock_target_defaults(${target})
endfunction()
