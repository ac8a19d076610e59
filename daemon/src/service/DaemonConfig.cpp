#include "mirage/daemon/service/DaemonConfig.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "mirage/core/Error.h"
#include "mirage/core/Text.h"
#include "mirage/core/TomlFile.h"

namespace mirage::daemon {
namespace {

class Reader {
 public:
  // `folder`: where the file's relative paths start (the file's own folder).
  Reader(std::string file, std::filesystem::path folder)
      : file_(std::move(file)), folder_(std::move(folder)) {}

  [[noreturn]] void fail(const toml::node& at, const std::string& key, const std::string& what) {
    throw InputError({file_, toml_line(at), key}, what);
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

  bool boolean(const toml::node& n, const std::string& key) {
    if (auto b = n.as_boolean()) return b->get();
    fail(n, key, "expected true or false, got " + show(n));
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

  Seconds duration(const toml::node& n, const std::string& key, Seconds lo, Seconds hi) {
    Seconds v = -1;
    if (auto i = n.as_integer()) {
      v = i->get();
    } else if (auto s = n.as_string()) {
      const std::string& t = s->get();
      if (auto d = parse_config_duration(t)) v = *d;
      if (v < 0 && parse_config_duration(with_small_numbers(t)))
        fail(n, key, "out of range: " + show(n) + " is more than " + short_duration(hi));
      if (v < 0)
        fail(n, key,
             "expected a duration such as \"30s\", \"10m\", \"12h\", \"2d\" or "
             "\"HH:MM:SS\", got " +
                 show(n));
    } else {
      fail(n, key, "expected a duration such as \"30s\" or 30 (seconds), got " + show(n));
    }
    if (v < lo) fail(n, key, "expected at least " + short_duration(lo) + ", got " + show(n));
    if (v > hi) fail(n, key, "expected at most " + short_duration(hi) + ", got " + show(n));
    return v;
  }

  // A path with ~ and $VARS expanded; an unset variable is an error at this key. A relative path
  // starts at the config file's folder, not at the working directory of whichever command reads
  // the file (`campaign add` in a project, scrontab's `mirage tick` elsewhere).
  std::string path(const toml::node& n, const std::string& key) {
    std::string p;
    try {
      p = expand_path(string(n, key));
    } catch (const InputError& e) {
      fail(n, key, e.message());
    }
    if (p.empty() || std::filesystem::path(p).is_absolute()) return p;
    const std::filesystem::path here = (folder_ / p).lexically_normal();
    // Where the same line meant until relative paths started at the config's folder: a store (or
    // log, socket) found there and not here would be left for a new, empty one.
    std::error_code ec;
    const std::filesystem::path before = std::filesystem::absolute(p, ec).lexically_normal();
    if (!ec && before != here && std::filesystem::exists(before, ec) &&
        !std::filesystem::exists(here, ec))
      fail(n, key,
           "\"" + p + "\" starts at the config file's folder, " + here.string() +
               ", where nothing is, while " + before.string() +
               " (where it started before: the working directory) exists; write the path you "
               "mean in full");
    return here.string();
  }

 private:
  static std::optional<Seconds> parse_config_duration(const std::string& t) {
    if (t == "0") return 0;
    if (auto d = parse_short_duration(t)) return d;
    if (t.find(':') != std::string::npos || t.find('-') != std::string::npos)
      return parse_slurm_duration(t);
    return std::nullopt;
  }

  // Each run of digits as "1": a duration that parses only so was well formed but too large.
  static std::string with_small_numbers(const std::string& t) {
    std::string out;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const bool digit = std::isdigit(static_cast<unsigned char>(t[i]));
      if (!digit || i == 0 || !std::isdigit(static_cast<unsigned char>(t[i - 1])))
        out += digit ? '1' : t[i];
    }
    return out;
  }

  // 3600 -> "1h", 90 -> "90s": the bounds as the file would write them.
  static std::string short_duration(Seconds s) {
    if (s > 0 && s % kDay == 0) return std::to_string(s / kDay) + "d";
    if (s > 0 && s % kHour == 0) return std::to_string(s / kHour) + "h";
    if (s > 0 && s % kMinute == 0) return std::to_string(s / kMinute) + "m";
    return std::to_string(s) + "s";
  }

  std::string file_;
  std::filesystem::path folder_;
};

using KeyHandler = std::function<void(const toml::node&, const std::string&)>;

// "section.key" for a "key = value" on `line`, so that a value toml++ itself refuses (an integer
// beyond 64 bits) is named like every other; empty when the line holds no plain assignment.
std::string key_on_line(const std::string& text, long line) {
  std::istringstream in(text);
  std::string l, section;
  for (long i = 1; std::getline(in, l); ++i) {
    l = std::string(trim(l));
    if (i < line) {
      if (l.size() > 2 && l.front() == '[' && l[1] != '[' && l.find(']') != std::string::npos)
        section = std::string(trim(std::string_view(l).substr(1, l.find(']') - 1)));
      continue;
    }
    const std::string key(trim(std::string_view(l).substr(0, l.find('='))));
    const bool plain = l.find('=') != std::string::npos && !key.empty() &&
                       std::all_of(key.begin(), key.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
                       });
    if (!plain) return "";
    return section.empty() ? key : section + "." + key;
  }
  return "";
}

}  // namespace

std::string expand_path(const std::string& path) {
  // An unset or empty variable would turn "$XDG_STATE_HOME/mirage.db" into "/mirage.db".
  auto value_of = [&](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v)
      throw InputError({}, "$" + name + " is not set (or is empty) in \"" + path + "\"");
    return std::string(v);
  };
  std::string out;
  std::size_t i = 0;
  if (path.rfind("~/", 0) == 0 || path == "~") {
    out = value_of("HOME");
    i = 1;
  }
  while (i < path.size()) {
    if (path[i] == '$' && i + 1 < path.size() && path[i + 1] == '{') {
      const auto close = path.find('}', i + 2);
      if (close == std::string::npos) throw InputError({}, "unterminated ${ in \"" + path + "\"");
      out += value_of(path.substr(i + 2, close - i - 2));
      i = close + 1;
      continue;
    }
    if (path[i] == '$') {
      std::size_t j = i + 1;
      while (j < path.size() &&
             (std::isalnum(static_cast<unsigned char>(path[j])) || path[j] == '_'))
        ++j;
      if (j > i + 1) {  // $NAME; a '$' followed by no name is kept as it is
        out += value_of(path.substr(i + 1, j - i - 1));
        i = j;
        continue;
      }
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
  c.frontier_file = frontier_file;
  c.wait_distribution_file = wait_distribution_file;
  c.decision_interval = decision_interval;
  c.earliest_submission = earliest_submission;
  c.fallback_lead = fallback_lead;
  c.fallback_chain = fallback_chain;
  c.max_retries = max_retries;
  c.retry_delay = retry_delay;
  c.max_campaigns_per_user = max_campaigns_per_user;
  c.handoff_signal = handoff_signal;
  c.handoff_grace = handoff_grace;
  c.tick_interval = poll_interval;
  c.user_id = static_cast<std::uint32_t>(getuid());
  c.time_limit_required = backend == Backend::kSimulator;
  return c;
}

DaemonConfig parse_daemon_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    const long line = static_cast<long>(e.source().begin.line);
    throw InputError(
        {name, line, key_on_line(text, line)},
        std::string(e.description()) + " (column " + std::to_string(e.source().begin.column) + ")");
  }
  DaemonConfig c;
  c.source = name;
  std::error_code ec;  // no working directory: relative paths stay as written
  Reader r(name, std::filesystem::absolute(name, ec).parent_path());

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
      {"slurm_conf",
       [&](const toml::node& n, const std::string& k) { c.slurm_conf = r.path(n, k); }},
      {"sbatch", [&](const toml::node& n, const std::string& k) { c.sbatch = r.path(n, k); }},
      {"sbatch_timeout",
       [&](const toml::node& n, const std::string& k) {
         c.sbatch_timeout = r.duration(n, k, 1, kHour);
       }},
      {"partition",
       [&](const toml::node& n, const std::string& k) { c.partition = r.string(n, k); }},
      {"account", [&](const toml::node& n, const std::string& k) { c.account = r.string(n, k); }},
  };
  sections["poll"] = {
      {"interval", [&](const toml::node& n,
                       const std::string& k) { c.poll_interval = r.duration(n, k, 1, kHour); }},
      {"cluster_every", [&](const toml::node& n,
                            const std::string& k) { c.cluster_every = r.duration(n, k, 1, kDay); }},
      {"backoff_max", [&](const toml::node& n,
                          const std::string& k) { c.backoff_max = r.duration(n, k, 1, kDay); }},
  };
  sections["simulator"] = {
      {"trace", [&](const toml::node& n, const std::string& k) { c.sim_trace = r.path(n, k); }},
      {"calibration",
       [&](const toml::node& n, const std::string& k) {
         const std::string v = r.string(n, k);
         c.sim_calibration = v == "none" || v == "infer" || v == "auto" ? v : r.path(n, k);
       }},
      {"speed", [&](const toml::node& n,
                    const std::string& k) { c.sim_speed = r.number(n, k, 0.001, 1e6); }},
      {"warmup", [&](const toml::node& n,
                     const std::string& k) { c.sim_warmup = r.duration(n, k, 0, 3650 * kDay); }},
      {"nodes",
       [&](const toml::node& n, const std::string& k) {
         c.sim_nodes = static_cast<int>(r.integer(n, k, 0, 1 << 20));
       }},
      {"gpus_per_node",
       [&](const toml::node& n, const std::string& k) {
         c.sim_gpus_per_node = static_cast<int>(r.integer(n, k, 0, 1024));
       }},
      {"checkpoint", [&](const toml::node& n,
                         const std::string& k) { c.sim_checkpoint = r.duration(n, k, 0, kDay); }},
  };
  sections["store"] = {
      {"path", [&](const toml::node& n, const std::string& k) { c.store_path = r.path(n, k); }},
  };
  sections["socket"] = {
      {"path", [&](const toml::node& n, const std::string& k) { c.socket_path = r.path(n, k); }},
      {"max_request_bytes",
       [&](const toml::node& n, const std::string& k) {
         c.max_request_bytes = static_cast<std::size_t>(r.integer(n, k, 1024, 16 << 20));
       }},
      {"max_clients",
       [&](const toml::node& n, const std::string& k) {
         c.max_clients = static_cast<int>(r.integer(n, k, 1, 10000));
       }},
      {"idle_timeout",
       [&](const toml::node& n, const std::string& k) {
         c.client_idle_timeout = r.duration(n, k, 1, kDay);
       }},
  };
  sections["policy"] = {
      {"default",
       [&](const toml::node& n, const std::string& k) { c.default_policy = r.string(n, k); }},
      {"frontier",
       [&](const toml::node& n, const std::string& k) { c.frontier_file = r.path(n, k); }},
      {"wait_distribution",
       [&](const toml::node& n, const std::string& k) { c.wait_distribution_file = r.path(n, k); }},
      {"decision_interval",
       [&](const toml::node& n, const std::string& k) {
         c.decision_interval = r.duration(n, k, 1, kDay);
       }},
      {"fallback_lead",
       [&](const toml::node& n, const std::string& k) {
         c.fallback_lead = r.duration(n, k, 0, 30 * kDay);
       }},
      {"fallback_chain",
       [&](const toml::node& n, const std::string& k) { c.fallback_chain = r.boolean(n, k); }},
  };
  sections["guard"] = {
      {"max_campaigns_per_user",
       [&](const toml::node& n, const std::string& k) {
         c.max_campaigns_per_user = static_cast<int>(r.integer(n, k, 1, 1000000));
       }},
      {"earliest_submission",
       [&](const toml::node& n, const std::string& k) {
         c.earliest_submission = r.duration(n, k, 0, 365 * kDay);
       }},
      {"max_retries",
       [&](const toml::node& n, const std::string& k) {
         c.max_retries = static_cast<int>(r.integer(n, k, 0, 1000));
       }},
      {"retry_delay", [&](const toml::node& n,
                          const std::string& k) { c.retry_delay = r.duration(n, k, 0, kDay); }},
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
      {"grace", [&](const toml::node& n,
                    const std::string& k) { c.handoff_grace = r.duration(n, k, 0, 7 * kDay); }},
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
      {"file", [&](const toml::node& n, const std::string& k) { c.log_file = r.path(n, k); }},
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
