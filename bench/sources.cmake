# bulkhead-bench: the performance figures and their targets, measured (never asserted). It runs
# real sandboxes, so it is a program, not a test; `build/bench/bulkhead-bench
# --quick` runs in under two minutes.
find_package(CURL REQUIRED)
add_executable(bulkhead-bench
  bench/bench.c
  bench/soak.c
  bench/stats.c
  bench/sysmem.c
  bench/worker.c
  bench/worker_daemon.c
  bench/worker_engine.c)
target_link_libraries(bulkhead-bench PRIVATE bulkhead CURL::libcurl PkgConfig::CJSON m)
# The engine's internals (its store, measured directly) only through the
# test-support header, tests/support/engine_internals.h.
target_include_directories(bulkhead-bench PRIVATE tests/support src/engine)
target_compile_definitions(bulkhead-bench PRIVATE
  BENCH_INIT="$<TARGET_FILE:bulkhead-init>"
  BENCH_INTERP="${CMAKE_SOURCE_DIR}/data/interp"
  BENCH_CLI="$<TARGET_FILE:bulkhead-cli>")
set_target_properties(bulkhead-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
add_dependencies(bulkhead-bench bulkhead-init bulkhead-cli)

# ---- broker: the egress broker's added latency per request, against a direct
# request to the same TLS upstream, pair by pair (bench/broker_latency.c) ----
add_executable(bulkhead-bench-broker bench/broker_latency.c bench/stats.c)
target_link_libraries(bulkhead-bench-broker PRIVATE bulkhead-broker m)
set_target_properties(bulkhead-bench-broker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
