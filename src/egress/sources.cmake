# The operator's egress profiles (include/bulkhead/egress.h): the file, parsed
# and checked. The daemon and the CLI link it; the engine never does (it sees
# a profile only by name, through struct bh_egress_ops).
bh_library(bulkhead-egress src/egress
  src/egress/profiles.c
  src/egress/profiles_parse.c
  src/egress/profiles_sources.c
  src/egress/profiles_values.c)
target_link_libraries(bulkhead-egress PUBLIC bulkhead)
