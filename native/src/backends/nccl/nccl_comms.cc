// NcclBackend's communicators (nccl_backend.h): world init from the unique id (grouped when one thread
// drives several GPUs, -x CTA policy), the NCCL_TESTS_SPLIT group, abort of every communicator, and the
// control plane across processes: lent (MPI's) or NCCL collectives on a small device staging buffer.
#include "backends/nccl/nccl_backend.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/nccl/nccl_internal.h"
#include "core/backend_errors.h"
#include "core/op_checks.h"

namespace collbench {

using ncclapi::Result;

Status NcclBackend::initComms() {
  const ncclapi::Api& api = lib_->api;
  ncclapi::UniqueId id{};
  std::memcpy(id.internal, opt_.uniqueId.data(), sizeof id.internal);
  ncclapi::Config cfg = ncclapi::defaultConfig();
  if (opt_.ctaPolicy >= 0) {
    if (api.CommInitRankConfig == nullptr || !lib_->atLeast(2, 27, 0))
      return Status::Error("nccl", "NCCL_TOO_OLD",
                           "-x (CTA policy) needs NCCL 2.27 or newer; this is NCCL " + lib_->versionString(),
                           CB_SITE("ncclCommInitRankConfig"));
    cfg.CTAPolicy = opt_.ctaPolicy;
  }
  const bool grouped = localCount_ > 1;  // one thread initialising several ranks must group them
  Status first = Status::Ok();
  if (grouped) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  for (int i = 0; i < localCount_ && first.ok; ++i) {
    Status s = setDevice(i);
    if (!s.ok) {
      first = s;
      break;
    }
    Local& l = locals_[i];
    const Result r = api.CommInitRankConfig != nullptr
                         ? api.CommInitRankConfig(&l.world, nranks(), id, rank() + i, &cfg)
                         : api.CommInitRank(&l.world, nranks(), id, rank() + i);
    if (r != ncclapi::Success && r != ncclapi::InProgress)
      first = ncclStatus(r, api.CommInitRankConfig ? "ncclCommInitRankConfig" : "ncclCommInitRank", l.world);
  }
  if (grouped) {
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclGroupEnd (communicator init)", nullptr);
  }
  CB_TRY(first);

  if (opt_.splitColor >= 0) {
    if (api.CommSplit == nullptr)
      return Status::Error("nccl", "NCCL_TOO_OLD",
                           "NCCL_TESTS_SPLIT needs ncclCommSplit (NCCL 2.18 or newer); "
                           "this is NCCL " +
                               lib_->versionString(),
                           CB_SITE("ncclCommSplit"));
    if (grouped) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
    for (int i = 0; i < localCount_ && first.ok; ++i) {
      const Result r = api.CommSplit(locals_[i].world, opt_.splitColor, rank() + i, &locals_[i].data, nullptr);
      if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, "ncclCommSplit", locals_[i].world);
    }
    if (grouped) {
      const Result r = api.GroupEnd();
      if (r != ncclapi::Success && first.ok) first = ncclStatus(r, "ncclGroupEnd (communicator split)", nullptr);
    }
    CB_TRY(first);
  } else {
    for (Local& l : locals_) l.data = l.world;
  }

  for (int i = 0; i < localCount_; ++i) {
    int r = 0, n = 0;
    CB_NCCL(api.CommUserRank(locals_[i].data, &r), "ncclCommUserRank", locals_[i].data);
    CB_NCCL(api.CommCount(locals_[i].data, &n), "ncclCommCount", locals_[i].data);
    devices_[i].groupRank = r;
    if (i == 0) groupSize_ = n;
    // Split keys are world ranks, so a process's ranks stay consecutive in its group.
    if (n != groupSize_ || r != devices_[0].groupRank + i)
      return badSpec("the split communicator does not keep this process's ranks together", "ncclCommSplit");
  }
  return Status::Ok();
}

Status NcclBackend::createGroups(const std::vector<std::vector<int>>& groups) {
  CB_TRY(destroySubGroups());
  if (groups.empty()) return Status::Ok();
  CB_TRY(checkGroups(groups, nranks(), "NcclBackend::createGroups"));
  if (localCount_ != 1 || opt_.deviceImpl > 0 || opt_.splitColor >= 0)
    return badSpec("process groups need one rank per process, no -D and no NCCL_TESTS_SPLIT", "ncclCommSplit");
  if (aborted_ || locals_.empty() || locals_[0].world == nullptr)
    return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("ncclCommSplit"));
  const ncclapi::Api& api = lib_->api;
  if (api.CommSplit == nullptr)
    return Status::Error(
        "nccl", "NCCL_TOO_OLD",
        "process groups need ncclCommSplit (NCCL 2.18 or newer); this is NCCL " + lib_->versionString(),
        CB_SITE("ncclCommSplit"));
  CB_TRY(setDevice(0));
  for (const std::vector<int>& ranks : groups) {
    SubGroup g;
    const int mine = collbench::groupRank(ranks, rank());
    // Collective over the world communicator: every rank, every group, in the list's order (as torch's new_group).
    const Result r =
        api.CommSplit(locals_[0].world, mine < 0 ? ncclapi::kSplitNoColor : 0, mine < 0 ? 0 : mine, &g.comm, nullptr);
    subGroups_.push_back(g);  // kept at once, so destroySubGroups() frees it on error
    if (r != ncclapi::Success && r != ncclapi::InProgress)
      return ncclStatus(r, "ncclCommSplit (process group " + std::to_string(subGroups_.size() - 1) + ")",
                        locals_[0].world);
    if (g.comm == nullptr) {
      if (mine >= 0)
        return badSpec("ncclCommSplit gave rank " + std::to_string(rank()) + " no communicator for process group " +
                           std::to_string(subGroups_.size() - 1) + " it is a member of",
                       "ncclCommSplit");
      continue;
    }
    SubGroup& kept = subGroups_.back();
    CB_NCCL(api.CommUserRank(kept.comm, &kept.rank), "ncclCommUserRank", kept.comm);
    CB_NCCL(api.CommCount(kept.comm, &kept.size), "ncclCommCount", kept.comm);
    if (kept.rank != mine || kept.size != static_cast<int>(ranks.size()))
      return badSpec("ncclCommSplit made rank " + std::to_string(rank()) + " rank " + std::to_string(kept.rank) +
                         " of " + std::to_string(kept.size) + " in process group " +
                         std::to_string(subGroups_.size() - 1) + ", expected rank " + std::to_string(mine) + " of " +
                         std::to_string(ranks.size()),
                     "ncclCommSplit");
  }
  return Status::Ok();
}

Status NcclBackend::destroySubGroups() {
  Status first = Status::Ok();
  for (SubGroup& g : subGroups_) {
    if (g.comm == nullptr || lib_ == nullptr) continue;
    const Result r = aborted_ ? lib_->api.CommAbort(g.comm) : lib_->api.CommDestroy(g.comm);
    if (r != ncclapi::Success && first.ok)
      first = ncclStatus(r, aborted_ ? "ncclCommAbort (process group)" : "ncclCommDestroy (process group)", nullptr);
    g.comm = nullptr;
  }
  subGroups_.clear();
  return first;
}

Status NcclBackend::abortAll(const std::string& why, const std::string& code) {
  if (lib_ != nullptr && !aborted_) {
    for (SubGroup& g : subGroups_) {
      if (g.comm != nullptr) lib_->api.CommAbort(g.comm);
      g.comm = nullptr;
    }
    for (Local& l : locals_) {
      if (l.data != nullptr && l.data != l.world) lib_->api.CommAbort(l.data);
      if (l.world != nullptr) lib_->api.CommAbort(l.world);
      l.data = l.world = nullptr;
    }
  }
  aborted_ = true;
  abortDone_.store(true);
  return Status::Error("nccl", code, why + "; every communicator of this process was aborted (ncclCommAbort)",
                       CB_SITE("ncclCommAbort"));
}

// -------------------------------------------------------------------------------------------------
// Control plane

Status NcclBackend::ensureCtrl(uint64_t bytes) {
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.ctrlBytes >= bytes) continue;
    CB_TRY(setDevice(i));
    if (l.ctrlDev != nullptr) cudaFree(l.ctrlDev);
    if (l.ctrlHost != nullptr) cudaFreeHost(l.ctrlHost);
    l.ctrlDev = l.ctrlHost = nullptr;
    l.ctrlBytes = 0;
    const uint64_t size = std::max<uint64_t>(bytes, 64 * 1024);
    CB_CUDA(cudaMalloc(&l.ctrlDev, size), "cudaMalloc (control plane)");
    CB_CUDA(cudaMallocHost(&l.ctrlHost, size), "cudaMallocHost (control plane)");
    l.ctrlBytes = size;
  }
  return Status::Ok();
}

// Allreduce of per-process values over the world communicators: local rank 0 brings the process's
// values, the others the op's identity.
Status NcclBackend::ctrlAllreduce(double* values, int n, Combine how) {
  if (n <= 0) return Status::Ok();
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(double);
  CB_TRY(ensureCtrl(bytes));
  int op = ncclapi::OpSum;
  double identity = 0;
  if (how == Combine::Min) op = ncclapi::OpMin, identity = std::numeric_limits<double>::infinity();
  if (how == Combine::Max) op = ncclapi::OpMax, identity = -std::numeric_limits<double>::infinity();
  const ncclapi::Api& api = lib_->api;
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.world == nullptr)
      return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("control plane"));
    double* h = static_cast<double*>(l.ctrlHost);
    for (int k = 0; k < n; ++k) h[k] = i == 0 ? values[k] : identity;
    CB_TRY(setDevice(i));
    CB_CUDA(cudaMemcpyAsync(l.ctrlDev, l.ctrlHost, bytes, cudaMemcpyHostToDevice, l.stream), "cudaMemcpyAsync");
  }
  CB_TRY(ctrlGroup("control plane allreduce", [&](Local& l) {
    return how == Combine::Rank0 ? api.Broadcast(l.ctrlDev, l.ctrlDev, n, ncclapi::Float64, 0, l.world, l.stream)
                                 : api.AllReduce(l.ctrlDev, l.ctrlDev, n, ncclapi::Float64, op, l.world, l.stream);
  }));
  CB_TRY(setDevice(0));
  CB_CUDA(cudaMemcpyAsync(locals_[0].ctrlHost, locals_[0].ctrlDev, bytes, cudaMemcpyDeviceToHost, locals_[0].stream),
          "cudaMemcpyAsync");
  CB_TRY(waitAll());
  const double* h = static_cast<const double*>(locals_[0].ctrlHost);
  for (int k = 0; k < n; ++k) values[k] = how == Combine::Mean ? h[k] / opt_.nprocs : h[k];
  return Status::Ok();
}

Status NcclBackend::ctrlGroup(const char* what, const std::function<Result(Local&)>& call) {
  const ncclapi::Api& api = lib_->api;
  if (localCount_ > 1) CB_NCCL(api.GroupStart(), "ncclGroupStart", nullptr);
  Status first = Status::Ok();
  for (int i = 0; i < localCount_ && first.ok; ++i) {
    const Result r = call(locals_[i]);
    if (r != ncclapi::Success && r != ncclapi::InProgress) first = ncclStatus(r, what, locals_[i].world);
  }
  if (localCount_ > 1) {
    const Result r = api.GroupEnd();
    if (r != ncclapi::Success && r != ncclapi::InProgress && first.ok)
      first = ncclStatus(r, "ncclGroupEnd (control plane)", nullptr);
  }
  return first;
}

// Allgather of `bytes` per rank over the world communicators; *all gets every rank's bytes in world
// rank order (local rank 0 brings `mine`, the others zeros).
Status NcclBackend::ctrlAllgather(const void* mine, uint64_t bytes, std::vector<char>* all) {
  const uint64_t total = bytes * static_cast<uint64_t>(nranks());
  CB_TRY(ensureCtrl(bytes + total));
  const ncclapi::Api& api = lib_->api;
  for (int i = 0; i < localCount_; ++i) {
    Local& l = locals_[i];
    if (l.world == nullptr)
      return Status::Error("nccl", "NCCL_ABORTED", "the communicators were aborted", CB_SITE("control plane"));
    if (i == 0 && bytes > 0) std::memcpy(l.ctrlHost, mine, bytes);
    if (i != 0) std::memset(l.ctrlHost, 0, bytes);
    CB_TRY(setDevice(i));
    CB_CUDA(cudaMemcpyAsync(l.ctrlDev, l.ctrlHost, bytes, cudaMemcpyHostToDevice, l.stream), "cudaMemcpyAsync");
  }
  CB_TRY(ctrlGroup("control plane allgather", [&](Local& l) {
    return api.AllGather(l.ctrlDev, static_cast<char*>(l.ctrlDev) + bytes, bytes, ncclapi::Uint8, l.world, l.stream);
  }));
  CB_TRY(setDevice(0));
  Local& l0 = locals_[0];
  CB_CUDA(
      cudaMemcpyAsync(l0.ctrlHost, static_cast<char*>(l0.ctrlDev) + bytes, total, cudaMemcpyDeviceToHost, l0.stream),
      "cudaMemcpyAsync");
  CB_TRY(waitAll());
  all->assign(static_cast<const char*>(l0.ctrlHost), static_cast<const char*>(l0.ctrlHost) + total);
  return Status::Ok();
}

Status NcclBackend::barrier() {
  if (opt_.control != nullptr) return opt_.control->barrier();
  // One host thread drives every local rank, so they are in step already.
  if (opt_.nprocs == 1 || capturing_) return Status::Ok();
  if (groupDepth_ > 0) {
    // An NCCL op now would join the open group and never complete before its end: defer.
    pendingBarrier_ = true;
    return Status::Ok();
  }
  double v = 0;
  return ctrlAllreduce(&v, 1, Combine::Sum);
}

Status NcclBackend::allreduce(double* values, int n, Combine how) {
  if (n > 0 && values == nullptr) return badSpec("allreduce of a null array", "NcclBackend::allreduce");
  if (opt_.control != nullptr) return opt_.control->allreduce(values, n, how);
  if (opt_.nprocs == 1) return Status::Ok();  // one process: its values are the job's
  return ctrlAllreduce(values, n, how);
}

Status NcclBackend::gather(const double* mine, int n, std::vector<double>* atRoot) {
  if (atRoot == nullptr || n < 0 || (n > 0 && mine == nullptr))
    return badSpec("gather needs a value array and an output vector", "NcclBackend::gather");
  if (opt_.control != nullptr) return opt_.control->gather(mine, n, atRoot);
  atRoot->clear();
  if (opt_.nprocs == 1) {
    atRoot->assign(mine, mine + n);
    return Status::Ok();
  }
  std::vector<char> all;
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(double);
  CB_TRY(ctrlAllgather(mine, bytes, &all));
  if (rank() != 0) return Status::Ok();
  atRoot->resize(static_cast<size_t>(n) * opt_.nprocs);
  for (int p = 0; p < opt_.nprocs; ++p)  // local rank 0 of each process
    std::memcpy(atRoot->data() + static_cast<size_t>(p) * n,
                all.data() + static_cast<uint64_t>(p) * localCount_ * bytes, bytes);
  return Status::Ok();
}

Status NcclBackend::gatherStrings(const std::string& mine, std::vector<std::string>* atRoot) {
  if (atRoot == nullptr) return badSpec("gatherStrings needs an output vector", "NcclBackend::gatherStrings");
  if (opt_.control != nullptr) return opt_.control->gatherStrings(mine, atRoot);
  atRoot->clear();
  if (opt_.nprocs == 1) {
    atRoot->push_back(mine);
    return Status::Ok();
  }
  const double len = static_cast<double>(mine.size());
  std::vector<char> lens;
  CB_TRY(ctrlAllgather(&len, sizeof len, &lens));
  uint64_t maxLen = 1;
  std::vector<uint64_t> lengths(opt_.nprocs);
  for (int p = 0; p < opt_.nprocs; ++p) {
    double v = 0;
    std::memcpy(&v, lens.data() + static_cast<uint64_t>(p) * localCount_ * sizeof(double), sizeof v);
    lengths[p] = static_cast<uint64_t>(v);
    maxLen = std::max(maxLen, lengths[p]);
  }
  std::string padded = mine;
  padded.resize(maxLen, '\0');
  std::vector<char> all;
  CB_TRY(ctrlAllgather(padded.data(), maxLen, &all));
  if (rank() != 0) return Status::Ok();
  for (int p = 0; p < opt_.nprocs; ++p)
    atRoot->emplace_back(all.data() + static_cast<uint64_t>(p) * localCount_ * maxLen, lengths[p]);
  return Status::Ok();
}

}  // namespace collbench
