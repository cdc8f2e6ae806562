// The HTTP API where this binary was built without libmicrohttpd: `serve` says so.
#include "common/error.h"
#include "serve/server.h"

namespace ptxbench {

void RequireHttpServer() {
  throw EnvironmentError(
      "this ptxbench was built without libmicrohttpd: no HTTP server (`ptxbench worker` and the "
      "clients work; install libmicrohttpd-dev, or pass -DMICROHTTPD_INCLUDE_DIR=… "
      "-DMICROHTTPD_LIBRARY=…, and rebuild)");
}

void ServeHttp(const ServerOptions&, JobQueue&, const std::atomic<bool>&) { RequireHttpServer(); }

}  // namespace ptxbench
