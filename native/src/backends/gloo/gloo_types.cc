// Gloo exception mapping and element loops of the gloo backend (see gloo_types.h).
#include "backends/gloo/gloo_types.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <new>

namespace collbench {
namespace {

bool mentionsTimeout(const std::string& text) {
  return text.find("Timed out") != std::string::npos || text.find("timeout") != std::string::npos ||
         text.find("Timeout") != std::string::npos;
}

// Gloo messages start with "[/path/to/file.cc:123] "; keep that (it is the library's own site) but
// flatten newlines so the message stays one line on the terminal.
std::string oneLine(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

Status glooExceptionStatus(std::exception_ptr e, const std::string& site) {
  try {
    std::rethrow_exception(e);
  } catch (const gloo::IoException& x) {
    const std::string m = oneLine(x.what());
    return Status::Error("gloo", mentionsTimeout(m) ? "GLOO_TIMEOUT" : "GLOO_IO", m, site);
  } catch (const gloo::InvalidOperationException& x) {
    return Status::Error("gloo", "GLOO_INVALID_OPERATION", oneLine(x.what()), site);
  } catch (const gloo::EnforceNotMet& x) {
    return Status::Error("gloo", "GLOO_ENFORCE", oneLine(x.what()), site);
  } catch (const gloo::Exception& x) {
    return Status::Error("gloo", "GLOO_EXCEPTION", oneLine(x.what()), site);
  } catch (const std::bad_alloc&) {
    return Status::Error("gloo", "GLOO_OUT_OF_MEMORY", "out of memory inside Gloo", site);
  } catch (const std::exception& x) {
    return Status::Error("gloo", "GLOO_EXCEPTION", oneLine(x.what()), site);
  } catch (...) {
    return Status::Error("gloo", "GLOO_UNKNOWN", "unknown exception thrown by Gloo", site);
  }
}

namespace {

template <DType D>
void scaleLoop(const void* src, void* dst, uint64_t n, int scalar) {
  for (uint64_t i = 0; i < n; ++i) storeBits(dst, D, i, scaleBits(D, loadBits(src, D, i), scalar));
}

template <DType D>
void divideLoop(void* p, uint64_t n, int divisor) {
  for (uint64_t i = 0; i < n; ++i) storeBits(p, D, i, divideBits(D, loadBits(p, D, i), divisor));
}

}  // namespace

void glooScaleElements(DType t, const void* src, void* dst, uint64_t n, int scalar) {
  (void)dispatchDType(t, [&](auto tag) {
    scaleLoop<decltype(tag)::value>(src, dst, n, scalar);
    return Status::Ok();
  });
}

void glooDivideElements(DType t, void* p, uint64_t n, int divisor) {
  (void)dispatchDType(t, [&](auto tag) {
    divideLoop<decltype(tag)::value>(p, n, divisor);
    return Status::Ok();
  });
}

}  // namespace collbench
