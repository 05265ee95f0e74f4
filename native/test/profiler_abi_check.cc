// Compile-only check of our profiler declarations (native/src/profiler/profiler_abi.h) against NCCL's own profiler
// headers (the nccl/ folder of NCCL's plugins/profiler/example): event bits, step states, the offsets of every
// descriptor member we read in versions 5 and 6, and the function tables. Built by test/native/link-profiler.test.ts.
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "nccl/err.h"
#include "nccl/profiler.h"
#include "profiler/profiler_abi.h"

namespace a = collbench::profabi;

#define SAME(ours, theirs) static_assert(static_cast<long>(ours) == static_cast<long>(theirs), #ours " != " #theirs)
SAME(a::Success, ncclSuccess);
SAME(a::InternalError, ncclInternalError);
SAME(a::EventGroup, ncclProfileGroup);
SAME(a::EventColl, ncclProfileColl);
SAME(a::EventP2p, ncclProfileP2p);
SAME(a::EventProxyOp, ncclProfileProxyOp);
SAME(a::EventProxyStep, ncclProfileProxyStep);
SAME(a::EventProxyCtrl, ncclProfileProxyCtrl);
SAME(a::EventKernelCh, ncclProfileKernelCh);
SAME(a::EventNetPlugin, ncclProfileNetPlugin);
SAME(a::StateSendGPUWait, ncclProfilerProxyStepSendGPUWait);
SAME(a::StateSendWait, ncclProfilerProxyStepSendWait);
SAME(a::StateRecvWait, ncclProfilerProxyStepRecvWait);
SAME(a::StateRecvFlushWait, ncclProfilerProxyStepRecvFlushWait);
SAME(a::StateRecvGPUWait, ncclProfilerProxyStepRecvGPUWait);
SAME(a::StateSendPeerWait, ncclProfilerProxyStepSendPeerWait_v4);
SAME(a::StateKernelChStop, ncclProfilerKernelChStop);
SAME(a::LogWarn, NCCL_LOG_WARN);
SAME(a::LogInfo, NCCL_LOG_INFO);
SAME(a::LogInit, NCCL_INIT);
static_assert(sizeof(ncclProfilerEventState_t) == sizeof(int), "event state is an int");
static_assert(sizeof(ncclResult_t) == sizeof(a::Result), "result size");

#ifdef COLLBENCH_ABI_BREAK
SAME(a::StateSendWait, ncclProfilerProxyStepRecvWait);  // deliberately broken expectation
#endif

// Every member we read, at the same offset in our descriptor and in NCCL's version 5 and 6 descriptors.
#define AT(T, member)                                                                              \
  static_assert(offsetof(a::EventDescr, member) == offsetof(T, member), #T "." #member " offset"); \
  static_assert(sizeof(a::EventDescr::member) == sizeof(T::member), #T "." #member " size")
#define DESCR(T)             \
  AT(T, type);               \
  AT(T, parentObj);          \
  AT(T, rank);               \
  AT(T, coll.seqNumber);     \
  AT(T, coll.func);          \
  AT(T, coll.count);         \
  AT(T, coll.datatype);      \
  AT(T, coll.nChannels);     \
  AT(T, coll.algo);          \
  AT(T, coll.proto);         \
  AT(T, p2p.func);           \
  AT(T, p2p.datatype);       \
  AT(T, p2p.count);          \
  AT(T, p2p.peer);           \
  AT(T, p2p.nChannels);      \
  AT(T, proxyOp.pid);        \
  AT(T, proxyOp.channelId);  \
  AT(T, proxyOp.peer);       \
  AT(T, proxyOp.nSteps);     \
  AT(T, proxyOp.chunkSize);  \
  AT(T, proxyOp.isSend);     \
  AT(T, proxyStep.step);     \
  AT(T, kernelCh.channelId); \
  AT(T, kernelCh.pTimer)
DESCR(ncclProfilerEventDescr_v5_t);
static_assert(sizeof(a::EventDescr) == sizeof(ncclProfilerEventDescr_v5_t), "v5 descriptor size");

#define ARG(T, member)                                                                       \
  static_assert(offsetof(a::EventStateArgs, member) == offsetof(T, member), #T "." #member); \
  static_assert(sizeof(a::EventStateArgs::member) == sizeof(T::member), #T "." #member " size")
ARG(ncclProfilerEventStateArgs_v5_t, proxyStep.transSize);
ARG(ncclProfilerEventStateArgs_v5_t, kernelCh.pTimer);
static_assert(sizeof(a::EventStateArgs) == sizeof(ncclProfilerEventStateArgs_v5_t), "state args size");

#define TABLE(T)                                                                                      \
  static_assert(sizeof(a::ProfilerTable) == sizeof(T), #T " size");                                   \
  static_assert(offsetof(a::ProfilerTable, name) == offsetof(T, name), #T ".name");                   \
  static_assert(offsetof(a::ProfilerTable, init) == offsetof(T, init), #T ".init");                   \
  static_assert(offsetof(a::ProfilerTable, startEvent) == offsetof(T, startEvent), #T ".startEvent"); \
  static_assert(offsetof(a::ProfilerTable, stopEvent) == offsetof(T, stopEvent), #T ".stopEvent");    \
  static_assert(offsetof(a::ProfilerTable, recordEventState) == offsetof(T, recordEventState), #T);   \
  static_assert(offsetof(a::ProfilerTable, finalize) == offsetof(T, finalize), #T ".finalize")
TABLE(ncclProfiler_v5_t);

// Version 6 (NCCL >= 2.29): the same members at the same offsets, the same table.
#ifdef PROFILER_V6_H_
DESCR(ncclProfilerEventDescr_v6_t);
static_assert(sizeof(a::EventDescr) <= sizeof(ncclProfilerEventDescr_v6_t), "v6 descriptor extends v5's");
ARG(ncclProfilerEventStateArgs_v6_t, proxyStep.transSize);
ARG(ncclProfilerEventStateArgs_v6_t, kernelCh.pTimer);
TABLE(ncclProfiler_v6_t);
#endif
