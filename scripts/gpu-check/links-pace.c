/* A helper of gpu-check part 70 (not a part): LD_PRELOAD into one rank to make its outgoing TCP link slow. Every
 * send()/sendto() on a TCP socket of this process is paced to CB_LINKS_PACE_MBPS megabytes per second (a token
 * bucket over the whole process, 64 KiB per call at most): NCCL's sockets send through send() (2.28.9's
 * src/misc/socket.cc, 2.30.7's src/os/linux.cc). Unset or 0: no pacing.
 * Build: cc -O2 -shared -fPIC -o links-pace.so links-pace.c -ldl -lpthread */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

static pthread_mutex_t pace_lock = PTHREAD_MUTEX_INITIALIZER;
static double pace_rate = -1; /* bytes per second; 0: off */
static double pace_next = 0;  /* when the bucket is empty again (s, CLOCK_MONOTONIC) */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int paced_socket(int fd) {
  if (pace_rate < 0) {
    const char* v = getenv("CB_LINKS_PACE_MBPS");
    pace_rate = v ? atof(v) * 1e6 : 0;
  }
  if (pace_rate <= 0) return 0;
  int type = 0;
  socklen_t len = sizeof type;
  struct sockaddr_storage addr;
  socklen_t alen = sizeof addr;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return 0;
  return getsockname(fd, (struct sockaddr*)&addr, &alen) == 0 &&
         (addr.ss_family == AF_INET || addr.ss_family == AF_INET6);
}

static void pace(ssize_t sent) {
  if (sent <= 0) return;
  pthread_mutex_lock(&pace_lock);
  double t = now_s();
  if (pace_next < t) pace_next = t;
  pace_next += sent / pace_rate;
  double wait = pace_next - t;
  pthread_mutex_unlock(&pace_lock);
  if (wait > 0) {
    struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

ssize_t send(int fd, const void* buf, size_t len, int flags) {
  static ssize_t (*real)(int, const void*, size_t, int);
  if (!real) real = (ssize_t(*)(int, const void*, size_t, int))dlsym(RTLD_NEXT, "send");
  if (!paced_socket(fd)) return real(fd, buf, len, flags);
  ssize_t n = real(fd, buf, len > 65536 ? 65536 : len, flags);
  pace(n);
  return n;
}

ssize_t sendto(int fd, const void* buf, size_t len, int flags, const struct sockaddr* to, socklen_t tolen) {
  static ssize_t (*real)(int, const void*, size_t, int, const struct sockaddr*, socklen_t);
  if (!real)
    real = (ssize_t(*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "sendto");
  if (!paced_socket(fd)) return real(fd, buf, len, flags, to, tolen);
  ssize_t n = real(fd, buf, len > 65536 ? 65536 : len, flags, to, tolen);
  pace(n);
  return n;
}
