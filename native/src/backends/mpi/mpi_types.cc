// MPI error mapping and the DType × RedOp → MPI handle table (see mpi_types.h). The user ops for
// half/bfloat16/fp8 are template trampolines, one per (dtype, op) pair, because an MPI user function
// learns nothing about its element type but the MPI_Datatype handle.
#include "backends/mpi/mpi_types.h"

#include <climits>
#include <cstring>

#include "core/backend_errors.h"
#include "core/element_ops.h"

namespace collbench {
namespace {

struct ClassName {
  int cls;
  const char* name;
};

// Standard error classes (MPI-3.1 §8.4, Table 8.1 and the MPI_T classes). A table, not a switch:
// implementations are free to give two macros one value, which a switch would reject.
#define CB_ERR(x) \
  { x, #x }
const ClassName kErrorClasses[] = {
    CB_ERR(MPI_SUCCESS),
    CB_ERR(MPI_ERR_BUFFER),
    CB_ERR(MPI_ERR_COUNT),
    CB_ERR(MPI_ERR_TYPE),
    CB_ERR(MPI_ERR_TAG),
    CB_ERR(MPI_ERR_COMM),
    CB_ERR(MPI_ERR_RANK),
    CB_ERR(MPI_ERR_REQUEST),
    CB_ERR(MPI_ERR_ROOT),
    CB_ERR(MPI_ERR_GROUP),
    CB_ERR(MPI_ERR_OP),
    CB_ERR(MPI_ERR_TOPOLOGY),
    CB_ERR(MPI_ERR_DIMS),
    CB_ERR(MPI_ERR_ARG),
    CB_ERR(MPI_ERR_UNKNOWN),
    CB_ERR(MPI_ERR_TRUNCATE),
    CB_ERR(MPI_ERR_OTHER),
    CB_ERR(MPI_ERR_INTERN),
    CB_ERR(MPI_ERR_IN_STATUS),
    CB_ERR(MPI_ERR_PENDING),
    CB_ERR(MPI_ERR_ACCESS),
    CB_ERR(MPI_ERR_AMODE),
    CB_ERR(MPI_ERR_ASSERT),
    CB_ERR(MPI_ERR_BAD_FILE),
    CB_ERR(MPI_ERR_BASE),
    CB_ERR(MPI_ERR_CONVERSION),
    CB_ERR(MPI_ERR_DISP),
    CB_ERR(MPI_ERR_DUP_DATAREP),
    CB_ERR(MPI_ERR_FILE_EXISTS),
    CB_ERR(MPI_ERR_FILE_IN_USE),
    CB_ERR(MPI_ERR_FILE),
    CB_ERR(MPI_ERR_INFO_KEY),
    CB_ERR(MPI_ERR_INFO_NOKEY),
    CB_ERR(MPI_ERR_INFO_VALUE),
    CB_ERR(MPI_ERR_INFO),
    CB_ERR(MPI_ERR_IO),
    CB_ERR(MPI_ERR_KEYVAL),
    CB_ERR(MPI_ERR_LOCKTYPE),
    CB_ERR(MPI_ERR_NAME),
    CB_ERR(MPI_ERR_NO_MEM),
    CB_ERR(MPI_ERR_NOT_SAME),
    CB_ERR(MPI_ERR_NO_SPACE),
    CB_ERR(MPI_ERR_NO_SUCH_FILE),
    CB_ERR(MPI_ERR_PORT),
    CB_ERR(MPI_ERR_QUOTA),
    CB_ERR(MPI_ERR_READ_ONLY),
    CB_ERR(MPI_ERR_RMA_CONFLICT),
    CB_ERR(MPI_ERR_RMA_SYNC),
    CB_ERR(MPI_ERR_SERVICE),
    CB_ERR(MPI_ERR_SIZE),
    CB_ERR(MPI_ERR_SPAWN),
    CB_ERR(MPI_ERR_UNSUPPORTED_DATAREP),
    CB_ERR(MPI_ERR_UNSUPPORTED_OPERATION),
    CB_ERR(MPI_ERR_WIN),
    CB_ERR(MPI_ERR_RMA_RANGE),
    CB_ERR(MPI_ERR_RMA_ATTACH),
    CB_ERR(MPI_ERR_RMA_FLAVOR),
    CB_ERR(MPI_ERR_RMA_SHARED),
    CB_ERR(MPI_T_ERR_MEMORY),
    CB_ERR(MPI_T_ERR_NOT_INITIALIZED),
    CB_ERR(MPI_T_ERR_CANNOT_INIT),
    CB_ERR(MPI_T_ERR_INVALID_INDEX),
    CB_ERR(MPI_T_ERR_INVALID_ITEM),
    CB_ERR(MPI_T_ERR_INVALID_HANDLE),
    CB_ERR(MPI_T_ERR_OUT_OF_HANDLES),
    CB_ERR(MPI_T_ERR_OUT_OF_SESSIONS),
    CB_ERR(MPI_T_ERR_INVALID_SESSION),
    CB_ERR(MPI_T_ERR_CVAR_SET_NOT_NOW),
    CB_ERR(MPI_T_ERR_CVAR_SET_NEVER),
    CB_ERR(MPI_T_ERR_PVAR_NO_STARTSTOP),
    CB_ERR(MPI_T_ERR_PVAR_NO_WRITE),
    CB_ERR(MPI_T_ERR_PVAR_NO_ATOMIC),
#ifdef MPI_T_ERR_INVALID
    CB_ERR(MPI_T_ERR_INVALID),
#endif
#ifdef MPI_T_ERR_INVALID_NAME
    CB_ERR(MPI_T_ERR_INVALID_NAME),
#endif
#ifdef MPI_ERR_PROC_ABORTED
    CB_ERR(MPI_ERR_PROC_ABORTED),
#endif
#ifdef MPIX_ERR_PROC_FAILED  // ULFM (Open MPI 5 with fault tolerance)
    CB_ERR(MPIX_ERR_PROC_FAILED),
    CB_ERR(MPIX_ERR_PROC_FAILED_PENDING),
    CB_ERR(MPIX_ERR_REVOKED),
#endif
};
#undef CB_ERR

// The handle table. Built-in types keep MPI's own handles and ops (what an MPI user would measure);
// the four custom types own one datatype and four ops each.
constexpr int kBaseOps = 4;  // Sum, Prod, Max, Min: the ops MPI sees
struct TypeTable {
  bool ready = false;
  MPI_Datatype type[kDTypeCount];
  MPI_Op op[kDTypeCount][kBaseOps];
  bool custom[kDTypeCount];
  MPI_Op wrapSum[2];  // wrapping user sum ops for int8, uint8 (see probeSmallIntSumSaturates)
  bool wrapping = false;
};
TypeTable gTable;  // the backend's only static state; created at init, freed before MPI_Finalize

// inout[i] = in[i] op inout[i] (MPI's order; all four ops are commutative).
template <int D, int O>
void userOp(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  constexpr DType d = static_cast<DType>(D);
  constexpr RedOp o = static_cast<RedOp>(O);
  const uint64_t n = *len > 0 ? static_cast<uint64_t>(*len) : 0;
  for (uint64_t i = 0; i < n; ++i) storeBits(inout, d, i, applyOp(d, o, loadBits(in, d, i), loadBits(inout, d, i)));
}

template <int D>
Status createCustom() {
  gTable.custom[D] = true;
  CB_MPI(MPI_Type_contiguous(static_cast<int>(dtypeSize(static_cast<DType>(D))), MPI_BYTE, &gTable.type[D]));
  CB_MPI(MPI_Type_commit(&gTable.type[D]));
  CB_MPI(MPI_Op_create(&userOp<D, static_cast<int>(RedOp::Sum)>, 1, &gTable.op[D][0]));
  CB_MPI(MPI_Op_create(&userOp<D, static_cast<int>(RedOp::Prod)>, 1, &gTable.op[D][1]));
  CB_MPI(MPI_Op_create(&userOp<D, static_cast<int>(RedOp::Max)>, 1, &gTable.op[D][2]));
  CB_MPI(MPI_Op_create(&userOp<D, static_cast<int>(RedOp::Min)>, 1, &gTable.op[D][3]));
  return Status::Ok();
}

void setBuiltin(DType t, MPI_Datatype type) {
  const int d = static_cast<int>(t);
  gTable.custom[d] = false;
  gTable.type[d] = type;
  gTable.op[d][0] = MPI_SUM;
  gTable.op[d][1] = MPI_PROD;
  gTable.op[d][2] = MPI_MAX;
  gTable.op[d][3] = MPI_MIN;
}

void clearTable() {
  gTable.wrapSum[0] = gTable.wrapSum[1] = MPI_OP_NULL;
  gTable.wrapping = false;
  for (int d = 0; d < kDTypeCount; ++d) {
    gTable.type[d] = MPI_DATATYPE_NULL;
    gTable.custom[d] = false;
    for (int o = 0; o < kBaseOps; ++o) gTable.op[d][o] = MPI_OP_NULL;
  }
  gTable.ready = false;
}

// The loops below are instantiated per dtype so element_ops' per-element switch folds away.
template <int D>
void scaleT(const void* src, void* dst, uint64_t n, int scalar) {
  constexpr DType d = static_cast<DType>(D);
  for (uint64_t i = 0; i < n; ++i) storeBits(dst, d, i, scaleBits(d, loadBits(src, d, i), scalar));
}

template <int D>
void divideT(void* p, uint64_t n, int divisor) {
  constexpr DType d = static_cast<DType>(D);
  for (uint64_t i = 0; i < n; ++i) storeBits(p, d, i, divideBits(d, loadBits(p, d, i), divisor));
}

#define CB_MPI_DTYPE_DISPATCH(t, FN, ...) \
  switch (t) {                            \
    case DType::Int8:                     \
      FN<0>(__VA_ARGS__);                 \
      break;                              \
    case DType::Uint8:                    \
      FN<1>(__VA_ARGS__);                 \
      break;                              \
    case DType::Int32:                    \
      FN<2>(__VA_ARGS__);                 \
      break;                              \
    case DType::Uint32:                   \
      FN<3>(__VA_ARGS__);                 \
      break;                              \
    case DType::Int64:                    \
      FN<4>(__VA_ARGS__);                 \
      break;                              \
    case DType::Uint64:                   \
      FN<5>(__VA_ARGS__);                 \
      break;                              \
    case DType::Float16:                  \
      FN<6>(__VA_ARGS__);                 \
      break;                              \
    case DType::Float32:                  \
      FN<7>(__VA_ARGS__);                 \
      break;                              \
    case DType::Float64:                  \
      FN<8>(__VA_ARGS__);                 \
      break;                              \
    case DType::Bfloat16:                 \
      FN<9>(__VA_ARGS__);                 \
      break;                              \
    case DType::F8e4m3:                   \
      FN<10>(__VA_ARGS__);                \
      break;                              \
    case DType::F8e5m2:                   \
      FN<11>(__VA_ARGS__);                \
      break;                              \
  }

}  // namespace

const char* mpiErrorClassName(int errorClass) {
  for (const ClassName& c : kErrorClasses)
    if (c.cls == errorClass) return c.name;
  return nullptr;
}

std::string mpiCallName(const char* callText) {
  const char* paren = std::strchr(callText, '(');
  return paren ? std::string(callText, paren) : std::string(callText);
}

Status toInt(uint64_t v, const char* what, Coll c, int* out) {
  if (v > static_cast<uint64_t>(INT_MAX))
    return Status::Error("core", "CORE_COUNT_TOO_LARGE",
                         std::string(collName(c)) + ": " + what + " " + std::to_string(v) +
                             " exceeds INT_MAX, the largest count an MPI call takes",
                         CB_SITE("MpiBackend::enqueue"));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status mpiErrorStatus(int rc, std::string site) {
  int cls = rc;
  if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = rc;
  const char* name = mpiErrorClassName(cls);
  std::string code = name ? name : "MPI_ERR_CLASS_" + std::to_string(cls);
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  std::string message;
  if (MPI_Error_string(rc, text, &len) == MPI_SUCCESS && len > 0)
    message.assign(text, static_cast<size_t>(len));
  else
    message = "MPI error code " + std::to_string(rc);
  return Status::Error("mpi", std::move(code), std::move(message), std::move(site));
}

Status initMpiTypes() {
  if (gTable.ready) return Status::Ok();
  clearTable();
  setBuiltin(DType::Int8, MPI_INT8_T);
  setBuiltin(DType::Uint8, MPI_UINT8_T);
  setBuiltin(DType::Int32, MPI_INT32_T);
  setBuiltin(DType::Uint32, MPI_UINT32_T);
  setBuiltin(DType::Int64, MPI_INT64_T);
  setBuiltin(DType::Uint64, MPI_UINT64_T);
  setBuiltin(DType::Float32, MPI_FLOAT);
  setBuiltin(DType::Float64, MPI_DOUBLE);
  Status s = createCustom<static_cast<int>(DType::Float16)>();
  if (s.ok) s = createCustom<static_cast<int>(DType::Bfloat16)>();
  if (s.ok) s = createCustom<static_cast<int>(DType::F8e4m3)>();
  if (s.ok) s = createCustom<static_cast<int>(DType::F8e5m2)>();
  if (s.ok) {
    const int rc = MPI_Op_create(&userOp<0, static_cast<int>(RedOp::Sum)>, 1, &gTable.wrapSum[0]);
    if (rc != MPI_SUCCESS) s = mpiErrorStatus(rc, CB_SITE("MPI_Op_create"));
  }
  if (s.ok) {
    const int rc = MPI_Op_create(&userOp<1, static_cast<int>(RedOp::Sum)>, 1, &gTable.wrapSum[1]);
    if (rc != MPI_SUCCESS) s = mpiErrorStatus(rc, CB_SITE("MPI_Op_create"));
  }
  gTable.ready = true;  // so that freeMpiTypes() releases whatever was created
  if (!s.ok) {
    (void)freeMpiTypes();
    return s;
  }
  return Status::Ok();
}

Status freeMpiTypes() {
  if (!gTable.ready) return Status::Ok();
  Status first = Status::Ok();
  for (MPI_Op& op : gTable.wrapSum) {
    if (op == MPI_OP_NULL) continue;
    const int rc = MPI_Op_free(&op);
    if (rc != MPI_SUCCESS && first.ok) first = mpiErrorStatus(rc, CB_SITE("MPI_Op_free"));
  }
  for (int d = 0; d < kDTypeCount; ++d) {
    if (!gTable.custom[d]) continue;
    for (int o = 0; o < kBaseOps; ++o) {
      if (gTable.op[d][o] == MPI_OP_NULL) continue;
      const int rc = MPI_Op_free(&gTable.op[d][o]);
      if (rc != MPI_SUCCESS && first.ok) first = mpiErrorStatus(rc, CB_SITE("MPI_Op_free"));
    }
    if (gTable.type[d] != MPI_DATATYPE_NULL) {
      const int rc = MPI_Type_free(&gTable.type[d]);
      if (rc != MPI_SUCCESS && first.ok) first = mpiErrorStatus(rc, CB_SITE("MPI_Type_free"));
    }
  }
  clearTable();
  return first;
}

bool mpiTypesReady() {
  return gTable.ready;
}

Status probeSmallIntSumSaturates(bool* saturates) {
  *saturates = false;
  constexpr int kN = 256;  // long enough for every vector width of op/avx
  uint8_t in[kN], inout[kN];
  // uint8: 200 + 100 wraps to 44, saturates to 255.
  std::memset(in, 200, kN);
  std::memset(inout, 100, kN);
  CB_MPI(MPI_Reduce_local(in, inout, kN, MPI_UINT8_T, MPI_SUM));
  for (int i = 0; i < kN; ++i) *saturates = *saturates || inout[i] != 44;
  // int8: 100 + 100 wraps to -56 (0xc8), saturates to 127.
  std::memset(in, 100, kN);
  std::memset(inout, 100, kN);
  CB_MPI(MPI_Reduce_local(in, inout, kN, MPI_INT8_T, MPI_SUM));
  for (int i = 0; i < kN; ++i) *saturates = *saturates || inout[i] != 0xc8;
  return Status::Ok();
}

void useWrappingSmallIntSum(bool on) {
  if (!gTable.ready) return;
  gTable.wrapping = on;
  gTable.op[static_cast<int>(DType::Int8)][0] = on ? gTable.wrapSum[0] : MPI_SUM;
  gTable.op[static_cast<int>(DType::Uint8)][0] = on ? gTable.wrapSum[1] : MPI_SUM;
}

bool wrappingSmallIntSum() {
  return gTable.ready && gTable.wrapping;
}

MPI_Datatype mpiDatatype(DType t) {
  const int d = static_cast<int>(t);
  if (!gTable.ready || d < 0 || d >= kDTypeCount) return MPI_DATATYPE_NULL;
  return gTable.type[d];
}

MPI_Op mpiReduceOp(DType t, RedOp op) {
  const int d = static_cast<int>(t);
  if (!gTable.ready || d < 0 || d >= kDTypeCount) return MPI_OP_NULL;
  switch (op) {
    case RedOp::Sum:
    case RedOp::Avg:
    case RedOp::MulSum:
      return gTable.op[d][0];
    case RedOp::Prod:
      return gTable.op[d][1];
    case RedOp::Max:
      return gTable.op[d][2];
    case RedOp::Min:
      return gTable.op[d][3];
  }
  return MPI_OP_NULL;
}

bool mpiTypeIsCustom(DType t) {
  const int d = static_cast<int>(t);
  return d >= 0 && d < kDTypeCount && gTable.ready && gTable.custom[d];
}

void scaleElements(DType t, const void* src, void* dst, uint64_t n, int scalar) {
  CB_MPI_DTYPE_DISPATCH(t, scaleT, src, dst, n, scalar)
}

void divideElements(DType t, void* p, uint64_t n, int divisor) {
  CB_MPI_DTYPE_DISPATCH(t, divideT, p, n, divisor)
}

const char* threadLevelName(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "MPI_THREAD_UNKNOWN";
}

}  // namespace collbench
