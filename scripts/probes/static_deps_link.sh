#!/usr/bin/env bash
# Whether the static libmicrohttpd and SQLite of .carry/deps (scripts/gpu_deps.sh, built on a
# Debian host) link and run on this machine's toolchain and C library: a few lines that start
# an HTTP daemon and open an in-memory database. Prints one line per library; exit 0 when both.
set -uo pipefail
cd "$(dirname "$0")/../.."
deps=.carry/deps
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/probe.c" <<'C'
#include <stdio.h>
#include <sqlite3.h>
#include <microhttpd.h>
static enum MHD_Result answer(void* c, struct MHD_Connection* k, const char* u, const char* m,
                              const char* v, const char* d, size_t* s, void** p) {
  (void)c; (void)k; (void)u; (void)m; (void)v; (void)d; (void)s; (void)p;
  return MHD_NO;
}
int main(void) {
  sqlite3* db = NULL;
  int ok_sqlite = sqlite3_open(":memory:", &db) == SQLITE_OK &&
                  sqlite3_exec(db, "create table t(x); insert into t values(1);", 0, 0, 0) == SQLITE_OK;
  printf("sqlite %s: %s\n", sqlite3_libversion(), ok_sqlite ? "ok" : "failed");
  sqlite3_close(db);
  struct MHD_Daemon* d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                                          &answer, NULL, MHD_OPTION_END);
  printf("libmicrohttpd %s: %s\n", MHD_get_version(), d ? "ok" : "failed");
  if (d) MHD_stop_daemon(d);
  return ok_sqlite && d ? 0 : 1;
}
C
ldd --version 2>&1 | head -n 1
gcc -O1 -I"$deps/include" -o "$tmp/probe" "$tmp/probe.c" "$deps/lib/libmicrohttpd.a" \
  "$deps/lib/libsqlite3.a" -lpthread -lm -ldl 2>&1 | head -n 20 && "$tmp/probe"
