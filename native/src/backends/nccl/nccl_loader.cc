// dlopen of libnccl through our own declarations (nccl_api.h): the search order of nccl_loader.h,
// one process-wide library, optional functions resolved by name. libnccl is never dlclosed (NCCL
// keeps threads and CUDA state that must not outlive its code).
#include "backends/nccl/nccl_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

namespace collbench {
namespace {

constexpr const char* kSoname = "libnccl.so.2";
constexpr const char* kWheelTail = "nvidia/nccl/lib/libnccl.so.2";
constexpr int kMinVersion = ncclapi::versionCode(2, 7, 0);  // ncclSend/ncclRecv

std::mutex gMutex;
NcclLibrary* gLibrary = nullptr;

bool isDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool hasGlob(const std::string& p) {
  return p.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  if (!hasGlob(pattern)) {
    out.push_back(pattern);
    return out;
  }
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// Python prefixes that hold site-packages, in search order: the active environments first.
void addSitePackages(std::vector<NcclCandidate>* out, const char* (*getenv)(const char*)) {
  auto add = [out](const std::string& dir, const std::string& how) { out->push_back({dir + "/" + kWheelTail, how}); };
  auto env = [getenv](const char* name) -> std::string {
    const char* v = getenv(name);
    return v ? std::string(v) : std::string();
  };
  const std::string venv = env("VIRTUAL_ENV");
  if (!venv.empty()) {
    add(venv + "/lib/python3*/site-packages", "site-packages (VIRTUAL_ENV)");
    add(venv + "/lib64/python3*/site-packages", "site-packages (VIRTUAL_ENV)");
  }
  const std::string conda = env("CONDA_PREFIX");
  if (!conda.empty()) add(conda + "/lib/python3*/site-packages", "site-packages (CONDA_PREFIX)");
  // PYTHONPATH entries are site directories themselves.
  const std::string pp = env("PYTHONPATH");
  for (size_t start = 0; start < pp.size();) {
    const size_t end = pp.find(':', start);
    const std::string dir = pp.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty()) add(dir, "PYTHONPATH");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const std::string home = env("HOME");
  if (!home.empty()) add(home + "/.local/lib/python3*/site-packages", "site-packages (user)");
  for (const char* dir : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                          "/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages",
                          "/usr/lib64/python3*/site-packages", "/opt/conda/lib/python3*/site-packages"})
    add(dir, "site-packages");
}

template <typename F>
void resolve(void* handle, const char* name, F* slot) {
  *slot = reinterpret_cast<F>(dlsym(handle, name));
}

// Fills lib->api; returns the first missing required symbol's name, or "".
std::string resolveAll(NcclLibrary* lib) {
  ncclapi::Api& a = lib->api;
  void* h = lib->handle;
  resolve(h, "ncclGetVersion", &a.GetVersion);
  resolve(h, "ncclGetUniqueId", &a.GetUniqueId);
  resolve(h, "ncclCommInitRank", &a.CommInitRank);
  resolve(h, "ncclCommDestroy", &a.CommDestroy);
  resolve(h, "ncclCommAbort", &a.CommAbort);
  resolve(h, "ncclCommGetAsyncError", &a.CommGetAsyncError);
  resolve(h, "ncclCommCount", &a.CommCount);
  resolve(h, "ncclCommUserRank", &a.CommUserRank);
  resolve(h, "ncclGetErrorString", &a.GetErrorString);
  resolve(h, "ncclGroupStart", &a.GroupStart);
  resolve(h, "ncclGroupEnd", &a.GroupEnd);
  resolve(h, "ncclAllReduce", &a.AllReduce);
  resolve(h, "ncclAllGather", &a.AllGather);
  resolve(h, "ncclReduceScatter", &a.ReduceScatter);
  resolve(h, "ncclBroadcast", &a.Broadcast);
  resolve(h, "ncclReduce", &a.Reduce);
  resolve(h, "ncclSend", &a.Send);
  resolve(h, "ncclRecv", &a.Recv);
  const std::pair<const char*, const void*> required[] = {
      {"ncclGetVersion", reinterpret_cast<const void*>(a.GetVersion)},
      {"ncclGetUniqueId", reinterpret_cast<const void*>(a.GetUniqueId)},
      {"ncclCommInitRank", reinterpret_cast<const void*>(a.CommInitRank)},
      {"ncclCommDestroy", reinterpret_cast<const void*>(a.CommDestroy)},
      {"ncclCommAbort", reinterpret_cast<const void*>(a.CommAbort)},
      {"ncclCommGetAsyncError", reinterpret_cast<const void*>(a.CommGetAsyncError)},
      {"ncclCommCount", reinterpret_cast<const void*>(a.CommCount)},
      {"ncclCommUserRank", reinterpret_cast<const void*>(a.CommUserRank)},
      {"ncclGetErrorString", reinterpret_cast<const void*>(a.GetErrorString)},
      {"ncclGroupStart", reinterpret_cast<const void*>(a.GroupStart)},
      {"ncclGroupEnd", reinterpret_cast<const void*>(a.GroupEnd)},
      {"ncclAllReduce", reinterpret_cast<const void*>(a.AllReduce)},
      {"ncclAllGather", reinterpret_cast<const void*>(a.AllGather)},
      {"ncclReduceScatter", reinterpret_cast<const void*>(a.ReduceScatter)},
      {"ncclBroadcast", reinterpret_cast<const void*>(a.Broadcast)},
      {"ncclReduce", reinterpret_cast<const void*>(a.Reduce)},
      {"ncclSend", reinterpret_cast<const void*>(a.Send)},
      {"ncclRecv", reinterpret_cast<const void*>(a.Recv)},
  };
  for (const auto& r : required)
    if (r.second == nullptr) return r.first;
  resolve(h, "ncclGetLastError", &a.GetLastError);
  resolve(h, "ncclCommInitRankConfig", &a.CommInitRankConfig);
  resolve(h, "ncclCommFinalize", &a.CommFinalize);
  resolve(h, "ncclRedOpCreatePreMulSum", &a.RedOpCreatePreMulSum);
  resolve(h, "ncclRedOpDestroy", &a.RedOpDestroy);
  resolve(h, "ncclCommSplit", &a.CommSplit);
  resolve(h, "ncclMemAlloc", &a.MemAlloc);
  resolve(h, "ncclMemFree", &a.MemFree);
  resolve(h, "ncclCommRegister", &a.CommRegister);
  resolve(h, "ncclCommDeregister", &a.CommDeregister);
  resolve(h, "ncclCommWindowRegister", &a.CommWindowRegister);
  resolve(h, "ncclCommWindowDeregister", &a.CommWindowDeregister);
  resolve(h, "ncclAlltoAll", &a.AlltoAll);
  resolve(h, "ncclGather", &a.Gather);
  resolve(h, "ncclScatter", &a.Scatter);
  resolve(h, "ncclDevCommCreate", &a.DevCommCreate);
  resolve(h, "ncclDevCommDestroy", &a.DevCommDestroy);
  resolve(h, "ncclTeamLsa", &a.TeamLsa);
  resolve(h, "ncclCommQueryProperties", &a.CommQueryProperties);
  // A symbol alone does not prove the semantics we rely on: drop what the version predates.
  const int v = lib->version;
  if (v < ncclapi::versionCode(2, 11, 0)) a.RedOpCreatePreMulSum = nullptr, a.RedOpDestroy = nullptr;
  if (v < ncclapi::versionCode(2, 14, 0)) a.CommInitRankConfig = nullptr, a.CommFinalize = nullptr;
  if (v < ncclapi::versionCode(2, 18, 0)) a.CommSplit = nullptr;
  if (v < ncclapi::versionCode(2, 19, 0))
    a.MemAlloc = nullptr, a.MemFree = nullptr, a.CommRegister = nullptr, a.CommDeregister = nullptr;
  if (v < ncclapi::versionCode(2, 27, 0)) a.CommWindowRegister = nullptr, a.CommWindowDeregister = nullptr;
  if (v < ncclapi::versionCode(2, 28, 0)) a.AlltoAll = nullptr, a.Gather = nullptr, a.Scatter = nullptr;
  if (v < ncclapi::versionCode(2, 28, 0)) a.DevCommCreate = nullptr, a.DevCommDestroy = nullptr, a.TeamLsa = nullptr;
  if (v < ncclapi::versionCode(2, 29, 0)) a.CommQueryProperties = nullptr;
  return "";
}

std::string fileOf(void* handle, void* symbol, const std::string& fallback) {
  Dl_info info{};
  (void)handle;
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return fallback;
}

}  // namespace

std::string NcclLibrary::versionString() const {
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

std::vector<NcclCandidate> ncclCandidates(const std::string& explicitPath, const char* (*getenv)(const char*)) {
  std::vector<NcclCandidate> out;
  std::string path = explicitPath;
  std::string how = "--nccl-lib";
  if (path.empty()) {
    const char* env = getenv("COLLBENCH_NCCL_LIB");
    if (env != nullptr && *env != '\0') {
      path = env;
      how = "COLLBENCH_NCCL_LIB";
    }
  }
  if (!path.empty()) {
    // An explicit choice is the only one: falling back to another library would measure the wrong one.
    if (isDirectory(path)) {
      out.push_back({path + "/" + kSoname, how});
      out.push_back({path + "/lib/" + kSoname, how});
    } else {
      out.push_back({path, how});
    }
    return out;
  }
  out.push_back({kSoname, "system loader"});
  addSitePackages(&out, getenv);
  return out;
}

const NcclLibrary* loadedNccl() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gLibrary;
}

Status loadNccl(const std::string& explicitPath, const NcclLibrary** out) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gLibrary != nullptr) {
    *out = gLibrary;
    return Status::Ok();
  }
  const std::vector<NcclCandidate> candidates =
      ncclCandidates(explicitPath, [](const char* name) -> const char* { return std::getenv(name); });
  std::string tried;
  auto note = [&tried](const std::string& what) { tried += (tried.empty() ? "" : "; ") + what; };
  for (const NcclCandidate& c : candidates) {
    const std::vector<std::string> files = expand(c.pattern);
    if (files.empty()) {
      note(c.pattern + " (no match)");
      continue;
    }
    for (const std::string& file : files) {
      struct stat st;
      if (c.how != "system loader" && stat(file.c_str(), &st) != 0) {
        note(file + " (no such file)");
        continue;
      }
      dlerror();
      void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* e = dlerror();
        // The system loader's "cannot open shared object file" already names the soname.
        note(c.how == "system loader" ? std::string("system loader: ") + (e ? e : "not found")
                                      : file + " (" + (e ? e : "dlopen failed") + ")");
        continue;
      }
      auto* lib = new NcclLibrary();
      lib->handle = h;
      lib->how = c.how;
      void* getVersion = dlsym(h, "ncclGetVersion");
      lib->path = fileOf(h, getVersion, file);
      if (getVersion == nullptr) {
        note(lib->path + " (no ncclGetVersion: not an NCCL library)");
        delete lib;
        dlclose(h);
        continue;
      }
      int code = 0;
      reinterpret_cast<ncclapi::Result (*)(int*)>(getVersion)(&code);
      lib->versionCode = code;
      lib->version = ncclapi::normalizedVersion(code);
      if (lib->version < kMinVersion) {
        const std::string msg = "NCCL " + lib->versionString() + " at " + lib->path +
                                " is too old: collbench needs NCCL 2.7.0 or newer (ncclSend/ncclRecv)";
        delete lib;  // keep the handle open: unloading NCCL is never safe
        return Status::Error("nccl", "NCCL_TOO_OLD", msg, CB_SITE("loadNccl"));
      }
      const std::string missing = resolveAll(lib);
      if (!missing.empty()) {
        const std::string msg = lib->path + " lacks " + missing + " although it reports NCCL " + lib->versionString();
        delete lib;
        return Status::Error("nccl", "NCCL_SYMBOL_MISSING", msg, CB_SITE("dlsym"));
      }
      gLibrary = lib;
      *out = lib;
      return Status::Ok();
    }
  }
  const bool explicitGiven = !candidates.empty() && candidates[0].how != "system loader";
  std::string msg = explicitGiven ? "cannot load libnccl from " + candidates[0].how + ": " + tried
                                  : "libnccl not found; looked in: " + tried;
  msg += explicitGiven ? "; point --nccl-lib or COLLBENCH_NCCL_LIB at a libnccl.so.2 (or its directory)"
                       : "; point at one with --nccl-lib PATH or COLLBENCH_NCCL_LIB=PATH (a libnccl.so.2 or its "
                         "directory), add its directory to LD_LIBRARY_PATH, or pip install nvidia-nccl-cu13 "
                         "(or -cu12) into the active virtualenv";
  return Status::Error("nccl", "NCCL_NOT_FOUND", msg, CB_SITE("dlopen"));
}

}  // namespace collbench
