// Gloo plumbing: Gloo's C++ exceptions become Status values at the boundary (GLOO_IO, GLOO_TIMEOUT, GLOO_ENFORCE,
// …), and one dispatch maps DType × RedOp onto Gloo's reduction functions, with element_ops.h for the types Gloo has
// no arithmetic for (bfloat16, fp8). The MPI counterpart is mpi_types.h.
#pragma once
#include <gloo/math.h>
#include <gloo/types.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>

#include "core/element_ops.h"
#include "core/status.h"
#include "core/types.h"

namespace collbench {

// Status for the exception in flight (call only inside a catch block). Codes: GLOO_TIMEOUT (an
// IoException about a timeout), GLOO_IO (other IoException: a dead or closed peer),
// GLOO_ENFORCE (EnforceNotMet: a failed Gloo precondition), GLOO_INVALID_OPERATION,
// GLOO_EXCEPTION (other gloo::Exception or std::exception), GLOO_OUT_OF_MEMORY, GLOO_UNKNOWN.
Status glooExceptionStatus(std::exception_ptr e, const std::string& site);

// Runs `body` and turns any exception into a Status naming `site`.
template <typename F>
Status glooGuard(const std::string& site, F&& body) {
  try {
    body();
    return Status::Ok();
  } catch (...) {
    return glooExceptionStatus(std::current_exception(), site);
  }
}

// The same, with the site text built only when `body` threw: `site` is a callable returning it. No
// string is built per op in the timed loop.
template <typename S, typename F>
Status glooGuardLazy(S&& site, F&& body) {
  try {
    body();
    return Status::Ok();
  } catch (...) {
    return glooExceptionStatus(std::current_exception(), site());
  }
}

#define CB_GLOO(what, ...) CB_TRY(::collbench::glooGuardLazy([&]() { return CB_SITE(what); }, [&]() { __VA_ARGS__; }))

// Storage types standing for the dtypes reduced by collbench's own functions: only their size
// matters to Gloo's algorithms; the reduction works on their bits through element_ops.h.
template <int Bytes>
struct RawElement;
template <>
struct RawElement<1> {
  uint8_t bits;
};
template <>
struct RawElement<2> {
  uint16_t bits;
};

// C++ element type of each DType. float16 is raw storage too, reduced either by gloo::float16's
// operators (Gloo's own half type, which PyTorch also uses: the default) or by element_ops.h. Gloo's
// float16 has a defective copy assignment: operator= skips the store when `rhs != *this`, and that
// operator!= compares rhs's bits with the half value of this's bits read as an integer, so its
// sum/max/… silently keep a stale element now and then. COLLBENCH_GLOO_FLOAT16=collbench avoids it.
template <DType D>
struct ElementOf;
template <>
struct ElementOf<DType::Int8> {
  using type = int8_t;
};
template <>
struct ElementOf<DType::Uint8> {
  using type = uint8_t;
};
template <>
struct ElementOf<DType::Int32> {
  using type = int32_t;
};
template <>
struct ElementOf<DType::Uint32> {
  using type = uint32_t;
};
template <>
struct ElementOf<DType::Int64> {
  using type = int64_t;
};
template <>
struct ElementOf<DType::Uint64> {
  using type = uint64_t;
};
template <>
struct ElementOf<DType::Float16> {
  struct type : RawElement<2> {};
};
template <>
struct ElementOf<DType::Float32> {
  using type = float;
};
template <>
struct ElementOf<DType::Float64> {
  using type = double;
};
template <>
struct ElementOf<DType::Bfloat16> {
  struct type : RawElement<2> {};
};
template <>
struct ElementOf<DType::F8e4m3> {
  struct type : RawElement<1> {};
};
template <>
struct ElementOf<DType::F8e5m2> {
  struct type : RawElement<1> {};
};

// True for the dtypes held as raw storage (see ElementOf): reduced by element_ops.h (or, for
// float16 on request, by gloo::float16).
constexpr bool glooTypeIsCustom(DType t) {
  return t == DType::Float16 || t == DType::Bfloat16 || t == DType::F8e4m3 || t == DType::F8e5m2;
}

template <DType D>
using DTypeTag = std::integral_constant<DType, D>;

// Calls fn(DTypeTag<D>{}) for the runtime dtype `t` (one instantiation per dtype); inside,
// `constexpr DType D = decltype(tag)::value;` recovers the dtype.
template <typename F>
Status dispatchDType(DType t, F&& fn) {
  switch (t) {
    case DType::Int8:
      return fn(DTypeTag<DType::Int8>{});
    case DType::Uint8:
      return fn(DTypeTag<DType::Uint8>{});
    case DType::Int32:
      return fn(DTypeTag<DType::Int32>{});
    case DType::Uint32:
      return fn(DTypeTag<DType::Uint32>{});
    case DType::Int64:
      return fn(DTypeTag<DType::Int64>{});
    case DType::Uint64:
      return fn(DTypeTag<DType::Uint64>{});
    case DType::Float16:
      return fn(DTypeTag<DType::Float16>{});
    case DType::Float32:
      return fn(DTypeTag<DType::Float32>{});
    case DType::Float64:
      return fn(DTypeTag<DType::Float64>{});
    case DType::Bfloat16:
      return fn(DTypeTag<DType::Bfloat16>{});
    case DType::F8e4m3:
      return fn(DTypeTag<DType::F8e4m3>{});
    case DType::F8e5m2:
      return fn(DTypeTag<DType::F8e5m2>{});
  }
  return Status::Error("core", "CORE_BAD_SPEC", "unknown datatype " + std::to_string(static_cast<int>(t)),
                       CB_SITE("dispatchDType"));
}

// The op Gloo runs: avg and mulsum reduce by sum (their extra step is the backend's).
constexpr RedOp baseOp(RedOp op) {
  return op == RedOp::Avg || op == RedOp::MulSum ? RedOp::Sum : op;
}

// c[i] = a[i] (op) b[i] on raw bits (element_ops.h): the custom reduction of half, bfloat16, fp8.
template <DType D, RedOp O>
void customReduce(void* c, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) storeBits(c, D, i, applyOp(D, O, loadBits(a, D, i), loadBits(b, D, i)));
}

// c = a (O) b over n elements of dtype D, as Gloo's math.h functions take it (c may equal a).
// O is a base op (sum, prod, max, min). GlooHalf: float16 through gloo::float16's operators.
template <DType D, RedOp O, bool GlooHalf>
void reduceElements(void* c, const void* a, const void* b, size_t n) {
  using T = std::conditional_t<D == DType::Float16 && GlooHalf, gloo::float16, typename ElementOf<D>::type>;
  if constexpr (glooTypeIsCustom(D) && !(D == DType::Float16 && GlooHalf)) {
    customReduce<D, O>(c, a, b, n);
  } else if constexpr (O == RedOp::Prod) {
    gloo::product<T>(c, a, b, n);
  } else if constexpr (O == RedOp::Max) {
    gloo::max<T>(c, a, b, n);
  } else if constexpr (O == RedOp::Min) {
    gloo::min<T>(c, a, b, n);
  } else {
    gloo::sum<T>(c, a, b, n);
  }
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// The reduction function of dtype D for `op` (avg/mulsum: sum), for the new API's options.
template <DType D>
ReduceFn reduceFunction(RedOp op, bool glooHalf) {
  switch (baseOp(op)) {
    case RedOp::Prod:
      return glooHalf ? &reduceElements<D, RedOp::Prod, true> : &reduceElements<D, RedOp::Prod, false>;
    case RedOp::Max:
      return glooHalf ? &reduceElements<D, RedOp::Max, true> : &reduceElements<D, RedOp::Max, false>;
    case RedOp::Min:
      return glooHalf ? &reduceElements<D, RedOp::Min, true> : &reduceElements<D, RedOp::Min, false>;
    default:
      return glooHalf ? &reduceElements<D, RedOp::Sum, true> : &reduceElements<D, RedOp::Sum, false>;
  }
}

// Element loops on host memory (element_ops.h semantics), as the MPI backend's avg and mulsum.
// dst[i] = scaleBits(src[i], scalar); src may equal dst.
void glooScaleElements(DType t, const void* src, void* dst, uint64_t n, int scalar);
// p[i] = divideBits(p[i], divisor).
void glooDivideElements(DType t, void* p, uint64_t n, int divisor);

}  // namespace collbench
