#include "mirage/daemon/slurm/SegmentShape.h"

namespace mirage::daemon {
namespace {

template <typename T>
void note_override(std::vector<std::string>& notes, const std::string& flag,
                   const std::string& flag_value, const std::optional<ScriptValue<T>>& directive,
                   bool differs, const std::string& script_name) {
  if (!directive || !differs) return;
  notes.push_back(flag + " " + flag_value + " overrides '#SBATCH " + directive->text + "' (" +
                  script_name + ":" + std::to_string(directive->line) + "): the flag wins");
}

// A text flag over its directive: the value, the option and the note.
void resolve_text(const std::optional<std::string>& flag,
                  const std::optional<ScriptValue<std::string>>& directive, const char* name,
                  const std::string& script_name, std::string& value, SegmentShape& out) {
  if (!flag) {
    if (directive) value = directive->value;
    return;
  }
  value = *flag;
  out.sbatch_options.push_back(std::string("--") + name + "=" + *flag);
  note_override(out.notes, std::string("--") + name, *flag, directive,
                directive && directive->value != *flag, script_name);
}

bool is_count(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// One GPU entry ("gpu:a100:4", "gpu", "a100:8", "8") asking for `n`: its count replaced, or
// added after its name or type. A socket suffix ("gpu:a100:4(S:0-1)") stays after the count.
std::string entry_with_count(std::string_view entry, int n) {
  const auto paren = entry.find('(');
  const std::string_view suffix = paren == std::string_view::npos ? "" : entry.substr(paren);
  entry = entry.substr(0, paren);
  const auto colon = entry.rfind(':');
  const std::string_view last = colon == std::string_view::npos ? entry : entry.substr(colon + 1);
  if (is_count(last))
    return std::string(entry.substr(0, entry.size() - last.size())) + std::to_string(n) +
           std::string(suffix);
  return std::string(entry) + ":" + std::to_string(n) + std::string(suffix);
}

// Where the entry that starts `list` ends: its first comma outside a socket suffix ("(S:0,1)").
std::size_t entry_end(std::string_view list) {
  int depth = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '(') ++depth;
    if (list[i] == ')' && depth > 0) --depth;
    if (list[i] == ',' && depth == 0) return i;
  }
  return std::string_view::npos;
}

// A --gres entry that names GPUs: "gpu", "gpu:...", "gpu(S:0)", with or without "gres:" or
// "gres/".
bool is_gpu_gres(std::string_view entry) {
  for (std::string_view prefix : {"gres:", "gres/"})
    if (entry.substr(0, prefix.size()) == prefix) entry.remove_prefix(prefix.size());
  return entry.substr(0, 3) == "gpu" && (entry.size() == 3 || entry[3] == ':' || entry[3] == '(');
}

// The script's GPU request (--gres, or --gpus/--gpus-per-node when `gres` is false) asking for
// `n`: sbatch's command-line option replaces the script's whole value, so only the count
// changes and the GPU type and the other generic resources stay. Of several GPU entries the
// first takes the count (one count cannot be split between types).
std::string request_with_count(std::string_view request, int n, bool gres) {
  std::string out;
  bool counted = false;
  while (!request.empty()) {
    const auto comma = entry_end(request);
    const std::string_view entry = request.substr(0, comma);
    request = comma == std::string_view::npos ? std::string_view{} : request.substr(comma + 1);
    std::string kept(entry);
    if (!gres || is_gpu_gres(entry)) {
      if (counted) continue;
      kept = entry_with_count(entry, n);
      counted = true;
    }
    out += (out.empty() ? "" : ",") + kept;
  }
  return out;
}

}  // namespace

SegmentShape resolve_segment_shape(const ShapeFlags& flags, const BatchScriptDirectives& script,
                                   const std::string& script_name) {
  SegmentShape out;
  auto& opts = out.sbatch_options;
  if (flags.nodes) {
    out.nodes = *flags.nodes;
    opts.push_back("--nodes=" + std::to_string(*flags.nodes));
    note_override(out.notes, "--nodes", std::to_string(*flags.nodes), script.nodes,
                  script.nodes && script.nodes->value != *flags.nodes, script_name);
  } else if (script.nodes) {
    out.nodes = script.nodes->value;
  }
  if (flags.gpus_per_node) {
    const int n = *flags.gpus_per_node;
    out.gpus_per_node = n;
    // In the script's own form: sbatch refuses --gpus-per-node beside a --gres=gpu directive.
    if (script.gpus && script.gpus_by_gres)
      opts.push_back("--gres=" + request_with_count(script.gpu_request, n, true));
    else if (script.gpus && script.gpu_count == GpuCount::kPerJob)
      opts.push_back("--gpus=" + request_with_count(script.gpu_request, n * out.nodes, false));
    else if (script.gpus)
      opts.push_back("--gpus-per-node=" + request_with_count(script.gpu_request, n, false));
    else
      opts.push_back("--gpus-per-node=" + std::to_string(n));
    note_override(out.notes, "--gpus-per-node", std::to_string(n), script.gpus,
                  script.gpus && script.gpus_per_node(out.nodes) != n, script_name);
  } else {
    out.gpus_per_node = script.gpus_per_node(out.nodes);
  }
  if (flags.time_limit) {
    out.time_limit = *flags.time_limit;
    const std::string t = format_slurm_duration(*flags.time_limit);
    opts.push_back("--time=" + t);
    note_override(out.notes, "--time", t, script.time_limit,
                  script.time_limit && script.time_limit->value != *flags.time_limit, script_name);
  } else if (script.time_limit) {
    out.time_limit = script.time_limit->value;
  }
  resolve_text(flags.partition, script.partition, "partition", script_name, out.partition, out);
  resolve_text(flags.account, script.account, "account", script_name, out.account, out);
  resolve_text(flags.qos, script.qos, "qos", script_name, out.qos, out);
  return out;
}

std::vector<std::string> options_of_earlier_campaign(int nodes, int gpus_per_node,
                                                     Seconds time_limit,
                                                     const std::string& partition,
                                                     const std::string& account) {
  std::vector<std::string> out{"--nodes=" + std::to_string(nodes),
                               "--time=" + format_slurm_duration(time_limit)};
  if (gpus_per_node > 0) out.push_back("--gres=gpu:" + std::to_string(gpus_per_node));
  if (!partition.empty()) out.push_back("--partition=" + partition);
  if (!account.empty()) out.push_back("--account=" + account);
  return out;
}

bool sets_option(const std::vector<std::string>& options, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  for (const auto& o : options)
    if (o.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace mirage::daemon
