// Thread placement for the timed loop (loop_cpu.h): Linux affinity calls, every return code checked.
#include "loop_cpu.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef __linux__
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace collbench::addon {
namespace {

Status sysError(const char* call, int err, const std::string& what) {
  return Status::Error("core", "CORE_AFFINITY", what + ": " + std::strerror(err), CB_SITE(call));
}

}  // namespace

#ifdef __linux__

Status allowedCpus(std::vector<int>* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return sysError("sched_getaffinity", errno, "reading this thread's CPUs");
  out->clear();
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out->push_back(c);
  return Status::Ok();
}

Status isolateCallingThread(int cpu, std::vector<int>* others) {
  std::vector<int> allowed;
  CB_TRY(allowedCpus(&allowed));
  cpu_set_t rest, mine;
  CPU_ZERO(&rest);
  CPU_ZERO(&mine);
  bool found = false;
  others->clear();
  for (int c : allowed) {
    if (c == cpu) {
      found = true;
      continue;
    }
    CPU_SET(c, &rest);
    others->push_back(c);
  }
  if (!found || others->empty())
    return Status::Error("core", "CORE_BAD_SPEC",
                         "CPU " + std::to_string(cpu) + " is not one of several CPUs this process may use",
                         CB_SITE("isolateCallingThread"));
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return sysError("opendir", errno, "listing this process's threads (/proc/self/task)");
  Status status;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (tid == self) continue;
    // A thread that ended meanwhile (ESRCH) has nothing to move.
    if (sched_setaffinity(tid, sizeof rest, &rest) != 0 && errno != ESRCH) {
      status = sysError("sched_setaffinity", errno, "moving thread " + std::to_string(tid) + " off the loop's CPU");
      break;
    }
  }
  closedir(dir);
  CB_TRY(status);
  CPU_SET(cpu, &mine);
  if (sched_setaffinity(0, sizeof mine, &mine) != 0)
    return sysError("sched_setaffinity", errno, "pinning the loop thread to CPU " + std::to_string(cpu));
  return Status::Ok();
}

#else

Status allowedCpus(std::vector<int>*) {
  return Status::Error("core", "CORE_UNSUPPORTED", "thread placement needs Linux", CB_SITE("allowedCpus"));
}
Status isolateCallingThread(int, std::vector<int>*) {
  return Status::Error("core", "CORE_UNSUPPORTED", "thread placement needs Linux", CB_SITE("isolateCallingThread"));
}

#endif

}  // namespace collbench::addon
