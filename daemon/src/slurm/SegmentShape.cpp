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
      opts.push_back("--gres=gpu:" + std::to_string(n));
    else if (script.gpus && script.gpu_count == GpuCount::kPerJob)
      opts.push_back("--gpus=" + std::to_string(n * out.nodes));
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
    note_override(out.notes, "--time-limit", t, script.time_limit,
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
