#pragma once
// The #SBATCH lines of a batch script, read as sbatch reads them, for the few options that give a
// segment its shape: nodes, GPUs, time limit, partition, account and QOS. sbatch itself still
// reads the whole script (every other directive applies through it); this only tells the daemon
// what the segments will ask for before the first one is submitted.
//
// As sbatch: the first line must be "#!" and an interpreter; directives are the lines that start
// with "#SBATCH" (or the old "#SLURM") before the first line that is neither blank nor a comment;
// a later directive for the same option replaces an earlier one (a later --gres the whole
// list: "--gres=gpu:4" then "--gres=nvme:1" asks for no GPU). Both "--opt=value" and "--opt
// value", an unambiguous abbreviation ("--part=gpu"), and the short forms "-N 2", "-N2" (-N, -t,
// -p, -A, -q, -G).
//
// What sbatch refuses is refused here too, naming the line: an option no sbatch from Slurm 22.05
// to 24.11 knows, a word that is not an option (shell text such as "; touch x"), an unmatched
// quote, a NUL byte, DOS line breaks; and a short option written with '=' ("-N=2": sbatch reads
// "=2" as the value, and refuses it or keeps the '='). Any other byte is the script's own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/Error.h"
#include "mirage/core/Time.h"

namespace mirage::daemon {

// Slurm's own default limit on a batch script (SchedulerParameters=max_script_size): a script
// over it is refused at `campaign add`, however the request travels.
inline constexpr std::uintmax_t kMaxScriptBytes = 4 << 20;

// Why a script of `size` bytes named `file` cannot be submitted (over kMaxScriptBytes), or
// nullopt: one message for every path that checks it.
std::optional<InputError> script_size_problem(const std::string& file, std::uintmax_t size);

// A value the script states, with where it says so (for messages).
template <typename T>
struct ScriptValue {
  T value{};
  long line = 0;
  std::string text;  // the directive's option as written, e.g. "--nodes=2"
};

// How the script counts its GPUs.
enum class GpuCount {
  kPerNode,  // --gres=gpu:N or --gpus-per-node=N
  kPerJob,   // --gpus=N (-G N): spread over the nodes
};

struct BatchScriptDirectives {
  std::optional<ScriptValue<int>> nodes;  // the minimum of "N-M"
  std::optional<ScriptValue<int>> gpus;   // counted as `gpu_count` says
  GpuCount gpu_count = GpuCount::kPerNode;
  bool gpus_by_gres = false;  // named by --gres (a flag then overrides with --gres too)
  // That directive's value as written ("gpu:a100:4,nvme:1", "a100:8"): a flag changes only its
  // count, as sbatch's command-line option replaces the whole value.
  std::string gpu_request;
  // 0 for UNLIMITED or INFINITE: the partition's limit applies.
  std::optional<ScriptValue<Seconds>> time_limit;
  std::optional<ScriptValue<std::string>> partition;
  std::optional<ScriptValue<std::string>> account;
  std::optional<ScriptValue<std::string>> qos;
  // Where its standard output goes (a filename pattern) and its working directory.
  std::optional<ScriptValue<std::string>> output;
  std::optional<ScriptValue<std::string>> chdir;
  // Which of the submission's environment the job gets (--export: ALL, NONE, NIL or a list).
  std::optional<ScriptValue<std::string>> export_env;
  // The first directive that makes a submission other than one job of this cluster: a job array
  // (--array), a heterogeneous job (hetjob) or another cluster's job (--clusters). sbatch takes
  // them, but a campaign's segment is one job, followed in this cluster's queue by its tag.
  std::optional<ScriptValue<std::string>> not_one_local_job;
  // The first directive with which sbatch submits no job and still exits 0 (--test-only,
  // --help, --usage, --version): no job id, an outcome never settled.
  std::optional<ScriptValue<std::string>> submits_nothing;
  // The first --wait (-W): sbatch then returns only when the job ends, long after any caller
  // waiting for its job id has given up.
  std::optional<ScriptValue<std::string>> waits_for_the_job;
  // The first --hold (-H) or --dependency (-d): the script orders its job itself, where a
  // campaign's segments are ordered by mirage.
  std::optional<ScriptValue<std::string>> held_or_dependent;
  // The first short option written with '=' ("-N=2"): getopt gives the option "=2", which sbatch
  // refuses or keeps as written ("-J=x" names the job "=x"). Refused at `campaign add`; the
  // lines after it are still read, as sbatch reads them, for campaigns stored before.
  std::optional<InputError> short_option_with_equals;
  // The first malformed line (no shebang, a value that does not parse); nothing after it is read.
  std::optional<InputError> error;

  // GPUs per node for an allocation of `node_count` nodes (a per-job count is spread evenly).
  int gpus_per_node(int node_count) const;
};

// Reads the directives of `script`; `file` names it in messages. Never throws: a problem is kept
// in `error`, so that a caller that checked the script once can read it again leniently.
BatchScriptDirectives read_batch_directives(std::string_view script, const std::string& file);

// The script's #PBS and #BSUB lines that sbatch translates into its own options unless given
// --ignore-pbs (src/sbatch/xlate.c of 22.05 to 24.11: "#PBS -t" an array, "-h" a hold,
// "-W depend=" a dependency, "-l walltime=" a limit): those that start with the word, before
// the 101st line that does not start with '#', after a command too. Each with its 1-based line;
// `value` and `text` are the line as written. mirage passes --ignore-pbs (to every campaign added
// since it does).
std::vector<ScriptValue<std::string>> pbs_and_bsub_lines(std::string_view script);

}  // namespace mirage::daemon
