# libbulkhead-client: a libcurl client of a daemon (the console's attach
# mode and the CLI). Depends on wire and, through it, the engine's types.
find_package(CURL REQUIRED)
bh_library(bulkhead-client src/client
  src/client/check.c
  src/client/errors.c
  src/client/manager.c
  src/client/manager_client.c
  src/client/manager_engine.c
  src/client/operator.c
  src/client/sandbox.c
  src/client/session.c
  src/client/target.c
  src/client/discover.c
  src/client/transport.c
  src/client/wait.c
  # ---- approvals ----
  src/client/operator_approvals.c
  # ---- light ----
  src/client/operator_overview.c
  # ---- remote ----
  src/client/operator_forensics.c)
target_link_libraries(bulkhead-client PUBLIC bulkhead-wire CURL::libcurl PkgConfig::CRYPTO)
