// Archives: small typed values, the random generator's state, durable writes, and the
// checkpoints a resumed training run continues from.
#include <filesystem>
#include <sstream>

#include "Nets.h"
#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"

namespace mirage::learned {

void put_string(torch::serialize::OutputArchive& a, const std::string& key, const std::string& v) {
  a.write(key, c10::IValue(v));
}
std::string get_string(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toStringRef();
}
void put_int(torch::serialize::OutputArchive& a, const std::string& key, std::int64_t v) {
  a.write(key, c10::IValue(v));
}
std::int64_t get_int(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toInt();
}
void put_double(torch::serialize::OutputArchive& a, const std::string& key, double v) {
  a.write(key, c10::IValue(v));
}
double get_double(torch::serialize::InputArchive& a, const std::string& key) {
  c10::IValue v;
  a.read(key, v);
  return v.toDouble();
}
void put_metrics(torch::serialize::OutputArchive& a, const std::string& key, const StopMetrics& m) {
  put_string(a, key,
             fmt::format("{} {:.17g} {:.17g} {:.17g} {:.17g}", m.episodes, m.mean_cost_h,
                         m.mean_interruption_h, m.zero_share, m.mean_overlap_h));
}
StopMetrics get_metrics(torch::serialize::InputArchive& a, const std::string& key) {
  std::istringstream in(get_string(a, key));
  StopMetrics m;
  in >> m.episodes >> m.mean_cost_h >> m.mean_interruption_h >> m.zero_share >> m.mean_overlap_h;
  return m;
}
std::string rng_state(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}
void set_rng_state(std::mt19937_64& rng, const std::string& state) {
  std::istringstream in(state);
  in >> rng;
}

void save_atomically(torch::serialize::OutputArchive& a, const std::string& path) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::ostringstream bytes(std::ios::binary);
  a.save_to(bytes);
  write_file_durably(path, bytes.view());
}

torch::serialize::OutputArchive begin_checkpoint(const TrainContext& ctx) {
  torch::serialize::OutputArchive a;
  put_string(a, "run", ctx.run_fingerprint);
  return a;
}

bool open_checkpoint(const TrainContext& ctx, torch::serialize::InputArchive& in) {
  if (!ctx.config.resume || !std::filesystem::exists(ctx.checkpoint_path)) return false;
  try {
    in.load_from(ctx.checkpoint_path);
  } catch (const c10::Error&) {
    throw InputError({ctx.checkpoint_path, 0, "--resume"}, "not a mirage training checkpoint");
  }
  if (get_string(in, "run") != ctx.run_fingerprint)
    throw InputError({ctx.checkpoint_path, 0, "--resume"},
                     "this checkpoint was made with other settings (trace, window, machine, "
                     "agent or hyperparameters); remove it or train without --resume");
  return true;
}

}  // namespace mirage::learned
