// Where a reference loop's Gloo ranks meet (plain_gloo_loop.cc, native_loop.cc as native_gloo_loop), shared so both
// find each other as collbench's gloo driver does: rank and size from the launcher's environment
// (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, RANK/WORLD_SIZE; else one rank); one rank needs no store (in
// memory); several meet in a FileStore directory: the given one, else $TMPDIR/plain-gloo-<job id>, made here and
// removed by rank 0 at the end (plainWorldDone).
#pragma once
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

struct PlainWorld {
  int rank = 0, size = 1;
  std::string storeDir;  // empty: one rank, in-memory store
  bool ownDir = false;   // made here: rank 0 removes it at the end
  std::string error;     // non-empty: what is wrong (the caller prints usage)
};

inline int plainEnvInt(const char* name, int fallback, std::string* error) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0') *error = std::string(name) + " is not an integer";
  return static_cast<int>(n);
}

inline PlainWorld plainWorld(const std::string& storeOption) {
  PlainWorld w;
  w.rank = plainEnvInt("OMPI_COMM_WORLD_RANK", plainEnvInt("PMI_RANK", plainEnvInt("RANK", 0, &w.error), &w.error),
                       &w.error);
  w.size = plainEnvInt("OMPI_COMM_WORLD_SIZE",
                       plainEnvInt("PMI_SIZE", plainEnvInt("WORLD_SIZE", 1, &w.error), &w.error), &w.error);
  if (!w.error.empty()) return w;
  if (w.size < 1 || w.rank < 0 || w.rank >= w.size) {
    w.error = "rank/size from the environment are inconsistent";
    return w;
  }
  if (w.size == 1) return w;
  w.storeDir = storeOption;
  if (w.storeDir.empty()) {
    const char* job = std::getenv("PMIX_NAMESPACE");
    if (job == nullptr) job = std::getenv("OMPI_MCA_ess_base_jobid");
    if (job == nullptr) {
      w.error = "several ranks need --store DIR (no MPI job id in the environment)";
      return w;
    }
    std::string safe = job;
    for (char& ch : safe)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-') ch = '_';
    const char* tmp = std::getenv("TMPDIR");
    w.storeDir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/plain-gloo-" + safe;
    w.ownDir = true;
  }
  if (mkdir(w.storeDir.c_str(), 0700) != 0 && errno != EEXIST)
    w.error = "cannot create " + w.storeDir + ": " + std::strerror(errno);
  return w;
}

inline void plainWorldDone(const PlainWorld& w) {
  std::error_code ignored;  // another rank may be removing it too; nothing to report either way
  if (w.ownDir && w.rank == 0) std::filesystem::remove_all(w.storeDir, ignored);
}
