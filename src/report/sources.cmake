# The incident report (report.h): one definition for the console's `e` in
# :leaks and `bulkhead report`. Above the wire library (its UTF-8 repair)
# and the engine's public API; below the console and the command.
bh_library(bulkhead-report src/report
  src/report/report.c
  src/report/report_collect.c
  src/report/report_md.c)
target_link_libraries(bulkhead-report PUBLIC bulkhead bulkhead-wire)
