// The HTTP API where this binary was built without cpp-httplib: `serve` says so.
#include "common/error.h"
#include "serve/server.h"

namespace ptxbench {

void RequireHttpServer() {
  throw EnvironmentError(
      "this ptxbench was built without cpp-httplib: no HTTP server (`ptxbench worker` and the "
      "clients work; install libcpp-httplib-dev, or pass -DHTTPLIB_HEADER=… "
      "-DCPP_HTTPLIB_LIBRARY=…, and rebuild)");
}

void ServeHttp(const ServerOptions&, JobQueue&, const std::atomic<bool>&) { RequireHttpServer(); }

}  // namespace ptxbench
