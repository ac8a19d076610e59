#include "mirage/daemon/slurm/BatchScriptDirectives.h"

#include <charconv>
#include <vector>

#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {
namespace {

bool parse_count(std::string_view text, int& out) {
  if (text.empty()) return false;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

// The releases an option exists in, as bits.
enum Release : unsigned { k2205 = 1, k2302 = 2, k2311 = 4, k2405 = 8, k2411 = 16, kAll = 31 };
constexpr int kReleases = 5;

enum class Arg { kNone, kRequired, kOptional };

struct SbatchOption {
  std::string_view name;
  Arg arg;
  char short_name;  // 0: none
  unsigned releases = kAll;
};

// sbatch's options: those of Slurm's src/common/slurm_opt.c (common_options with set_func or
// set_func_sbatch) in each release from 22.05 to 24.11, where sbatch refuses any other. Then the
// pyxis SPANK plugin's, which GPU clusters commonly add to sbatch; other plugins' are refused.
constexpr SbatchOption kSbatchOptions[] = {
    {"account", Arg::kRequired, 'A'},
    {"acctg-freq", Arg::kRequired, 0},
    {"array", Arg::kRequired, 'a'},
    {"autocomplete", Arg::kRequired, 0, k2302 | k2311 | k2405 | k2411},
    {"batch", Arg::kRequired, 0},
    {"bb", Arg::kRequired, 0},
    {"bbf", Arg::kRequired, 0},
    {"begin", Arg::kRequired, 'b'},
    {"chdir", Arg::kRequired, 'D'},
    {"cluster", Arg::kRequired, 0},
    {"cluster-constraint", Arg::kRequired, 0},
    {"clusters", Arg::kRequired, 'M'},
    {"comment", Arg::kRequired, 0},
    {"constraint", Arg::kRequired, 'C'},
    {"container", Arg::kRequired, 0},
    {"container-id", Arg::kRequired, 0, k2302 | k2311 | k2405 | k2411},
    {"context", Arg::kRequired, 0},
    {"contiguous", Arg::kNone, 0},
    {"core-spec", Arg::kRequired, 'S'},
    {"cores-per-socket", Arg::kRequired, 0},
    {"cpu-freq", Arg::kRequired, 0},
    {"cpus-per-gpu", Arg::kRequired, 0},
    {"cpus-per-task", Arg::kRequired, 'c'},
    {"deadline", Arg::kRequired, 0},
    {"delay-boot", Arg::kRequired, 0},
    {"dependency", Arg::kRequired, 'd'},
    {"distribution", Arg::kRequired, 'm'},
    {"error", Arg::kRequired, 'e'},
    {"exclude", Arg::kRequired, 'x'},
    {"exclusive", Arg::kOptional, 0},
    {"export", Arg::kRequired, 0},
    {"export-file", Arg::kRequired, 0, k2205 | k2302 | k2405 | k2411},
    {"extra", Arg::kRequired, 0, k2302 | k2311 | k2405 | k2411},
    {"extra-node-info", Arg::kRequired, 'B'},
    {"get-user-env", Arg::kOptional, 0},
    {"gid", Arg::kRequired, 0},
    {"gpu-bind", Arg::kRequired, 0},
    {"gpu-freq", Arg::kRequired, 0},
    {"gpus", Arg::kRequired, 'G'},
    {"gpus-per-node", Arg::kRequired, 0},
    {"gpus-per-socket", Arg::kRequired, 0},
    {"gpus-per-task", Arg::kRequired, 0},
    {"gres", Arg::kRequired, 0},
    {"gres-flags", Arg::kRequired, 0},
    {"help", Arg::kNone, 'h'},
    {"hint", Arg::kRequired, 0},
    {"hold", Arg::kNone, 'H'},
    {"ignore-pbs", Arg::kNone, 0},
    {"input", Arg::kRequired, 'i'},
    {"job-name", Arg::kRequired, 'J'},
    {"kill-on-invalid-dep", Arg::kRequired, 0},
    {"licenses", Arg::kRequired, 'L'},
    {"mail-type", Arg::kRequired, 0},
    {"mail-user", Arg::kRequired, 0},
    {"mcs-label", Arg::kRequired, 0},
    {"mem", Arg::kRequired, 0},
    {"mem-bind", Arg::kRequired, 0},
    {"mem-per-cpu", Arg::kRequired, 0},
    {"mem-per-gpu", Arg::kRequired, 0},
    {"mincpus", Arg::kRequired, 0},
    {"network", Arg::kRequired, 0},
    {"nice", Arg::kOptional, 0},
    {"no-kill", Arg::kOptional, 'k'},
    {"no-requeue", Arg::kNone, 0},
    {"nodefile", Arg::kRequired, 'F'},
    {"nodelist", Arg::kRequired, 'w'},
    {"nodes", Arg::kRequired, 'N'},
    {"ntasks", Arg::kRequired, 'n'},
    {"ntasks-per-core", Arg::kRequired, 0},
    {"ntasks-per-gpu", Arg::kRequired, 0},
    {"ntasks-per-node", Arg::kRequired, 0},
    {"ntasks-per-socket", Arg::kRequired, 0},
    {"ntasks-per-tres", Arg::kRequired, 0},
    {"oom-kill-step", Arg::kOptional, 0, k2411},
    {"open-mode", Arg::kRequired, 0},
    {"output", Arg::kRequired, 'o'},
    {"overcommit", Arg::kNone, 'O'},
    {"oversubscribe", Arg::kNone, 's'},
    {"parsable", Arg::kNone, 0},
    {"partition", Arg::kRequired, 'p'},
    {"power", Arg::kRequired, 0, k2205 | k2302 | k2311},
    {"prefer", Arg::kRequired, 0},
    {"priority", Arg::kRequired, 0},
    {"profile", Arg::kRequired, 0},
    {"propagate", Arg::kOptional, 0},
    {"qos", Arg::kRequired, 'q'},
    {"quiet", Arg::kNone, 'Q'},
    {"reboot", Arg::kNone, 0},
    {"requeue", Arg::kNone, 0},
    {"reservation", Arg::kRequired, 0},
    {"resv-ports", Arg::kOptional, 0, k2405 | k2411},
    {"segment", Arg::kRequired, 0, k2405 | k2411},
    {"signal", Arg::kRequired, 0},
    {"sockets-per-node", Arg::kRequired, 0},
    {"spread-job", Arg::kNone, 0},
    {"stepmgr", Arg::kNone, 0, k2405 | k2411},
    {"switches", Arg::kRequired, 0},
    {"tasks-per-node", Arg::kRequired, 0},
    {"test-only", Arg::kNone, 0},
    {"thread-spec", Arg::kRequired, 0},
    {"threads-per-core", Arg::kRequired, 0},
    {"time", Arg::kRequired, 't'},
    {"time-min", Arg::kRequired, 0},
    {"tmp", Arg::kRequired, 0},
    {"tres-bind", Arg::kRequired, 0, k2311 | k2405 | k2411},
    {"tres-per-task", Arg::kRequired, 0, k2302 | k2311 | k2405 | k2411},
    {"uid", Arg::kRequired, 0},
    {"usage", Arg::kNone, 0},
    {"use-min-nodes", Arg::kNone, 0},
    {"verbose", Arg::kNone, 'v'},
    {"version", Arg::kNone, 'V'},
    {"wait", Arg::kNone, 'W'},
    {"wait-all-nodes", Arg::kRequired, 0},
    {"wckey", Arg::kRequired, 0},
    {"wrap", Arg::kRequired, 0},
    {"container-image", Arg::kRequired, 0},
    {"container-mounts", Arg::kRequired, 0},
    {"container-workdir", Arg::kRequired, 0},
    {"container-name", Arg::kRequired, 0},
    {"container-save", Arg::kRequired, 0},
    {"container-mount-home", Arg::kNone, 0},
    {"no-container-mount-home", Arg::kNone, 0},
    {"container-remap-root", Arg::kNone, 0},
    {"no-container-remap-root", Arg::kNone, 0},
    {"container-entrypoint", Arg::kNone, 0},
    {"no-container-entrypoint", Arg::kNone, 0},
    {"container-entrypoint-log", Arg::kNone, 0},
    {"container-writable", Arg::kNone, 0},
    {"container-readonly", Arg::kNone, 0},
    {"container-env", Arg::kRequired, 0},
};

const SbatchOption* short_option(char c) {
  for (const auto& o : kSbatchOptions)
    if (o.short_name == c) return &o;
  return nullptr;
}

// A long option as getopt_long finds it in one release: the exact name, else the one option it
// abbreviates.
const SbatchOption* long_option_in(std::string_view name, unsigned release) {
  const SbatchOption* found = nullptr;
  int prefixed = 0;
  for (const auto& o : kSbatchOptions) {
    if (!(o.releases & release) || o.name.substr(0, name.size()) != name) continue;
    if (o.name.size() == name.size()) return &o;
    found = &o;
    ++prefixed;
  }
  return prefixed == 1 ? found : nullptr;
}

// The option `name` (after "--") names in some release, the latest such; nullptr when none.
const SbatchOption* long_option(std::string_view name) {
  for (int r = kReleases - 1; r >= 0; --r)
    if (const auto* o = long_option_in(name, 1u << r)) return o;
  return nullptr;
}

// The options an ambiguous abbreviation could mean, e.g. "--time, --time-min".
std::string candidates_of(std::string_view name) {
  std::string out;
  for (const auto& o : kSbatchOptions)
    if (o.name.substr(0, name.size()) == name)
      out += (out.empty() ? "--" : ", --") + std::string(o.name);
  return out;
}

// Stands for "hetjob" in the words of the directives (no word holds a NUL: the script has none).
constexpr std::string_view kHetJobSeparator("\0hetjob", 7);

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool starts_with_word(std::string_view s, std::string_view word) {
  if (s.size() < word.size() || (s.size() > word.size() && !is_space(s[word.size()]))) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if ((s[i] | 0x20) != word[i]) return false;
  return true;
}

// The words of a directive after its magic word, as sbatch's get_argument splits them:
// whitespace separates, quotes group (and are removed), a backslash escapes the next character,
// and a '#' neither quoted nor escaped ends the line, even inside a word. An empty word ("")
// ends the line too. "hetjob" (or the old "packjob") ends it as well; first on the line, it
// separates the components of a heterogeneous job. Returns the quote left open, or 0.
char split_directive(std::string_view rest, std::vector<std::string>& out) {
  std::size_t i = 0;
  for (bool first = true;; first = false) {
    while (i < rest.size() && is_space(rest[i])) ++i;
    if (i == rest.size()) return 0;
    if (starts_with_word(rest.substr(i), "hetjob") || starts_with_word(rest.substr(i), "packjob")) {
      if (first) out.emplace_back(kHetJobSeparator);
      return 0;
    }
    std::string word;
    char quote = 0;
    bool escaped = false;
    for (; i < rest.size() && (quote || !is_space(rest[i])); ++i) {
      const char c = rest[i];
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
        continue;
      } else if (quote) {
        if (c == quote) {
          quote = 0;
          continue;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
        continue;
      } else if (c == '#') {
        break;
      }
      word += c;
    }
    if (quote) return quote;
    if (word.empty()) return 0;
    out.push_back(std::move(word));
    if (i < rest.size() && rest[i] == '#') return 0;
  }
}

// The options the shape needs, and where the output goes, by their long name.
constexpr std::string_view kShapeOptions[] = {"nodes", "time", "partition",     "account", "qos",
                                              "gres",  "gpus", "gpus-per-node", "output",  "chdir"};

bool is_shape_option(std::string_view name) {
  for (const auto o : kShapeOptions)
    if (o == name) return true;
  return false;
}

// "[type:]N" of --gpus and --gpus-per-node.
bool parse_gpu_count(std::string_view text, int& out) {
  const auto colon = text.rfind(':');
  return parse_count(colon == std::string_view::npos ? text : text.substr(colon + 1), out) &&
         out >= 0;
}

constexpr std::string_view kRefused = "sbatch would refuse the script";

// The options with which sbatch prints something, submits nothing and exits 0.
bool submits_nothing(std::string_view name) {
  return name == "test-only" || name == "help" || name == "usage" || name == "version";
}

// The directive words in order, as sbatch's getopt_long reads them ("+": it stops at the first
// word that is no option, and sbatch then refuses the script naming it). An option's value may
// be the next word, on the next directive line too.
class DirectiveReader {
 public:
  DirectiveReader(BatchScriptDirectives& out, std::string file) : out_(out), file_(file) {}

  // False (with out_.error set) when the word makes the script one sbatch refuses.
  bool word(const std::string& w, long line) {
    if (w == kHetJobSeparator) {
      if (!finish_component()) return false;
      if (!out_.not_one_local_job)
        out_.not_one_local_job = ScriptValue<std::string>{"hetjob", line, "hetjob"};
      first_component_ = false;
      return true;
    }
    if (pending_) {
      const Pending p = std::move(*pending_);
      pending_.reset();
      return apply(p.name, w, p.text + " " + w, p.line);
    }
    if (ended_ || w.size() < 2 || w[0] != '-')
      return fail(line, "#SBATCH",
                  "'" + w + "' is not an option: " + std::string(kRefused) +
                      " (\"Invalid directive found in batch script: " + w +
                      "\"); commands belong after the #SBATCH lines");
    if (w == "--") {
      ended_ = true;
      return true;
    }
    if (w[1] == '-') return long_word(w, line);
    return short_word(w, line);
  }

  // At the end of the directives: an option still waiting for its value has none.
  bool finish_component() {
    ended_ = false;
    if (!pending_) return true;
    const Pending p = std::move(*pending_);
    pending_.reset();
    return fail(p.line, "#SBATCH --" + p.name, "expected a value after " + p.text);
  }

 private:
  struct Pending {
    std::string name;  // the long name
    std::string text;  // as written
    long line;
  };

  bool fail(long line, const std::string& field, const std::string& what) {
    out_.error = InputError({file_, line, field}, what);
    return false;
  }

  bool long_word(const std::string& w, long line) {
    const auto eq = w.find('=');
    const std::string given = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const SbatchOption* o = given.empty() ? nullptr : long_option(given);
    if (!o) {
      const std::string field = "#SBATCH --" + given;
      const std::string could = given.empty() ? "" : candidates_of(given);
      if (!could.empty())
        return fail(line, field,
                    "--" + given + " is ambiguous (" + could + "): " + std::string(kRefused));
      return fail(line, field,
                  "unknown option --" + given + ": no sbatch from Slurm 22.05 to 24.11 has it, " +
                      std::string(kRefused) + " (\"unrecognized option\")");
    }
    const std::string name(o->name);
    note_submits_nothing(name, w, line);
    if (eq != std::string::npos) {
      if (o->arg == Arg::kNone)
        return fail(line, "#SBATCH --" + name,
                    "--" + name + " takes no value, got '" + w + "': " + std::string(kRefused));
      return apply(name, w.substr(eq + 1), w, line);
    }
    if (o->arg == Arg::kRequired) pending_ = Pending{name, w, line};
    return true;
  }

  // "-N2", "-N 2", or flags run together ("-HQ").
  bool short_word(const std::string& w, long line) {
    for (std::size_t i = 1; i < w.size(); ++i) {
      const SbatchOption* o = short_option(w[i]);
      if (!o)
        return fail(line, "#SBATCH -" + std::string(1, w[i]),
                    "unknown option -" + std::string(1, w[i]) + " in '" + w +
                        "': no sbatch from Slurm 22.05 to 24.11 has it, " + std::string(kRefused) +
                        " (\"invalid option\")");
      const std::string name(o->name);
      note_submits_nothing(name, w, line);
      if (o->arg == Arg::kNone) continue;
      if (i + 1 < w.size() && w[i + 1] == '=') return equals_after_short(w, i, name, line);
      if (i + 1 < w.size()) return apply(name, w.substr(i + 1), w, line);
      if (o->arg == Arg::kRequired) pending_ = Pending{name, w, line};
      return true;
    }
    return true;
  }

  // "-N=2": getopt takes all that follows -N as its value, "=2" with its '=', which sbatch then
  // refuses ("-t=1:00:00") or keeps ("-J=x" names the job "=x"): never what was meant.
  bool equals_after_short(const std::string& w, std::size_t at, const std::string& name,
                          long line) {
    const std::string opt = std::string("-") + w[at], value = w.substr(at + 2);
    const std::string spelled = short_option(w[at])->arg == Arg::kRequired
                                    ? opt + " " + value + ", " + opt + value
                                    : opt + value;
    if (!out_.short_option_with_equals)
      out_.short_option_with_equals = InputError(
          {file_, line, "#SBATCH " + opt},
          "'" + w + "': sbatch reads what follows " + opt + ", '" + w.substr(at + 1) +
              "' with its '=', as the value; write " + spelled + " or --" + name + "=" + value);
    return true;
  }

  void note_submits_nothing(const std::string& name, const std::string& text, long line) {
    if (submits_nothing(name) && !out_.submits_nothing)
      out_.submits_nothing = ScriptValue<std::string>{name, line, text};
    if (name == "wait" && !out_.waits_for_the_job)
      out_.waits_for_the_job = ScriptValue<std::string>{name, line, text};
    if ((name == "hold" || name == "dependency") && !out_.held_or_dependent)
      out_.held_or_dependent = ScriptValue<std::string>{name, line, text};
  }

  // Applies one option's value; false (with out_.error set) when the shape cannot use it.
  bool apply(const std::string& name, const std::string& v, const std::string& text, long line) {
    if ((name == "array" || name == "clusters") && !out_.not_one_local_job)
      out_.not_one_local_job = ScriptValue<std::string>{name, line, text};
    if (name == "export" && first_component_)  // the last one wins, as in sbatch
      out_.export_env = ScriptValue<std::string>{v, line, text};
    if (!first_component_ || !is_shape_option(name)) return true;
    const std::string field = "#SBATCH --" + name;
    auto bad = [&](const std::string& what) { return fail(line, field, what); };
    if (v.empty()) return bad("expected a value after " + text);
    if (name == "nodes") {
      const auto dash = v.find('-');
      int lo = 0, hi = 0;
      const bool ok = dash == std::string::npos
                          ? parse_count(v, lo)
                          : parse_count(std::string_view(v).substr(0, dash), lo) &&
                                parse_count(std::string_view(v).substr(dash + 1), hi) && hi >= lo;
      if (!ok || lo < 1) return bad("expected a node count such as 2 or 2-4, got '" + v + "'");
      out_.nodes = ScriptValue<int>{lo, line, text};
    } else if (name == "time") {
      if (v == "UNLIMITED" || v == "unlimited" || v == "INFINITE" || v == "infinite") {
        out_.time_limit = ScriptValue<Seconds>{0, line, text};
        return true;
      }
      const auto d = parse_slurm_duration(v);
      if (!d)
        return bad("expected a time limit such as 2-00:00:00, 48:00:00 or 90 (minutes), got '" + v +
                   "'");
      out_.time_limit = ScriptValue<Seconds>{*d, line, text};
    } else if (name == "partition") {
      out_.partition = ScriptValue<std::string>{v, line, text};
    } else if (name == "account") {
      out_.account = ScriptValue<std::string>{v, line, text};
    } else if (name == "qos") {
      out_.qos = ScriptValue<std::string>{v, line, text};
    } else if (name == "output") {
      out_.output = ScriptValue<std::string>{v, line, text};
    } else if (name == "chdir") {
      out_.chdir = ScriptValue<std::string>{v, line, text};
    } else if (name == "gres") {
      // sbatch's later --gres replaces the earlier list whole, the GPUs it named with it.
      if (out_.gpus_by_gres) {
        out_.gpus.reset();
        out_.gpus_by_gres = false;
        out_.gpu_request.clear();
      }
      // Other generic resources (licences, shards) are not GPUs: only a gpu entry counts.
      if (v.find("gpu") == std::string::npos) return true;
      out_.gpus = ScriptValue<int>{parse_gpus_per_node(v), line, text};
      out_.gpu_count = GpuCount::kPerNode;
      out_.gpus_by_gres = true;
      out_.gpu_request = v;
    } else {  // gpus, gpus-per-node
      int n = 0;
      if (!parse_gpu_count(v, n))
        return bad("expected a GPU count such as 4 or a100:4, got '" + v + "'");
      out_.gpus = ScriptValue<int>{n, line, text};
      out_.gpu_count = name == "gpus" ? GpuCount::kPerJob : GpuCount::kPerNode;
      out_.gpus_by_gres = false;
      out_.gpu_request = v;
    }
    return true;
  }

  BatchScriptDirectives& out_;
  std::string file_;
  std::optional<Pending> pending_;
  bool ended_ = false;           // after "--": any further word is refused
  bool first_component_ = true;  // the shape is the first component's
};

// The 1-based line of byte `at`.
long line_of(std::string_view script, std::size_t at) {
  long n = 1;
  for (std::size_t i = 0; i < at; ++i) n += script[i] == '\n';
  return n;
}

}  // namespace

std::optional<InputError> script_size_problem(const std::string& file, std::uintmax_t size) {
  if (size <= kMaxScriptBytes) return std::nullopt;
  return InputError({file, 0, ""},
                    "the script is " + std::to_string(size) + " bytes, over the limit of " +
                        std::to_string(kMaxScriptBytes) +
                        " bytes (4 MiB, Slurm's default SchedulerParameters=max_script_size): "
                        "slurmctld would refuse it");
}

int BatchScriptDirectives::gpus_per_node(int node_count) const {
  if (!gpus) return 0;
  if (gpu_count == GpuCount::kPerNode) return gpus->value;
  const int n = std::max(1, node_count);
  return (gpus->value + n - 1) / n;
}

BatchScriptDirectives read_batch_directives(std::string_view script, const std::string& file) {
  BatchScriptDirectives out;
  if (script.empty()) {
    out.error = InputError({file, 0, ""}, "the script is empty (sbatch refuses it too)");
    return out;
  }
  if (script.substr(0, 2) != "#!") {
    const std::string head(script.substr(0, std::min(script.find('\n'), std::size_t{60})));
    out.error = InputError({file, 1, ""},
                           "not a batch script: the first line must be #! and an interpreter's "
                           "path, such as #!/bin/bash (sbatch refuses it too); got '" +
                               head + "'");
    return out;
  }
  // As sbatch checks the whole script before it reads a directive.
  if (const auto nul = script.find('\0'); nul != std::string_view::npos) {
    out.error = InputError(
        {file, line_of(script, nul), ""},
        "the script holds a NUL byte: " + std::string(kRefused) + " (slurmctld allows none)");
    return out;
  }
  if (const auto crlf = script.find("\r\n"); crlf != std::string_view::npos) {
    out.error = InputError({file, line_of(script, crlf), ""},
                           "DOS line breaks (\\r\\n) from this line: " + std::string(kRefused) +
                               " (\"Batch script contains DOS line breaks\"); convert it with "
                               "dos2unix");
    return out;
  }
  DirectiveReader reader(out, file);
  long line_no = 1;
  script.remove_prefix(std::min(script.find('\n'), script.size()));  // the shebang
  while (!script.empty()) {
    script.remove_prefix(1);  // '\n'
    const auto nl = script.find('\n');
    const std::string_view line = script.substr(0, nl);
    script = nl == std::string_view::npos ? std::string_view{} : script.substr(nl);
    ++line_no;
    std::string_view rest;
    if (line.substr(0, 7) == "#SBATCH") {
      rest = line.substr(7);
    } else if (line.substr(0, 6) == "#SLURM") {  // the old word, still read
      rest = line.substr(6);
    } else {
      const auto first = line.find_first_not_of(" \t\v\f\r");
      if (first != std::string_view::npos && line[first] != '#')
        break;  // sbatch reads no directive after the first command
      continue;
    }
    std::vector<std::string> words;
    if (const char quote = split_directive(rest, words)) {
      out.error = InputError({file, line_no, "#SBATCH"}, std::string("unmatched ") + quote +
                                                             " in '" + std::string(line) +
                                                             "': " + std::string(kRefused));
      return out;
    }
    for (const auto& w : words)
      if (!reader.word(w, line_no)) return out;
  }
  reader.finish_component();
  return out;
}

std::vector<ScriptValue<std::string>> pbs_and_bsub_lines(std::string_view script) {
  std::vector<ScriptValue<std::string>> out;
  int non_comments = 0;
  long line_no = 0;
  while (!script.empty()) {
    const auto nl = script.find('\n');
    const std::string_view line = script.substr(0, nl);
    script = nl == std::string_view::npos ? std::string_view{} : script.substr(nl + 1);
    ++line_no;
    if (line.substr(0, 4) == "#PBS" || line.substr(0, 5) == "#BSUB") {
      out.push_back({std::string(line), line_no, std::string(line)});
    } else if (line.empty() || line[0] != '#') {
      // As xlate.c counts: a blank line too.
      if (++non_comments > 100) break;
    }
  }
  return out;
}

}  // namespace mirage::daemon
