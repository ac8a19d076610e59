// The control protocol and socket: requests checked strictly, and hostile input answered with an
// error while the server keeps serving.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "TestSupport.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"

namespace mirage::daemon {
namespace {

using json = nlohmann::json;
using testing::Harness;

// The error of a reply, "" when it has none (a request wrongly accepted fails, not aborts).
std::string error_of(const json& reply) {
  return reply.value("error", std::string());
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  return addr;
}

json add_request(const std::string& name = "demo") {
  return {{"op", "add"},
          {"campaign",
           {{"name", name},
            {"script", "#!/bin/bash\nsleep 1\n"},
            {"segments", 3},
            {"nodes", 1},
            {"gpus_per_node", 4},
            {"time_limit", "00:10:00"},
            {"overlap", "handoff"}}}};
}

struct HandlerFixture : ::testing::Test {
  Harness h;
  int pokes = 0;
  std::vector<Actions> performed;
  ControlHandler handler{*h.controller,
                         *h.store,
                         {[this](Actions a) { performed.push_back(std::move(a)); },
                          [this] { ++pokes; },
                          [] {
                            return json{{"pid", 1}};
                          },
                          {}}};
  json call(const json& req) { return json::parse(handler.handle(req.dump(), 0)); }
  json call_raw(const std::string& line) { return json::parse(handler.handle(line, 0)); }
};

// The daemon's side of `mirage trace export --out`: the store reached through a symlink (or
// `..`) is the store, refused as its own path is, and left whole.
TEST_F(HandlerFixture, ExportRefusesTheStoreThroughASymlink) {
  const std::string link = h.dir.file("trace.swf");
  std::filesystem::create_symlink(h.path, link);
  const auto size = std::filesystem::file_size(h.path);
  const std::string error = error_of(call({{"op", "export"}, {"out", link}}));
  EXPECT_NE(error.find(link), std::string::npos) << error;
  EXPECT_NE(error.find("it is " + h.path + ", the store"), std::string::npos) << error;
  EXPECT_EQ(std::filesystem::file_size(h.path), size);
  EXPECT_TRUE(call({{"op", "list"}})["ok"]);
}

TEST_F(HandlerFixture, AddListShowPauseResumeCancel) {
  const json added = call(add_request());
  ASSERT_TRUE(added["ok"]) << added;
  const auto id = added["campaign"]["id"].get<std::int64_t>();
  EXPECT_EQ(added["campaign"]["time_limit"], 600);
  EXPECT_EQ(added["campaign"]["overlap"], "handoff");
  EXPECT_EQ(pokes, 1);
  EXPECT_EQ(call({{"op", "list"}})["campaigns"].size(), 1u);
  h.tick();
  const json shown = call({{"op", "show"}, {"id", id}});
  ASSERT_TRUE(shown["ok"]);
  EXPECT_EQ(shown["campaign"]["segment_list"].size(), 3u);
  EXPECT_EQ(shown["campaign"]["segment_list"][0]["state"], "pending");
  EXPECT_EQ(shown["campaign"]["submissions"].size(), 1u);
  EXPECT_EQ(call({{"op", "pause"}, {"id", id}})["campaign"]["state"], "paused");
  EXPECT_EQ(call({{"op", "resume"}, {"id", id}})["campaign"]["state"], "active");
  EXPECT_EQ(call({{"op", "cancel"}, {"id", id}})["campaign"]["state"], "cancelled");
  ASSERT_EQ(performed.size(), 1u);
  EXPECT_EQ(performed[0].cancels.size(), 1u);
  EXPECT_EQ(call({{"op", "status"}})["daemon"]["pid"], 1);
  EXPECT_TRUE(call({{"op", "ping"}})["ok"]);
}

// Two configs without a [socket] path share the default socket: a request meant for another
// store reaches this daemon, which refuses it (naming both stores) instead of cancelling its own
// campaign of that number. Its own store through a symlink is served; no "store", as before.
TEST_F(HandlerFixture, ARequestForAnotherStoreIsRefusedNamingBoth) {
  const json added = call(add_request());
  ASSERT_TRUE(added["ok"]) << added;
  const auto id = added["campaign"]["id"].get<std::int64_t>();
  const std::string other = h.dir.file("other.db");
  { CampaignStore made(other); }
  const json refused = call({{"op", "cancel"}, {"id", id}, {"store", other}});
  EXPECT_FALSE(refused["ok"]) << refused;
  const std::string why = refused.value("error", "");
  EXPECT_EQ(why.rfind("the daemon at ", 0), 0u) << why;
  EXPECT_NE(why.find("serves " + h.path + ", not " + other), std::string::npos) << why;
  EXPECT_NE(why.find("give [socket] path"), std::string::npos) << why;
  EXPECT_EQ(call({{"op", "show"}, {"id", id}})["campaign"]["state"], "active");
  EXPECT_TRUE(performed.empty());
  const std::string link = h.dir.file("link.db");
  std::filesystem::create_symlink(h.path, link);
  EXPECT_TRUE(call({{"op", "list"}, {"store", link}})["ok"]);
  EXPECT_TRUE(call({{"op", "list"}})["ok"]);
}

TEST_F(HandlerFixture, MalformedAndHostileRequestsGetErrors) {
  const std::vector<std::string> bad = {
      "",
      "{",
      "not json",
      "[]",
      "42",
      "\"op\"",
      "{}",
      R"({"op":5})",
      R"({"op":"fly"})",
      R"({"op":"show"})",
      R"({"op":"show","id":"1"})",
      R"({"op":"show","id":-1})",
      R"({"op":"show","id":99})",
      R"({"op":"list","extra":1})",
      R"({"op":"add"})",
      R"({"op":"add","campaign":[]})",
      R"({"op":"add","campaign":{"name":"x"}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":600,"evil":1}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":1e9,"time_limit":600}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":"forever"}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":600,"environment":[1]}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":600,"overlap":"both"}})",
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":600,"policy":"nope"}})",
      "{\"op\":\"\xff\xfe\"}",
      std::string("{\"op\":\"ping\"\0}", 15),
      std::string(10000, '{'),
  };
  for (const auto& line : bad) {
    const json r = call_raw(line);
    EXPECT_FALSE(r["ok"]) << line.substr(0, 80);
    EXPECT_FALSE(r["error"].get<std::string>().empty());
  }
  EXPECT_TRUE(h.controller->campaigns().empty());
  EXPECT_EQ(handler.errors(), bad.size());
  const json r = call_raw(
      R"({"op":"add","campaign":{"name":"x","script":"s","segments":2,"time_limit":600,"evil":1}})");
  EXPECT_NE(r["error"].get<std::string>().find("campaign.evil: unknown key"), std::string::npos)
      << r;
}

json add_with(const std::string& key, const json& value) {
  json r = add_request();
  r["campaign"][key] = value;
  return r;
}

TEST_F(HandlerFixture, TimeLimitBeyondAYearIsRefused) {
  // 2^63-1 s was accepted, and the campaign was marked done within minutes.
  for (const json& limit : {json(INT64_MAX), json(UINT64_MAX), json(366 * kDay),
                            json("99999999999999999999d"), json("9999999-00:00:00")}) {
    const json r = call(add_with("time_limit", limit));
    EXPECT_FALSE(r["ok"]) << limit;
    EXPECT_NE(error_of(r).find("campaign.time_limit"), std::string::npos) << r;
  }
  EXPECT_NE(error_of(call(add_with("time_limit", INT64_MAX))).find("1m to 365d"),
            std::string::npos);
  EXPECT_FALSE(call(add_with("handoff_grace", INT64_MAX))["ok"]);
  EXPECT_FALSE(call(add_with("segments", UINT64_MAX))["ok"]);
  EXPECT_TRUE(h.controller->campaigns().empty());
  EXPECT_TRUE(call(add_with("time_limit", 365 * kDay))["ok"]);
}

TEST_F(HandlerFixture, AnAddWithOnlyAScriptTakesTheShapeFromItAndRepliesTheNotes) {
  const json r = call({{"op", "add"},
                       {"campaign",
                        {{"name", "open"},
                         {"script", "#!/bin/bash\n#SBATCH -N 2 -t 2:00:00\nsrun x\n"},
                         {"script_path", "/u/x.sbatch"},
                         {"nodes", 3},
                         {"max_retries", 4}}}});
  ASSERT_TRUE(r["ok"]) << r;
  const json& c = r["campaign"];
  EXPECT_EQ(c["segments"], 0);  // open-ended
  EXPECT_EQ(c["nodes"], 3);
  EXPECT_EQ(c["time_limit"], 2 * kHour);
  EXPECT_EQ(c["max_retries"], 4);
  EXPECT_NE(c["done_file"].get<std::string>().find(".done/campaign-"), std::string::npos);
  ASSERT_EQ(r["notes"].size(), 2u);  // the shape's, then which policy (none given) and why
  EXPECT_EQ(r["notes"][0], "--nodes 3 overrides '#SBATCH -N 2' (/u/x.sbatch:2): the flag wins");
  EXPECT_EQ(r["notes"][1].get<std::string>().rfind("policy ", 0), 0u) << r["notes"][1];
  const json shown = call({{"op", "show"}, {"id", c["id"]}});
  EXPECT_EQ(shown["campaign"]["sbatch_options"], json::array({"--nodes=3"}));
}

TEST_F(HandlerFixture, ControlBytesInANameAreRefused) {
  const json r = call(add_request("ring\x07\x1b[2Jbell"));
  EXPECT_FALSE(r["ok"]);
  const std::string e = error_of(r);
  EXPECT_NE(e.find("campaign.name"), std::string::npos) << e;
  EXPECT_NE(e.find("ring\\x07\\x1b[2Jbell"), std::string::npos) << e;  // shown escaped
  EXPECT_EQ(e.find('\x07'), std::string::npos);
  EXPECT_FALSE(call(add_with("partition", "gpu\n"))["ok"]);
  EXPECT_TRUE(h.controller->campaigns().empty());
  EXPECT_TRUE(call(add_request("été-run 1"))["ok"]);  // UTF-8 is fine
}

TEST(Base64, EveryByteRoundTripsAndMalformedTextIsRefused) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u})
    EXPECT_EQ(base64_decode(base64_encode(all.substr(0, n))), all.substr(0, n)) << n;
  EXPECT_EQ(base64_encode("caf\xe9"), "Y2Fm6Q==");
  for (const char* bad : {"Y2Fm6Q=", "Y2Fm6Q", "Y2=m6Q==", "Y2Fm6Q===", "Y2Fm*Q==", "=AAA"})
    EXPECT_FALSE(base64_decode(bad)) << bad;
}

// The client sends a script as base64: JSON holds only UTF-8, a script any byte. Every byte
// reaches the store and sbatch as it was; a plain "script" (an older client's) still works.
TEST_F(HandlerFixture, AScriptInBase64KeepsEveryByteToTheStoreAndTheSubmission) {
  const std::string script = "#!/bin/bash\n# caf\xe9 (Latin-1)\n#SBATCH -J \xe9t\xe9\nsrun x\n";
  json req = add_request();
  req["campaign"].erase("script");
  req["campaign"]["script_base64"] = base64_encode(script);
  const json r = call(req);
  ASSERT_TRUE(r["ok"]) << r;
  const auto id = r["campaign"]["id"].get<std::int64_t>();
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_EQ(h.slurm.submissions().at(0).request.script, script);
  h.restart();  // read back from the store
  EXPECT_EQ(h.campaign(id).spec.script, script);

  json both = add_request();
  both["campaign"]["script_base64"] = base64_encode(script);
  EXPECT_NE(error_of(call(both)).find("campaign.script: give the script as"), std::string::npos);
  req["campaign"]["script_base64"] = "not base64!";
  EXPECT_NE(error_of(call(req)).find("campaign.script_base64: not base64"), std::string::npos);
}

// One limit however the script came: Slurm's own default (4 MiB).
TEST_F(HandlerFixture, AScriptOverSlurmsLimitIsRefusedPlainOrInBase64) {
  std::string big = "#!/bin/bash\n";
  big += std::string(kMaxScriptBytes + 1 - big.size() - 1, '#') + "\n";
  json req = add_request();
  req["campaign"]["script"] = big;
  req["campaign"]["script_path"] = "/u/big.sbatch";
  const std::string plain = error_of(call(req));
  EXPECT_EQ(plain,
            "campaign.script: /u/big.sbatch: the script is 4194305 bytes, over the limit of "
            "4194304 bytes (4 MiB, Slurm's default SchedulerParameters=max_script_size): "
            "slurmctld would refuse it");
  req["campaign"].erase("script");
  req["campaign"]["script_base64"] = base64_encode(big);
  EXPECT_EQ(error_of(call(req)), plain);
  big.pop_back();
  big.back() = '\n';  // at the limit
  req["campaign"]["script_base64"] = base64_encode(big);
  EXPECT_TRUE(call(req)["ok"]);
}

// A server on its own thread, spoken to through a real socket.
struct ServerFixture : ::testing::Test {
  testing::TempDir dir;
  std::string path = dir.file("c.sock");
  boost::asio::io_context io;
  std::unique_ptr<ControlServer> server;
  std::thread thread;
  std::atomic<int> handled{0};

  void SetUp() override {
    ControlServerLimits limits;
    limits.max_request_bytes = 1024;
    limits.max_clients = 4;
    limits.idle_timeout_s = 2;
    limits.stalled_request_ms = 1000;
    server = std::make_unique<ControlServer>(
        io, path, limits, [this](const std::string& line, std::uint32_t) {
          ++handled;
          return json{{"ok", true}, {"echo", line.size()}}.dump();
        });
    server->start();
    thread = std::thread([this] { io.run(); });
  }
  void TearDown() override {
    boost::asio::post(io, [this] {
      server->stop();
      io.stop();
    });
    thread.join();
  }

  int connect_raw() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const sockaddr_un addr = address_of(path);
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }
  static std::string read_line(int fd) {
    std::string out;
    char c;
    while (::recv(fd, &c, 1, 0) == 1) {
      if (c == '\n') return out;
      out += c;
    }
    return out;
  }
  bool alive() { return json::parse(control_request(path, R"({"op":"ping"})"))["ok"].get<bool>(); }
};

TEST_F(ServerFixture, SocketIsPrivate) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST_F(ServerFixture, ServesManyRequestsOnOneConnection) {
  const int fd = connect_raw();
  const std::string two = "{\"a\":1}\n\n{\"b\":22}\r\n";
  ASSERT_EQ(::send(fd, two.data(), two.size(), 0), static_cast<ssize_t>(two.size()));
  EXPECT_EQ(json::parse(read_line(fd))["echo"], 7);
  EXPECT_EQ(json::parse(read_line(fd))["echo"], 8);
  ::close(fd);
}

TEST_F(ServerFixture, OversizedRequestIsRefusedAndTheServerGoesOn) {
  const int fd = connect_raw();
  const std::string big(5000, 'x');
  ::send(fd, big.data(), big.size(), MSG_NOSIGNAL);
  const json r = json::parse(read_line(fd));
  EXPECT_FALSE(r["ok"]);
  EXPECT_NE(r["error"].get<std::string>().find("too large"), std::string::npos);
  char c;
  EXPECT_LE(::recv(fd, &c, 1, 0), 0);  // disconnected (EOF, or a reset for the unread rest)
  ::close(fd);
  EXPECT_TRUE(alive());
}

TEST_F(ServerFixture, BinaryGarbageAndAbruptHangupsChangeNothing) {
  for (int i = 0; i < 20; ++i) {
    const int fd = connect_raw();
    std::string junk;
    for (int k = 0; k < 300; ++k) junk += static_cast<char>((k * 37 + i) % 256);
    ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);  // hang up mid-request
  }
  EXPECT_TRUE(alive());
}

TEST_F(ServerFixture, SilentClientsAreDisconnectedAfterTheIdleTimeout) {
  const int fd = connect_raw();
  char c;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);  // closed by the server after ~2 s
  ::close(fd);
  EXPECT_TRUE(alive());
}

TEST_F(ServerFixture, IdleClientsDoNotStarveARealRequest) {
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    fds.push_back(connect_raw());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(alive());  // the longest-idle connection made room
  const json r = json::parse(read_line(fds[0]));
  EXPECT_NE(error_of(r).find("idle"), std::string::npos) << r;
  for (int fd : fds) ::close(fd);
}

// Clients that each send a byte and hang fill the cap; one more is admitted for a status (or a
// ping) and answered at once, not after the idle timeout. Anything else it asks is refused.
TEST_F(ServerFixture, StatusIsAnsweredAtOnceWhileHungClientsFillTheCap) {
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    fds.push_back(connect_raw());
    ::send(fds.back(), "{", 1, MSG_NOSIGNAL);  // a request begun, never finished
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  const json r = json::parse(control_request(path, R"({"op":"status"})", 1000));
  EXPECT_TRUE(r["ok"]) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_FALSE(json::parse(control_request(path, R"({"op":"list"})"))["ok"]);
  const int extra = connect_raw();
  ::send(extra, "{\"op\":\"list\"}\n", 14, MSG_NOSIGNAL);
  EXPECT_NE(error_of(json::parse(read_line(extra))).find("too many clients"), std::string::npos);
  ::close(extra);
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(alive());
}

// However many hang, each new client finds room: a request silent for stalled_request_ms (here
// 1 s) is hung up on, the longest silent first.
TEST_F(ServerFixture, AStalledRequestMakesRoomHoweverManyClientsHang) {
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    fds.push_back(connect_raw());
    ::send(fds.back(), "{", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  for (int i = 0; i < 3; ++i) {
    const json r = json::parse(control_request(path, R"({"op":"list"})", 1000));
    EXPECT_TRUE(r["ok"]) << r;
  }
  const json first = json::parse(read_line(fds[0]));
  EXPECT_NE(error_of(first).find("the request stopped coming"), std::string::npos) << first;
  for (int fd : fds) ::close(fd);
}

// With the daemon's default socket.max_request_bytes, a script at Slurm's limit fits in an add
// request (base64, with an environment); 64 KiB refused a 100 KB script.
TEST(ControlSocket, AScriptAtSlurmsLimitFitsThroughTheSocketByDefault) {
  Harness h;
  ControlHandler handler(*h.controller, *h.store, {});
  testing::TempDir dir;
  boost::asio::io_context io;
  ControlServerLimits limits;
  limits.max_request_bytes = DaemonConfig{}.max_request_bytes;
  ControlServer server(
      io, dir.file("c.sock"), limits,
      [&](const std::string& line, std::uint32_t uid) { return handler.handle(line, uid); });
  server.start();
  std::thread thread([&] { io.run(); });
  for (const std::size_t size : {std::size_t{100'000}, std::size_t{kMaxScriptBytes}}) {
    std::string script = "#!/bin/bash\n";
    script += std::string(size - script.size() - 1, '#') + "\n";
    json req = add_request("big-" + std::to_string(size));
    req["campaign"].erase("script");
    req["campaign"]["script_base64"] = base64_encode(script);
    req["campaign"]["environment"] = json::array();
    for (int i = 0; i < 200; ++i)
      req["campaign"]["environment"].push_back("VAR" + std::to_string(i) + "=" +
                                               std::string(200, 'v'));
    const json r = json::parse(control_request(dir.file("c.sock"), req.dump()));
    EXPECT_TRUE(r["ok"]) << size << ": " << r.dump().substr(0, 300);
  }
  boost::asio::post(io, [&] {
    server.stop();
    io.stop();
  });
  thread.join();
}

TEST_F(ServerFixture, OtherUsersAreRefusedByUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  // Let the other user reach the uid check (mode 0600 alone would stop it at connect).
  ::chmod(dir.path().c_str(), 0755);
  ::chmod(path.c_str(), 0666);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setuid(65534) != 0) _exit(10);
    try {
      const std::string reply = control_request(path, R"({"op":"ping"})", 3000);
      _exit(reply.find("permission denied") != std::string::npos ? 0 : 11);
    } catch (...) {
      _exit(12);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(server->rejected(), 1u);
  EXPECT_TRUE(alive());
}

TEST_F(ServerFixture, ASecondServerRefusesALiveSocket) {
  boost::asio::io_context other;
  ControlServer second(other, path, {}, [](const std::string&, std::uint32_t) { return "{}"; });
  EXPECT_THROW(second.start(), std::runtime_error);
  EXPECT_TRUE(alive());
}

// --- what ControlServer::start does with a file already at its path

struct SocketPathFixture : ::testing::Test {
  testing::TempDir dir;
  std::string path = dir.file("c.sock");
  boost::asio::io_context io;
  std::string start_error() {
    ControlServer server(io, path, {}, [](const std::string&, std::uint32_t) { return "{}"; });
    try {
      server.start();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  // A socket left by a daemon that was killed: bound, never unlinked, nobody listening.
  void make_stale_socket() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const sockaddr_un addr = address_of(path);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
};

TEST_F(SocketPathFixture, SocketPathNeverDeletesARegularFile) {
  std::ofstream(path) << "a user's notes";
  const std::string e = start_error();
  EXPECT_NE(e.find(path + " is a regular file"), std::string::npos) << e;
  std::ifstream f(path);
  std::string text;
  std::getline(f, text);
  EXPECT_EQ(text, "a user's notes");
}

TEST_F(SocketPathFixture, SocketPathNeverDeletesADirectorySymlinkOrFifo) {
  std::filesystem::create_directory(path);
  EXPECT_NE(start_error().find("is a directory"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(path));
  std::filesystem::remove(path);

  // A symlink to a stale socket is still a symlink: the target is not ours to judge.
  const std::string target = path;
  path = dir.file("link.sock");
  make_stale_socket();
  std::filesystem::rename(path, target);
  std::filesystem::create_symlink(target, path);
  EXPECT_NE(start_error().find("is a symbolic link"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(path));
  std::filesystem::remove(path);

  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_NE(start_error().find("is a FIFO"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_fifo(path));
}

TEST_F(SocketPathFixture, ProvablyStaleSocketIsReplaced) {
  make_stale_socket();
  ControlServer server(io, path, {},
                       [](const std::string&, std::uint32_t) { return R"({"ok":true})"; });
  ASSERT_NO_THROW(server.start());
  std::thread t([this] { io.run(); });
  EXPECT_EQ(control_request(path, R"({"op":"ping"})", 3000), R"({"ok":true})");
  boost::asio::post(io, [&] {
    server.stop();
    io.stop();
  });
  t.join();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path)));
}

TEST_F(SocketPathFixture, StopLeavesAFileThatReplacedTheSocket) {
  ControlServer server(io, path, {}, [](const std::string&, std::uint32_t) { return "{}"; });
  server.start();
  std::filesystem::remove(path);
  std::ofstream(path) << "mine now";
  server.stop();
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
}

TEST(ControlClient, SaysTheDaemonIsNotRunning) {
  try {
    control_request("/nonexistent/mirage.sock", "{}");
    FAIL();
  } catch (const ControlClientError& e) {
    EXPECT_NE(std::string(e.what()).find("not running"), std::string::npos);
  }
}

// A daemon that reads each request and answers only from the `answer_from`-th connection on
// (a daemon killed before its reply, then restarted), keeping the lines it read.
struct ForgetfulDaemon {
  explicit ForgetfulDaemon(const std::string& path, int answer_from) : path_(path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const sockaddr_un addr = address_of(path);
    EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd, 4), 0);
    server = std::thread([this, answer_from] {
      for (int n = 1;; ++n) {
        const int c = ::accept(fd, nullptr, nullptr);
        if (c < 0) return;
        std::string line;
        char ch = 0;
        while (::read(c, &ch, 1) == 1 && ch != '\n') line += ch;
        if (line == "stop") {
          ::close(c);
          return;
        }
        lines.push_back(line);
        if (n >= answer_from) {
          const std::string reply = R"({"ok":true,"campaign":{"id":5}})"
                                    "\n";
          EXPECT_EQ(::write(c, reply.data(), reply.size()), static_cast<ssize_t>(reply.size()));
        }
        ::close(c);
      }
    });
  }
  ~ForgetfulDaemon() {
    stop();
    ::close(fd);
  }
  // Ends the server; the lines it read are whole once this returns.
  void stop() {
    if (!server.joinable()) return;
    try {
      control_request(path_, "stop", 1000);
    } catch (const ControlClientError&) {
    }
    server.join();
  }
  std::string path_;
  int fd = -1;
  std::thread server;
  std::vector<std::string> lines;
};

TEST(ControlClient, AnAddWhoseAnswerWasLostIsSentAgainWithTheSameKey) {
  testing::TempDir dir;
  const std::string path = dir.file("d.sock");
  json add = add_request();
  add["campaign"]["request_key"] = "k-1";
  {
    ForgetfulDaemon d(path, 2);
    EXPECT_EQ(call_daemon_keyed(path, add, 3, 2000).at("campaign").at("id"), 5);
    d.stop();
    ASSERT_EQ(d.lines.size(), 2u);
    EXPECT_EQ(d.lines[0], d.lines[1]) << "the retry is the same request, its key included";
  }
  // Without a key the daemon may have done it: sent once, and the loss said.
  const std::string other = dir.file("e.sock");
  json cancel = {{"op", "cancel"}, {"id", 1}};
  ForgetfulDaemon d(other, 2);
  try {
    call_daemon_keyed(other, cancel, 3, 2000);
    FAIL() << "an unkeyed request was answered";
  } catch (const ControlClientError& e) {
    EXPECT_TRUE(e.request_sent()) << e.what();
  }
  d.stop();
  EXPECT_EQ(d.lines.size(), 1u);
}

}  // namespace
}  // namespace mirage::daemon
