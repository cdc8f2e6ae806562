// A throwaway PostgreSQL server for tests: initdb into a temporary folder, a unix socket in
// that folder, a free port number; stopped and removed with the object. PostgreSQL refuses to
// run as root, so under root (CI containers) it runs as the unprivileged user `nobody`.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace ptxbench::testing {

// True where the tests must have PostgreSQL (CI=true: scripts/setup.sh installs it).
bool PostgresRequired();

// A TCP port on the loopback that was free a moment ago.
int FreeTcpPort();

class PostgresServer {
 public:
  // nullptr, with *why_not filled, when no server can be started here (no PostgreSQL
  // binaries, no unprivileged user): the caller skips, visibly, with that reason.
  static std::unique_ptr<PostgresServer> Start(std::string* why_not);
  ~PostgresServer();
  // A libpq URL of a fresh database on this server (one per call).
  std::string NewDatabaseUrl();
  // An outage: Stop() shuts the server down (fast: sessions are ended), Restart() starts it
  // again on the same port and data. Each returns "" or what failed.
  std::string Stop();
  std::string Restart();

 private:
  PostgresServer() = default;
  std::string StartServer();
  std::string RunAs(const std::string& program, const std::vector<std::string>& args) const;
  std::string bin_, dir_, user_, group_;  // user_/group_: ids to run as (empty: ourselves)
  int port_ = 0, databases_ = 0;
  bool started_ = false;
};

// The one server of a test binary: started before its first test, stopped after its last.
// A binary that wants it registers it once:
//   ::testing::AddGlobalTestEnvironment(new testing::PostgresEnvironment);
class PostgresEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
  // The server, nullptr where it could not start (WhyNoServer() says why).
  static PostgresServer* Server();
  static const std::string& WhyNoServer();
};

// For a test's SetUp: a fresh database on the binary's server. Where this build has no libpq or
// the server could not start, "" with the test skipped (failed where PostgresRequired()); the
// caller returns.
std::string PostgresDatabaseOrSkip();

}  // namespace ptxbench::testing
