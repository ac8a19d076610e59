#include "mirage/daemon/DaemonConfig.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "mirage/core/Error.h"

namespace mirage::daemon {
namespace {

long line_of(const toml::node& n) {
  return static_cast<long>(n.source().begin.line);
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const toml::node& at, const std::string& key, const std::string& what) {
    throw InputError({file_, line_of(at), key}, what);
  }

  std::string type_name(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a number";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::table: return "a table";
      case toml::node_type::array: return "an array";
      default: return "a date or time";
    }
  }

  std::string show(const toml::node& n) {
    std::ostringstream os;
    if (auto s = n.as_string())
      os << '"' << escape_control(s->get()) << '"';  // a TOML string may hold any character
    else if (n.is_table() || n.is_array())
      os << type_name(n);
    else
      n.visit([&](const auto& v) { os << v; });
    return os.str();
  }

  std::string string(const toml::node& n, const std::string& key) {
    if (auto s = n.as_string()) return s->get();
    fail(n, key, "expected a string, got " + show(n));
  }

  long long integer(const toml::node& n, const std::string& key, long long lo, long long hi) {
    auto v = n.as_integer();
    if (!v) fail(n, key, "expected an integer, got " + show(n));
    if (v->get() < lo || v->get() > hi)
      fail(n, key,
           "expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
               std::to_string(v->get()));
    return v->get();
  }

  double number(const toml::node& n, const std::string& key, double lo, double hi) {
    double x;
    if (auto f = n.as_floating_point())
      x = f->get();
    else if (auto i = n.as_integer())
      x = static_cast<double>(i->get());
    else
      fail(n, key, "expected a number, got " + show(n));
    if (!(x >= lo && x <= hi))
      fail(n, key, "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return x;
  }

  Seconds duration(const toml::node& n, const std::string& key, Seconds lo) {
    Seconds v = -1;
    if (auto i = n.as_integer()) {
      v = i->get();
    } else if (auto s = n.as_string()) {
      const std::string& t = s->get();
      if (t == "0") {
        v = 0;
      } else if (auto d = parse_short_duration(t)) {
        v = *d;
      } else if (t.find(':') != std::string::npos || t.find('-') != std::string::npos) {
        if (auto d2 = parse_slurm_duration(t)) v = *d2;
      }
      if (v < 0)
        fail(n, key,
             "expected a duration such as \"30s\", \"10m\", \"12h\", \"2d\" or "
             "\"HH:MM:SS\", got " +
                 show(n));
    } else {
      fail(n, key, "expected a duration such as \"30s\" or 30 (seconds), got " + show(n));
    }
    if (v < lo) fail(n, key, "expected at least " + std::to_string(lo) + " seconds");
    return v;
  }

 private:
  std::string file_;
};

using KeyHandler = std::function<void(const toml::node&, const std::string&)>;

}  // namespace

std::string expand_path(const std::string& path) {
  std::string out;
  std::size_t i = 0;
  if (path.rfind("~/", 0) == 0 || path == "~") {
    const char* home = std::getenv("HOME");
    out = home ? home : "";
    i = 1;
  }
  while (i < path.size()) {
    if (path[i] == '$') {
      std::size_t j = i + 1;
      std::string name;
      if (j < path.size() && path[j] == '{') {
        const auto close = path.find('}', j);
        if (close == std::string::npos) {
          out += path.substr(i);
          break;
        }
        name = path.substr(j + 1, close - j - 1);
        i = close + 1;
      } else {
        while (j < path.size() &&
               (std::isalnum(static_cast<unsigned char>(path[j])) || path[j] == '_'))
          ++j;
        name = path.substr(i + 1, j - i - 1);
        i = j;
      }
      const char* v = std::getenv(name.c_str());
      out += v ? v : "";
      continue;
    }
    out += path[i++];
  }
  return out;
}

std::string default_socket_path() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime) return std::string(runtime) + "/mirage/mirage.sock";
  return "/tmp/mirage-" + std::to_string(getuid()) + "/mirage.sock";
}

std::string default_store_path() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state && *state) return std::string(state) + "/mirage/mirage.db";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.local/state/mirage/mirage.db";
}

int parse_signal(const std::string& text) {
  static const std::map<std::string, int> kNames = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
      {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"CONT", SIGCONT}, {"KILL", SIGKILL}};
  std::string t = text;
  if (t.rfind("SIG", 0) == 0) t = t.substr(3);
  if (auto it = kNames.find(t); it != kNames.end()) return it->second;
  if (!t.empty() && t.size() <= 2 && std::all_of(t.begin(), t.end(), ::isdigit)) {
    const int n = std::stoi(t);
    if (n >= 1 && n <= 64) return n;
  }
  return -1;
}

ControllerConfig DaemonConfig::controller_config() const {
  ControllerConfig c;
  c.partition = partition;
  c.account = account;
  c.default_policy = default_policy;
  c.decision_interval = decision_interval;
  c.earliest_submission = earliest_submission;
  c.fallback_lead = fallback_lead;
  c.max_retries = max_retries;
  c.retry_delay = retry_delay;
  c.max_campaigns_per_user = max_campaigns_per_user;
  c.handoff_signal = handoff_signal;
  c.user_id = static_cast<std::uint32_t>(getuid());
  return c;
}

DaemonConfig parse_daemon_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw InputError(
        {name, static_cast<long>(e.source().begin.line), ""},
        std::string(e.description()) + " (column " + std::to_string(e.source().begin.column) + ")");
  }
  DaemonConfig c;
  c.source = name;
  Reader r(name);

  using Section = std::map<std::string, KeyHandler>;
  std::map<std::string, Section> sections;
  sections["cluster"] = {
      {"backend",
       [&](const toml::node& n, const std::string& k) {
         const std::string v = r.string(n, k);
         if (v == "slurm")
           c.backend = Backend::kSlurm;
         else if (v == "simulator")
           c.backend = Backend::kSimulator;
         else
           r.fail(n, k, "expected \"slurm\" or \"simulator\", got " + r.show(n));
       }},
      {"slurm_conf", [&](const toml::node& n,
                         const std::string& k) { c.slurm_conf = expand_path(r.string(n, k)); }},
      {"partition",
       [&](const toml::node& n, const std::string& k) { c.partition = r.string(n, k); }},
      {"account", [&](const toml::node& n, const std::string& k) { c.account = r.string(n, k); }},
  };
  sections["poll"] = {
      {"interval",
       [&](const toml::node& n, const std::string& k) { c.poll_interval = r.duration(n, k, 1); }},
      {"cluster_every",
       [&](const toml::node& n, const std::string& k) { c.cluster_every = r.duration(n, k, 1); }},
      {"backoff_max",
       [&](const toml::node& n, const std::string& k) { c.backoff_max = r.duration(n, k, 1); }},
  };
  sections["simulator"] = {
      {"trace", [&](const toml::node& n,
                    const std::string& k) { c.sim_trace = expand_path(r.string(n, k)); }},
      {"speed", [&](const toml::node& n,
                    const std::string& k) { c.sim_speed = r.number(n, k, 0.001, 1e6); }},
      {"warmup",
       [&](const toml::node& n, const std::string& k) { c.sim_warmup = r.duration(n, k, 0); }},
      {"nodes",
       [&](const toml::node& n, const std::string& k) {
         c.sim_nodes = static_cast<int>(r.integer(n, k, 0, 1 << 20));
       }},
      {"gpus_per_node",
       [&](const toml::node& n, const std::string& k) {
         c.sim_gpus_per_node = static_cast<int>(r.integer(n, k, 0, 1024));
       }},
      {"checkpoint",
       [&](const toml::node& n, const std::string& k) { c.sim_checkpoint = r.duration(n, k, 0); }},
  };
  sections["store"] = {
      {"path", [&](const toml::node& n,
                   const std::string& k) { c.store_path = expand_path(r.string(n, k)); }},
  };
  sections["socket"] = {
      {"path", [&](const toml::node& n,
                   const std::string& k) { c.socket_path = expand_path(r.string(n, k)); }},
      {"max_request_bytes",
       [&](const toml::node& n, const std::string& k) {
         c.max_request_bytes = static_cast<std::size_t>(r.integer(n, k, 1024, 16 << 20));
       }},
      {"max_clients",
       [&](const toml::node& n, const std::string& k) {
         c.max_clients = static_cast<int>(r.integer(n, k, 1, 10000));
       }},
      {"idle_timeout", [&](const toml::node& n,
                           const std::string& k) { c.client_idle_timeout = r.duration(n, k, 1); }},
  };
  sections["policy"] = {
      {"default",
       [&](const toml::node& n, const std::string& k) { c.default_policy = r.string(n, k); }},
      {"decision_interval",
       [&](const toml::node& n, const std::string& k) {
         c.decision_interval = r.duration(n, k, 1);
       }},
      {"fallback_lead",
       [&](const toml::node& n, const std::string& k) { c.fallback_lead = r.duration(n, k, 0); }},
  };
  sections["guard"] = {
      {"max_campaigns_per_user",
       [&](const toml::node& n, const std::string& k) {
         c.max_campaigns_per_user = static_cast<int>(r.integer(n, k, 1, 1000000));
       }},
      {"earliest_submission",
       [&](const toml::node& n, const std::string& k) {
         c.earliest_submission = r.duration(n, k, 0);
       }},
      {"max_retries",
       [&](const toml::node& n, const std::string& k) {
         c.max_retries = static_cast<int>(r.integer(n, k, 0, 1000));
       }},
      {"retry_delay",
       [&](const toml::node& n, const std::string& k) { c.retry_delay = r.duration(n, k, 0); }},
  };
  sections["handoff"] = {
      {"signal",
       [&](const toml::node& n, const std::string& k) {
         int s = -1;
         if (auto i = n.as_integer())
           s = i->get() >= 1 && i->get() <= 64 ? static_cast<int>(i->get()) : -1;
         else if (auto t = n.as_string())
           s = parse_signal(t->get());
         if (s < 0)
           r.fail(n, k, "expected a signal such as \"USR1\", \"SIGTERM\" or 10, got " + r.show(n));
         c.handoff_signal = s;
       }},
      {"grace",
       [&](const toml::node& n, const std::string& k) { c.handoff_grace = r.duration(n, k, 0); }},
  };
  sections["log"] = {
      {"level",
       [&](const toml::node& n, const std::string& k) {
         const std::string v = r.string(n, k);
         static const char* kLevels[] = {"trace", "debug",    "info", "warn",
                                         "error", "critical", "off"};
         if (std::find(std::begin(kLevels), std::end(kLevels), v) == std::end(kLevels))
           r.fail(
               n, k,
               "expected one of trace, debug, info, warn, error, critical, off; got " + r.show(n));
         c.log_level = v;
       }},
      {"file", [&](const toml::node& n,
                   const std::string& k) { c.log_file = expand_path(r.string(n, k)); }},
  };

  auto known = [](const auto& map) {
    std::string s;
    for (const auto& [k, v] : map) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  for (const auto& [key, node] : root) {
    const std::string section(key.str());
    auto it = sections.find(section);
    if (it == sections.end())
      throw InputError({name, static_cast<long>(key.source().begin.line), section},
                       "unknown section (known: " + known(sections) + ")");
    const toml::table* table = node.as_table();
    if (!table)
      r.fail(node, section, "expected a table [" + section + "], got " + r.type_name(node));
    for (const auto& [sub, value] : *table) {
      const std::string full = section + "." + std::string(sub.str());
      auto h = it->second.find(std::string(sub.str()));
      if (h == it->second.end())
        throw InputError({name, static_cast<long>(sub.source().begin.line), full},
                         "unknown key (known in [" + section + "]: " + known(it->second) + ")");
      h->second(value, full);
    }
  }
  if (c.store_path.empty()) c.store_path = default_store_path();
  if (c.socket_path.empty()) c.socket_path = default_socket_path();
  return c;
}

DaemonConfig load_daemon_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError({path, 0, ""}, "cannot read the config file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_daemon_config(ss.str(), path);
}

}  // namespace mirage::daemon
