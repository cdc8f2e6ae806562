#include "serve/postgres_fixture.h"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/subprocess.h"

namespace ptxbench::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string FindPostgresBin() {
  if (const char* b = std::getenv("PTXBENCH_PG_BIN")) return b;
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = e.path().string() + "/bin";
    if (fs::exists(bin + "/initdb") && bin > best) best = bin;
  }
  if (!best.empty()) return best;
  if (auto p = FindProgram("initdb")) return fs::path(*p).parent_path().string();
  return "";
}

}  // namespace

bool PostgresRequired() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

int FreeTcpPort() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

std::string PostgresServer::RunAs(const std::string& program,
                                  const std::vector<std::string>& args) const {
  std::vector<std::string> argv;
  if (!user_.empty()) argv = {"setpriv", "--reuid=" + user_, "--regid=" + group_, "--clear-groups"};
  argv.push_back(bin_ + "/" + program);
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv, 120s);
  if (r.exit.kind != ExitKind::kExited || r.exit.code != 0)
    return program + " failed (" + r.exit.Describe() + "): " + r.output;
  return "";
}

std::unique_ptr<PostgresServer> PostgresServer::Start(std::string* why_not) {
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  s->bin_ = FindPostgresBin();
  if (s->bin_.empty()) {
    *why_not = "no PostgreSQL server binaries (initdb) in /usr/lib/postgresql/*/bin or PATH";
    return nullptr;
  }
  char tmpl[] = "/tmp/ptxbench-pg-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    *why_not = "cannot make a temporary folder";
    return nullptr;
  }
  s->dir_ = tmpl;
  if (::geteuid() == 0) {
    // PostgreSQL will not run as root: the server runs as nobody, owning its folder.
    passwd* pw = ::getpwnam("nobody");
    if (!pw) {
      *why_not = "running as root and there is no user 'nobody' to run PostgreSQL as";
      return nullptr;
    }
    if (::chown(s->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      *why_not = "cannot give " + s->dir_ + " to nobody";
      return nullptr;
    }
    s->user_ = std::to_string(pw->pw_uid);
    s->group_ = std::to_string(pw->pw_gid);
  }
  s->port_ = FreeTcpPort();
  std::string err = s->RunAs("initdb", {"-D", s->dir_ + "/data", "-A", "trust", "-U", "postgres",
                                        "-E", "UTF8", "--no-sync"});
  if (err.empty()) err = s->StartServer();
  if (!err.empty()) {
    *why_not = "cannot start a PostgreSQL server: " + err;
    return nullptr;
  }
  s->started_ = true;
  return s;
}

std::string PostgresServer::StartServer() {
  return RunAs("pg_ctl", {"-D", dir_ + "/data", "-l", dir_ + "/log", "-w", "-t", "60", "-o",
                          "-p " + std::to_string(port_) + " -k " + dir_ +
                              " -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                              "-c full_page_writes=off -c max_connections=200",
                          "start"});
}

std::string PostgresServer::Stop() {
  std::string err = RunAs("pg_ctl", {"-D", dir_ + "/data", "-m", "fast", "-w", "stop"});
  if (err.empty()) started_ = false;
  return err;
}

std::string PostgresServer::Restart() {
  std::string err = StartServer();
  if (err.empty()) started_ = true;
  return err;
}

PostgresServer::~PostgresServer() {
  if (started_) RunAs("pg_ctl", {"-D", dir_ + "/data", "-m", "immediate", "-w", "stop"});
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::string PostgresServer::NewDatabaseUrl() {
  std::string name = "ptxbench_test_" + std::to_string(++databases_);
  RunAs("createdb", {"-h", dir_, "-p", std::to_string(port_), "-U", "postgres", name});
  return "postgresql:///" + name + "?host=" + dir_ + "&port=" + std::to_string(port_) +
         "&user=postgres";
}

namespace {
std::unique_ptr<PostgresServer> g_server;
std::string g_why_not;
}  // namespace

void PostgresEnvironment::SetUp() { g_server = PostgresServer::Start(&g_why_not); }
void PostgresEnvironment::TearDown() { g_server.reset(); }
PostgresServer* PostgresEnvironment::Server() { return g_server.get(); }
const std::string& PostgresEnvironment::WhyNoServer() { return g_why_not; }

std::string PostgresDatabaseOrSkip() {
  std::string url;
  [&] {  // GTEST_SKIP and FAIL return from this lambda; the test's SetUp sees the empty url
#ifndef PTXBENCH_HAVE_POSTGRES
    GTEST_SKIP() << "this build has no libpq (PTXBENCH_WITH_LIBPQ=OFF or no headers)";
#endif
    if (!g_server) {
      // CI installs PostgreSQL (scripts/setup.sh): there a server that cannot start fails.
      if (PostgresRequired()) FAIL() << "PostgreSQL (required in CI): " << g_why_not;
      GTEST_SKIP() << "PostgreSQL: " << g_why_not;
    }
    url = g_server->NewDatabaseUrl();
  }();
  return url;
}

}  // namespace ptxbench::testing
