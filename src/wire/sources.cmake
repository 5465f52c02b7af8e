# plimsoll.v1 / bulkhead.v1 wire messages (cJSON, hand-encoded protobuf details).
# Depends only on the engine's public types and its record encoding.
bh_library(bulkhead-wire src/wire
  src/wire/base64.c
  src/wire/wire_body.c
  src/wire/wire_check.c
  src/wire/wire_codes.c
  src/wire/wire_errors.c
  src/wire/wire_fields.c
  src/wire/wire_json.c
  src/wire/wire_operator.c
  src/wire/wire_operator_files.c
  src/wire/wire_operator_history.c
  src/wire/wire_operator_requests.c
  src/wire/wire_operator_usage.c
  src/wire/wire_operator_branch.c # ---- density ----
  src/wire/wire_operator_cells.c
  src/wire/wire_pb.c
  src/wire/wire_record.c
  src/wire/wire_requests.c
  src/wire/wire_responses.c
  src/wire/wire_util.c
  # ---- approvals ----
  src/wire/wire_operator_approvals.c)
target_link_libraries(bulkhead-wire PUBLIC bulkhead m)
# ---- procs ----
target_sources(bulkhead-wire PRIVATE src/wire/wire_operator_procs.c)
# ---- light ----
target_sources(bulkhead-wire PRIVATE src/wire/wire_operator_overview.c)
# ---- project ----
target_sources(bulkhead-wire PRIVATE src/wire/wire_project.c)
# ---- remote ----
target_sources(bulkhead-wire PRIVATE src/wire/wire_operator_forensics.c)
