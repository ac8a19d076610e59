// The epoch loop of pg and the risk-input pg (PgEpochs.h): what differs between them is the step,
// the validation and the state kept.
#include "PgEpochs.h"

#include <algorithm>
#include <chrono>

namespace mirage::learned {

void run_pg_epochs(const TrainContext& ctx, torch::nn::Module& policy, std::mt19937_64& rng,
                   EarlyStopping& stop, const PgEpochs& e) {
  const Hyperparameters& hp = ctx.config.hp;
  const std::size_t per_batch = static_cast<std::size_t>(std::max(1, hp.pg_batch_episodes));
  while (!stop.done(hp)) {
    const auto t0 = std::chrono::steady_clock::now();
    policy.train();
    std::vector<std::size_t> order = ctx.split.train;
    std::shuffle(order.begin(), order.end(), rng);
    const std::size_t steps = (order.size() + per_batch - 1) / per_batch;
    double loss_sum = 0;
    for (std::size_t s = 0; s < steps; ++s) {
      const std::vector<std::size_t> batch(
          order.begin() + static_cast<std::ptrdiff_t>(s * per_batch),
          order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), (s + 1) * per_batch)));
      const std::optional<double> loss = e.step(batch);
      if (!loss) continue;
      loss_sum += *loss;
      if (ctx.callbacks.step)
        ctx.callbacks.step(s + 1, steps, loss_sum / static_cast<double>(s + 1));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    policy.eval();
    const Calibration cal = e.validate();
    EpochStats es = epoch_stats(e.phase, ++stop.epoch, hp.max_epochs, loss_sum, steps, seconds);
    es.val = cal.val;
    es.best = stop.record(cal);
    if (es.best) e.keep_best();
    report_epoch(ctx, es);
    auto out = begin_checkpoint(ctx);
    torch::serialize::OutputArchive state;
    e.save(state);
    out.write(e.key, state);
    save_atomically(out, ctx.checkpoint_path);
  }
}

}  // namespace mirage::learned
