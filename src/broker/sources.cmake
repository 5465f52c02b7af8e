# The host-side broker (issue 18): HTTP/1.1 forward proxy with CONNECT
# interception, profile enforcement, the credential added on the host. The
# daemon and the CLI link it; the engine never does (it sees struct
# bh_egress_ops). Depends on the public headers, the base and OpenSSL.
find_package(Threads REQUIRED)
pkg_check_modules(SSL REQUIRED IMPORTED_TARGET libssl)
bh_library(bulkhead-broker src/broker
  src/broker/broker.c
  src/broker/broker_error.c
  src/broker/ca.c
  src/broker/credential.c
  src/broker/http_parse.c
  src/broker/profile_copy.c
  src/broker/request.c
  src/broker/secrets.c # ---- egress: the scrub ----
  src/broker/stream.c
  src/broker/target.c
  src/broker/upstream.c)
target_link_libraries(bulkhead-broker PUBLIC bulkhead PkgConfig::SSL PkgConfig::CRYPTO Threads::Threads)
