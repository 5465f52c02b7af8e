# The operator console (ncurses). Depends on the engine's public API (through
# its sources only) and, for attach mode, on the client.
pkg_check_modules(NCURSES REQUIRED IMPORTED_TARGET ncursesw)
bh_library(bulkhead-ui ui
  ui/app.c
  ui/ui_files.c
  ui/prompt.c
  ui/source_attached.c
  ui/source_overview.c # ---- light ----
  ui/source_common.c
  ui/source_embedded.c
  ui/source_none.c
  ui/source_store.c
  ui/table.c
  ui/theme.c
  ui/view_load.c
  ui/views/describe.c
  ui/views/events.c
  ui/views/help.c
  ui/views/history_page.c
  ui/views/leaks.c
  ui/views/leaks_capture.c # ---- capture ----
  ui/views/leaks_report.c # ---- capture ----
  ui/copy_time.c # ---- report ----
  ui/views/search.c # ---- capture ----
  ui/views/player.c
  ui/views/record.c
  ui/views/records.c
  ui/views/replay.c
  ui/views/runs.c
  ui/views/sandboxes.c
  ui/views/walls.c
  ui/views/cells.c
  ui/views/cell.c
  ui/views/cell_text.c
  # ---- tables ----
  ui/answers.c
  ui/copy.c
  ui/draw_clip.c
  # ---- approvals ----
  ui/views/approvals.c)
# ---- procs ----
target_sources(bulkhead-ui PRIVATE ui/source_procs.c ui/ui_text.c ui/views/processes.c ui/views/files.c
  ui/views/file.c ui/views/files_save.c)
# ---- presenter: the replay for a class ----
target_sources(bulkhead-ui PRIVATE ui/views/hop_diagram.c ui/views/presenter.c ui/views/lanes.c
  ui/views/live_call.c)
target_link_libraries(bulkhead-ui PUBLIC bulkhead bulkhead-client bulkhead-scenario PkgConfig::NCURSES)
# ---- inflight ----
target_sources(bulkhead-ui PRIVATE ui/views/timeline.c ui/views/leaks_reap.c)
# ---- report: the incident report is one definition, below the console ----
target_link_libraries(bulkhead-ui PUBLIC bulkhead-report)
# ---- fleet (issue 20): the console over a fleet on NATS ----
# (src/fleet on libnats, which the build requires)
target_sources(bulkhead-ui PRIVATE ui/views/hosts.c ui/source_fleet.c)
target_link_libraries(bulkhead-ui PUBLIC bulkhead-fleet)
