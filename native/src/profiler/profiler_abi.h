// Our own declarations of the part of NCCL's profiler plugin interface (versions 5 and 6) that collbench's link
// profiler uses: event types, step states, the event descriptor and state arguments, and the function table NCCL
// finds by name. No NCCL header is needed to build; test/native/link-profiler.test.ts pins them against NCCL's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace collbench::profabi {

// ncclResult_t (only the values a profiler returns).
enum Result : int { Success = 0, InternalError = 3 };

// The event type bits (NCCL's ncclProfile* enum): one bit per type, the activation mask is their OR.
enum EventType : int {
  EventGroup = 1 << 0,
  EventColl = 1 << 1,
  EventP2p = 1 << 2,
  EventProxyOp = 1 << 3,
  EventProxyStep = 1 << 4,
  EventProxyCtrl = 1 << 5,
  EventKernelCh = 1 << 6,
  EventNetPlugin = 1 << 7,
};

// ncclProfilerEventState_t values recorded on proxy steps and kernel channels.
enum EventState : int {
  StateSendGPUWait = 8,
  StateSendWait = 9,
  StateRecvWait = 10,
  StateRecvFlushWait = 11,
  StateRecvGPUWait = 12,
  StateSendPeerWait = 20,  // ncclProfilerProxyStepSendPeerWait_v4: data ready, the network not yet taking it
  StateKernelChStop = 22,
};

// ncclDebugLogLevel values and the logger NCCL passes to init.
enum LogLevel : int { LogWarn = 2, LogInfo = 3 };
enum LogSubsys : unsigned long { LogInit = 1 };
typedef void (*DebugLogger)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// ncclProfilerEventDescr_v5_t. Version 6 appends members to the union (copy-engine events) and keeps every one of
// these at the same offset, so one descriptor serves both tables.
struct EventDescr {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // GPU globaltimer at the channel's start
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

// ncclProfilerEventStateArgs_v5_t (version 6 uses the same type).
union EventStateArgs {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // GPU globaltimer at the channel's stop
  } kernelCh;
};

// ncclProfiler_v5_t and ncclProfiler_v6_t: the same five entries.
struct ProfilerTable {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                 int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, EventStateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

}  // namespace collbench::profabi
