# Recorded scenarios (docs/scenarios.md): the format's loader and the one list
# of its names, for the recorder (`bulkhead record`) and the player (the
# console's replay) alike. libc and cJSON only: no curses, no engine, so a fuzz
# target links it by itself.
add_library(bulkhead-scenario STATIC src/scenario/scenario.c src/scenario/scenario_save.c)
target_include_directories(bulkhead-scenario PUBLIC ${CMAKE_SOURCE_DIR}/include/bulkhead PRIVATE src/scenario)
target_link_libraries(bulkhead-scenario PUBLIC PkgConfig::CJSON m)
