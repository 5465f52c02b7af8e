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

# ---- fleet (issue 20): a forwarded call against a direct one, opens a second
# across three hosts, a killed host's hibernated sessions answering elsewhere
# (bench/fleet_bench.c), on a real three-node NATS cluster started by the fleet
# tests' harness, whose criterion assertions end the program here
# (bench/criterion_shim) ----
add_executable(bulkhead-bench-fleet bench/fleet_bench.c bench/stats.c tests/fleet/nats_cluster.c)
target_include_directories(bulkhead-bench-fleet PRIVATE bench/criterion_shim tests/fleet)
target_link_libraries(bulkhead-bench-fleet PRIVATE bulkhead-fleet CURL::libcurl PkgConfig::CJSON
  PkgConfig::NATS PkgConfig::CRYPTO Threads::Threads m)
target_compile_definitions(bulkhead-bench-fleet PRIVATE
  BENCH_INTERP="${CMAKE_SOURCE_DIR}/data/interp"
  BENCH_CLI="$<TARGET_FILE:bulkhead-cli>")
set_target_properties(bulkhead-bench-fleet PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
add_dependencies(bulkhead-bench-fleet bulkhead-cli bulkhead-init)

# ---- density (issue 21): a thousand idle warm sessions on one engine, what
# each costs, and the active ones' cells beside them (bench/density.c) ----
add_executable(bulkhead-bench-density bench/density.c bench/stats.c bench/sysmem.c)
target_link_libraries(bulkhead-bench-density PRIVATE bulkhead m)
target_compile_definitions(bulkhead-bench-density PRIVATE
  BENCH_INIT="$<TARGET_FILE:bulkhead-init>"
  BENCH_INTERP="${CMAKE_SOURCE_DIR}/data/interp")
set_target_properties(bulkhead-bench-density PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
add_dependencies(bulkhead-bench-density bulkhead-init)

# ---- density (issue 21): restore from hibernate against live data, and a
# branch's pause and children (bench/wake_branch.c) ----
add_executable(bulkhead-bench-wake bench/wake_branch.c bench/stats.c bench/sysmem.c)
target_link_libraries(bulkhead-bench-wake PRIVATE bulkhead m)
target_compile_definitions(bulkhead-bench-wake PRIVATE
  BENCH_INIT="$<TARGET_FILE:bulkhead-init>"
  BENCH_INTERP="${CMAKE_SOURCE_DIR}/data/interp")
set_target_properties(bulkhead-bench-wake PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
add_dependencies(bulkhead-bench-wake bulkhead-init)
