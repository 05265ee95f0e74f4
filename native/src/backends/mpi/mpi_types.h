// MPI plumbing: return codes become Status values (error-class names as stable codes, e.g. MPI_ERR_TRUNCATE), and
// one table maps DType × RedOp onto MPI handles. Types MPI lacks (half, bfloat16, fp8) are byte types with user ops
// built on element_ops.h, so they reduce bit-exactly as the NCCL kernels and the host check do.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/types.h"

namespace collbench {

// Name of a standard MPI error class ("MPI_ERR_COMM"), or nullptr when the class is not a standard one.
const char* mpiErrorClassName(int errorClass);

// Status for a failed MPI call: backend "mpi", code = error-class name ("MPI_ERR_CLASS_<n>" for
// non-standard classes), message = MPI_Error_string text, site = the caller's CB_SITE.
Status mpiErrorStatus(int rc, std::string site);

// "MPI_Allreduce(a, b, ...)" -> "MPI_Allreduce": the site names the call, not its arguments.
std::string mpiCallName(const char* callText);

// MPI counts and displacements are int (Open MPI 4.1 has no MPI_*_c big-count calls). The element-wise
// collectives (all_reduce, broadcast, reduce, sendrecv) split a larger count into pieces (forPieces in
// mpi_collectives.cc); the others refuse it here (and bench/backends/mpi.ts refuses it before the run, exit 2).
Status toInt(uint64_t v, const char* what, Coll c, int* out);

// Check an MPI return code; on failure return the Status from the enclosing function.
#define CB_MPI(call)                                                                            \
  do {                                                                                          \
    const int cb_mpi_rc_ = (call);                                                              \
    if (cb_mpi_rc_ != MPI_SUCCESS)                                                              \
      return ::collbench::mpiErrorStatus(cb_mpi_rc_, CB_SITE(::collbench::mpiCallName(#call))); \
  } while (0)

// Create the user datatypes and ops (idempotent; needs MPI initialized). Freed by freeMpiTypes(),
// which must run before MPI_Finalize.
Status initMpiTypes();
Status freeMpiTypes();
bool mpiTypesReady();

// MPI datatype of `t` (MPI_DATATYPE_NULL before initMpiTypes()).
MPI_Datatype mpiDatatype(DType t);
// MPI op of `op` on `t`. Avg and MulSum map to the sum op: the backend divides after / scales before,
// since MPI has neither an average nor a pre-multiplied sum.
MPI_Op mpiReduceOp(DType t, RedOp op);
// True when `t` uses a user-defined datatype and user ops (half, bfloat16, f8e4m3, f8e5m2).
bool mpiTypeIsCustom(DType t);

// Open MPI 4.1's op/avx component adds 8-bit integers with saturation instead of wrapping once a
// reduction is long enough to take its vector path (open-mpi/ompi#8045, closed "wontfix"): int8/uint8
// sum (hence avg, mulsum) then differ from NCCL's and the pattern's wrap-around results. The probe
// reduces 256 elements with MPI_Reduce_local (same op framework as the collectives) and reports
// whether the library's MPI_SUM saturates for int8 or uint8. `--mca op ^avx` avoids the defect.
Status probeSmallIntSumSaturates(bool* saturates);
// Replace (on = true) MPI_SUM for int8/uint8 by collbench's own wrapping user op, or go back to
// MPI's built-in op (the default: collbench measures the library as it is, and the check reports
// what it computes).
void useWrappingSmallIntSum(bool on);
bool wrappingSmallIntSum();

// Element loops on host memory, dispatched once per call on the dtype (element_ops.h semantics).
// dst[i] = scaleBits(src[i], scalar); src may equal dst.
void scaleElements(DType t, const void* src, void* dst, uint64_t n, int scalar);
// p[i] = divideBits(p[i], divisor).
void divideElements(DType t, void* p, uint64_t n, int divisor);

const char* threadLevelName(int level);

}  // namespace collbench
