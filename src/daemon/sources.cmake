# `bulkhead serve`: the engine behind HTTP. Depends on wire and the engine.
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
bh_library(bulkhead-daemon src/daemon
  src/daemon/audit.c
  src/daemon/log.c
  src/daemon/call.c
  src/daemon/clients.c
  src/daemon/clients_edit.c
  src/daemon/health.c
  src/daemon/metrics.c
  src/daemon/metrics_usage.c
  src/daemon/oom.c
  src/daemon/operator_service.c
  src/daemon/peer.c
  src/daemon/ratelimit.c
  src/daemon/sandbox_service.c
  src/daemon/server.c
  # ---- approvals ----
  src/daemon/approvals.c
  src/daemon/operator_approvals.c
  # ---- light ----
  src/daemon/operator_overview.c
  # ---- plumb: egress ----
  src/daemon/metrics_egress.c
  # ---- remote ----
  src/daemon/operator_forensics.c)
target_link_libraries(bulkhead-daemon PUBLIC bulkhead-wire PkgConfig::MHD PkgConfig::CRYPTO)
# ---- profiles ----
target_sources(bulkhead-daemon PRIVATE src/daemon/egress_profiles.c)
target_link_libraries(bulkhead-daemon PUBLIC bulkhead-egress)
# The broker where its library is built (src/broker, included before this
# file); without it no broker runs and every grant is refused.
if(TARGET bulkhead-broker)
  target_sources(bulkhead-daemon PRIVATE src/daemon/egress_broker.c)
  target_link_libraries(bulkhead-daemon PUBLIC bulkhead-broker)
  target_compile_definitions(bulkhead-daemon PRIVATE BH_DAEMON_BROKER=1)
endif()
# ---- project ----
target_sources(bulkhead-daemon PRIVATE src/daemon/sandbox_project.c)
# ---- config: serve --hardened ----
target_sources(bulkhead-daemon PRIVATE src/daemon/hardened.c)
# ---- tls: serve --tls-cert/--tls-key/--tls-client-ca (libmicrohttpd's GnuTLS) ----
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
target_sources(bulkhead-daemon PRIVATE src/daemon/tls.c src/daemon/tls_door.c src/daemon/front_door.c)
target_link_libraries(bulkhead-daemon PUBLIC PkgConfig::GNUTLS)
# ---- fleet (issue 20): serve --fleet, on libbulkhead-fleet (src/fleet,
# included before this file; libnats is required) ----
target_sources(bulkhead-daemon PRIVATE src/daemon/fleet_member.c src/daemon/fleet_route.c
  src/daemon/fleet_serve.c)
target_link_libraries(bulkhead-daemon PUBLIC bulkhead-fleet)
