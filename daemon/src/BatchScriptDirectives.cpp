#include "mirage/daemon/BatchScriptDirectives.h"

#include <charconv>
#include <vector>

#include "mirage/daemon/SlurmClient.h"

namespace mirage::daemon {
namespace {

bool parse_count(std::string_view text, int& out) {
  if (text.empty()) return false;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

// The words of a directive after "#SBATCH", as sbatch splits them: whitespace separates, quotes
// group (and are removed), an unquoted '#' starts a comment.
std::vector<std::string> words_of(std::string_view rest) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (const char c : rest) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

// The options the shape needs, and where the output goes, by their long name; short forms map
// onto them.
constexpr std::string_view kShapeOptions[] = {"nodes", "time", "partition",     "account", "qos",
                                              "gres",  "gpus", "gpus-per-node", "output",  "chdir"};

std::string_view long_name_of_short(char c) {
  switch (c) {
    case 'N': return "nodes";
    case 't': return "time";
    case 'p': return "partition";
    case 'A': return "account";
    case 'q': return "qos";
    case 'G': return "gpus";
    case 'o': return "output";
    case 'D': return "chdir";
    default: return {};
  }
}

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

class DirectiveReader {
 public:
  DirectiveReader(BatchScriptDirectives& out, std::string file) : out_(out), file_(file) {}

  // Applies one option; false (with out_.error set) when its value is malformed.
  bool apply(std::string_view name, const std::optional<std::string>& value, std::string text,
             long line) {
    const std::string field = "#SBATCH --" + std::string(name);
    auto fail = [&](const std::string& what) {
      out_.error = InputError({file_, line, field}, what);
      return false;
    };
    if (!value || value->empty()) return fail("expected a value after " + text);
    const std::string& v = *value;
    if (name == "nodes") {
      const auto dash = v.find('-');
      int lo = 0, hi = 0;
      const bool ok = dash == std::string::npos
                          ? parse_count(v, lo)
                          : parse_count(std::string_view(v).substr(0, dash), lo) &&
                                parse_count(std::string_view(v).substr(dash + 1), hi) && hi >= lo;
      if (!ok || lo < 1) return fail("expected a node count such as 2 or 2-4, got '" + v + "'");
      out_.nodes = ScriptValue<int>{lo, line, text};
    } else if (name == "time") {
      if (v == "UNLIMITED" || v == "unlimited" || v == "INFINITE" || v == "infinite") {
        out_.time_limit = ScriptValue<Seconds>{0, line, text};
        return true;
      }
      const auto d = parse_slurm_duration(v);
      if (!d)
        return fail("expected a time limit such as 2-00:00:00, 48:00:00 or 90 (minutes), got '" +
                    v + "'");
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
      // Other generic resources (licences, shards) are not GPUs: only a gpu entry counts.
      if (v.find("gpu") == std::string::npos) return true;
      out_.gpus = ScriptValue<int>{parse_gpus_per_node(v), line, text};
      out_.gpu_count = GpuCount::kPerNode;
      out_.gpus_by_gres = true;
    } else {  // gpus, gpus-per-node
      int n = 0;
      if (!parse_gpu_count(v, n))
        return fail("expected a GPU count such as 4 or a100:4, got '" + v + "'");
      out_.gpus = ScriptValue<int>{n, line, text};
      out_.gpu_count = name == "gpus" ? GpuCount::kPerJob : GpuCount::kPerNode;
      out_.gpus_by_gres = false;
    }
    return true;
  }

  // One directive line's words; false when one of its values is malformed.
  bool read_words(const std::vector<std::string>& words, long line) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      std::string_view name;
      std::optional<std::string> value;
      bool attached = false;
      if (w.rfind("--", 0) == 0) {
        const auto eq = w.find('=');
        name = std::string_view(w).substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        if (eq != std::string::npos) {
          value = w.substr(eq + 1);
          attached = true;
        }
      } else if (w.size() >= 2 && w[0] == '-') {
        name = long_name_of_short(w[1]);
        if (w.size() > 2) {
          value = w.substr(w[2] == '=' ? 3 : 2);
          attached = true;
        }
      }
      if (name.empty() || !is_shape_option(name)) continue;
      std::string text = w;
      if (!attached && i + 1 < words.size()) {
        value = words[++i];
        text += " " + *value;
      }
      if (!apply(name, value, text, line)) return false;
    }
    return true;
  }

 private:
  BatchScriptDirectives& out_;
  std::string file_;
};

}  // namespace

int BatchScriptDirectives::gpus_per_node(int node_count) const {
  if (!gpus) return 0;
  if (gpu_count == GpuCount::kPerNode) return gpus->value;
  const int n = std::max(1, node_count);
  return (gpus->value + n - 1) / n;
}

BatchScriptDirectives read_batch_directives(std::string_view script, const std::string& file) {
  BatchScriptDirectives out;
  DirectiveReader reader(out, file);
  long line_no = 0;
  while (!script.empty()) {
    const auto nl = script.find('\n');
    std::string_view line = script.substr(0, nl);
    script = nl == std::string_view::npos ? std::string_view{} : script.substr(nl + 1);
    ++line_no;
    if (line_no == 1) {
      if (line.substr(0, 2) != "#!") {
        const std::string head(line.substr(0, 60));
        out.error = InputError({file, 1, ""},
                               "not a batch script: the first line must be #! and an interpreter's "
                               "path, such as #!/bin/bash (sbatch refuses it too); got '" +
                                   head + "'");
        return out;
      }
      continue;
    }
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;  // blank
    if (line[first] != '#') break;  // sbatch reads no directive after the first command
    if (line.substr(0, 7) != "#SBATCH" || line.size() == 7 || (line[7] != ' ' && line[7] != '\t'))
      continue;
    if (!reader.read_words(words_of(line.substr(8)), line_no)) return out;
  }
  if (line_no == 0)
    out.error = InputError({file, 0, ""}, "the script is empty (sbatch refuses it too)");
  return out;
}

}  // namespace mirage::daemon
