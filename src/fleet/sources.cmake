# ---- fleet (issue 20): libbulkhead-fleet, the hosts of a fleet on NATS
# (include/bulkhead/fleet.h): a JetStream key-value bucket for hosts, the
# session directory and drains, request-reply for forwarded calls. The
# daemon, the console and the CLI link it; the engine never does, and
# nothing below it includes nats.h (tests/unit/test_layering.c). It uses the
# engine's public header (tier names, struct bh_hibernated) and the base. ----
# pkg-config rather than find_package(cnats): Debian's cnats-config.cmake
# names a libnats_static.a that libnats-dev does not ship.
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)
bh_library(bulkhead-fleet src/fleet
  src/fleet/fleet.c
  src/fleet/fleet_dir.c
  src/fleet/fleet_forward.c
  src/fleet/fleet_values.c
  src/fleet/fleet_watch.c
  src/fleet/fleet_writer.c)
target_link_libraries(bulkhead-fleet PUBLIC bulkhead PRIVATE PkgConfig::NATS PkgConfig::CJSON Threads::Threads m)
