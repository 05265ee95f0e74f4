/* What collbench's NCCL link profiler (libcollbench_nccl_profiler.so) exports besides NCCL's function table: the
 * rows it aggregates per communicator and the call that reads (and resets) them. collbench dlopen's the library NCCL
 * loaded (same path, so the same copy) and calls collbenchProfilerRead at each row-half. Plain C: no NCCL needed. */
#ifndef CB_LINK_PROFILER_H
#define CB_LINK_PROFILER_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a row's layout changes; collbenchProfilerAbi() returns it. */
#define CB_PROFILER_ABI 1

/* Step states timed per link, in this order in CollbenchLinkRow.stateNs. */
enum CollbenchStepState {
  CB_SEND_GPU_WAIT = 0,  /* send: waiting for the GPU to produce the step's data */
  CB_SEND_PEER_WAIT = 1, /* send: data ready, the network not yet taking it */
  CB_SEND_WAIT = 2,      /* send: handed to the network, waiting for it to complete */
  CB_RECV_WAIT = 3,      /* recv: waiting for data to arrive */
  CB_RECV_FLUSH_WAIT = 4,
  CB_RECV_GPU_WAIT = 5, /* recv: waiting for the GPU to consume the data */
  CB_STEP_STATES = 6
};

/* Capacities: every table is fixed when the communicator's context is made, whatever the run's length. */
#define CB_PROFILER_MAX_COMMS 64
#define CB_PROFILER_MAX_LINKS 4096     /* (peer, channel, direction) per communicator */
#define CB_PROFILER_MAX_COLL_KINDS 512 /* (func, count, type, algo, proto, nChannels) per read period */
#define CB_PROFILER_MAX_CHANNELS 64
#define CB_PROFILER_STEP_SLOTS 8192   /* proxy steps in flight per communicator */
#define CB_PROFILER_OP_SLOTS 2048     /* proxy operations in flight per communicator */
#define CB_PROFILER_KERNEL_SLOTS 1024 /* kernel channels in flight per communicator */

/* One direction of one link of one channel, seen from `rank`: bytes moved, steps, time in each step state summed
 * over steps (stateNs: steps in flight together count each), and the wall time during which at least one step was in
 * that state (stateWallNs: the union of the steps' intervals; bytes / stateWallNs[SEND_WAIT] is the link's rate
 * while the network held its data). */
typedef struct {
  uint64_t commId;
  int32_t rank, nRanks, peer, channel, isSend, reserved;
  uint64_t bytes, steps, ops;
  uint64_t stateNs[CB_STEP_STATES];
  uint64_t stateWallNs[CB_STEP_STATES];
} CollbenchLinkRow;

/* One kind of collective (or point-to-point call) and how NCCL ran it, with its number of calls. */
typedef struct {
  uint64_t commId;
  int32_t rank, nChannels;
  uint64_t count, calls;
  char func[32], datatype[24], algo[16], proto[16];
} CollbenchCollRow;

/* One kernel channel: how many times it ran, its first and last GPU start (globaltimer ns), and its time busy. */
typedef struct {
  uint64_t commId;
  int32_t rank, channel;
  uint64_t kernels, firstStartNs, lastStartNs, busyNs;
} CollbenchKernelChRow;

/* What did not fit: events the plugin saw but could not keep (their time is missing from the rows). */
typedef struct {
  uint64_t droppedSteps, droppedOps, droppedKernelCh, droppedLinks, droppedCollKinds;
  int32_t comms, untrackedComms;
} CollbenchProfilerTotals;

int collbenchProfilerAbi(void);

/* Copies every live communicator's rows into the caller's arrays (capacities in, counts out) and, when `reset` is
 * non-zero, zeroes what it copied. Returns 0, or -1 when an array was too small (the counts then say how many rows
 * there are; nothing was reset). Safe while NCCL runs: each counter is read and reset atomically, a step finishing
 * during the read lands in this read or the next. */
int collbenchProfilerRead(int reset, CollbenchLinkRow* links, int linkCap, int* nLinks, CollbenchCollRow* colls,
                          int collCap, int* nColls, CollbenchKernelChRow* channels, int channelCap, int* nChannels,
                          CollbenchProfilerTotals* totals);

/* The same rows as JSON, grouped per communicator rank (what collbench gathers to rank 0):
 * {"ranks":[{"rank":R,"commId":"hex","links":[{"peer","channel","isSend","bytes","steps","ops","stateNs":[6],
 * "stateWallNs":[6]}],"colls":[{"func","count","datatype","algo","proto","nChannels","calls"}],
 * "kernelChannels":[{"channel","kernels","firstStartNs","lastStartNs","busyNs"}]}],"totals":{...}}.
 * Returns a string to give back to collbenchProfilerFree, or NULL when out of memory. */
char* collbenchProfilerReadJson(int reset);
void collbenchProfilerFree(char* json);

/* For the test harness: the clock (ns) the plugin stamps step states with; NULL restores CLOCK_MONOTONIC. */
void collbenchProfilerSetClock(uint64_t (*clockNs)(void));

#ifdef __cplusplus
}
#endif
#endif
