#include "DataParallel.h"

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace mirage::training {
namespace {

// Since LibTorch 2.0 the backends derive from c10d::Backend rather than c10d::ProcessGroup; the
// collectives used here have the same signatures in both.
#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;
#else
using Backend = c10d::ProcessGroup;
#endif

void wait(const c10::intrusive_ptr<c10d::Work>& work) {
  work->wait();
}

}  // namespace

struct DataParallel::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Backend> group;
  std::string backend = "none";
  std::map<std::string, std::string> local_store;  // one rank: no real store
};

DataParallel::DataParallel(const DistributedEnv& env, const DataParallelOptions& options,
                           torch::Device device)
    : impl_(std::make_unique<Impl>()), rank_(env.rank), world_(env.world_size), device_(device) {
  if (world_ == 1) return;
  c10::intrusive_ptr<c10d::Store> base;
  if (!options.rendezvous_dir.empty()) {
    std::filesystem::create_directories(options.rendezvous_dir);
    auto path = std::filesystem::path(options.rendezvous_dir) / ("store-" + env.run_id);
    base = c10::make_intrusive<c10d::FileStore>(path.string(), world_);
  } else {
    c10d::TCPStoreOptions tcp;
    tcp.port = env.master_port;
    tcp.isServer = rank_ == 0;
    tcp.numWorkers = world_;
    tcp.waitWorkers = true;
    tcp.timeout = options.timeout;
    base = c10::make_intrusive<c10d::TCPStore>(env.master_addr, tcp);
  }
  base->setTimeout(options.timeout);
  impl_->store = c10::make_intrusive<c10d::PrefixStore>("mirage", base);

#ifdef USE_C10D_NCCL
  if (device.is_cuda()) {
    auto nccl = c10d::ProcessGroupNCCL::Options::create();
    nccl->timeout = options.timeout;
    impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl", impl_->store), rank_, world_, nccl);
    impl_->backend = "nccl";
    return;
  }
#endif
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
  // GLOO_SOCKET_IFNAME picks the network interface, as it does for PyTorch.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("gloo", impl_->store), rank_, world_, gloo);
  impl_->backend = "gloo";
}

DataParallel::~DataParallel() {
  // The group first: its threads use the store.
  if (impl_) impl_->group.reset();
}

std::string DataParallel::backend() const {
  return impl_->backend;
}

torch::Tensor DataParallel::reduce_step(const std::vector<torch::Tensor>& params,
                                        const torch::Tensor& loss,
                                        const std::vector<double>& flags) {
  torch::NoGradGuard no_grad;
  // The flags reach the device without a wait (a blocking copy would wait for the whole
  // backward pass to finish before the optimizer step could be queued).
  auto extras =
      torch::cat({loss.detach().reshape({1}).to(torch::kFloat),
                  torch::tensor(std::vector<float>(flags.begin(), flags.end())).to(device_, true)});
  if (world_ == 1) return extras;
  // One buffer and one all-reduce: the gradients gathered by a single concatenation, the extras
  // after them; afterwards each gradient becomes a view of its averaged slice, so nothing is
  // copied back (a copy per parameter each way was two small kernels per parameter on GPUs).
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(device_);
  std::vector<torch::Tensor> pieces;
  pieces.reserve(params.size() + 1);
  std::int64_t total = 0;
  for (const auto& p : params) {
    pieces.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                        : torch::zeros({p.numel()}, options));
    total += p.numel();
  }
  pieces.push_back(extras);
  auto flat = torch::cat(pieces);

  std::vector<torch::Tensor> buffers{flat};
  wait(impl_->group->allreduce(buffers));

  flat.narrow(0, 0, total).div_(world_);
  std::int64_t offset = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) p.mutable_grad() = flat.narrow(0, offset, p.numel()).view_as(p);
    offset += p.numel();
  }
  return flat.narrow(0, total, extras.numel());
}

std::vector<double> DataParallel::sum(const std::vector<double>& values) {
  if (world_ == 1) return values;
  auto t = torch::tensor(values, torch::TensorOptions().dtype(torch::kDouble)).to(device_);
  std::vector<torch::Tensor> buffers{t};
  wait(impl_->group->allreduce(buffers));
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

void DataParallel::broadcast_from_rank0(const std::vector<torch::Tensor>& tensors) {
  if (world_ == 1 || tensors.empty()) return;
  torch::NoGradGuard no_grad;
  // One flat buffer per dtype would be needed for mixed types; the model and optimizer state
  // are all float32, which is checked here.
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    TORCH_CHECK(t.scalar_type() == torch::kFloat, "broadcast_from_rank0 takes float32 tensors");
    total += t.numel();
  }
  auto flat = torch::empty({total}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, offset, t.numel()).copy_(t.reshape({-1}));
    offset += t.numel();
  }
  std::vector<torch::Tensor> buffers{flat};
  c10d::BroadcastOptions opts;
  opts.rootRank = 0;
  wait(impl_->group->broadcast(buffers, opts));
  offset = 0;
  for (const auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

void DataParallel::barrier() {
  if (world_ == 1) return;
  sum({0.0});  // an all-reduce is a barrier; c10d's barrier() needs a device hint on NCCL
}

void DataParallel::store_set(const std::string& key, const std::string& value) {
  if (world_ == 1) {
    impl_->local_store[key] = value;
    return;
  }
  impl_->store->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string DataParallel::store_get(const std::string& key) {
  if (world_ == 1) {
    auto it = impl_->local_store.find(key);
    if (it == impl_->local_store.end()) throw std::runtime_error("no key " + key);
    return it->second;
  }
  auto bytes = impl_->store->get(key);
  return std::string(bytes.begin(), bytes.end());
}

bool DataParallel::store_check(const std::string& key) {
  if (world_ == 1) return impl_->local_store.count(key) > 0;
  return impl_->store->check({key});
}

}  // namespace mirage::training
