# Recorded scenarios (docs/scenarios.md): the format's loader and the one list
# of its names, for the recorder (`bulkhead record`) and the player (the
# console's replay) alike. libc and cJSON only: no curses, no engine, so a fuzz
# target links it by itself.
bh_library(bulkhead-scenario src/scenario src/scenario/scenario.c src/scenario/scenario_save.c
  src/scenario/scenario_truth.c) # ---- hops ----
target_sources(bulkhead-scenario PRIVATE src/scenario/scenario_handout.c) # ---- presenter: handouts ----
target_link_libraries(bulkhead-scenario PUBLIC PkgConfig::CJSON m)
