// The kind checks of the field reader (see field_reader.h).
#include "field_reader.h"

#include <cmath>

#include "../core/backend_errors.h"
#include "addon_common.h"

namespace collbench::addon {

const char* kindName(Kind k) {
  switch (k) {
    case Kind::Int32:
      return "int32";
    case Kind::Uint64:
      return "uint64";
    case Kind::Number:
      return "number";
    case Kind::Bool:
      return "boolean";
    case Kind::String:
      return "string";
    case Kind::Uint64s:
      return "uint64[]";
    case Kind::Numbers:
      return "number[]";
    case Kind::Object:
      return "object";
    case Kind::Objects:
      return "object[]";
    case Kind::External:
      return "external";
  }
  return "?";
}

[[noreturn]] void refuse(const Napi::Value& v, const Where& w, const std::string& what) {
  const std::string subject = w.path.empty() ? "the argument " : "field '" + w.path + "' ";
  throw toJsError(v.Env(), badSpec(std::string(w.call) + ": " + subject + what, w.call));
}

std::string shown(const Napi::Value& v) {
  if (v.IsUndefined()) return "undefined";
  if (v.IsNull()) return "null";
  if (v.IsArray()) return "an array";
  if (v.IsObject()) return "an object";
  if (v.IsString()) return "'" + v.As<Napi::String>().Utf8Value() + "'";
  return v.ToString().Utf8Value();
}

namespace {

// A number that is an integer in [lo, hi] (hi at most 2^53: exact in a double).
double integer(const Napi::Value& v, const Where& w, double lo, double hi, const char* kind) {
  if (!v.IsNumber()) refuse(v, w, std::string("must be ") + kind + ", not " + shown(v));
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < lo || d > hi)
    refuse(v, w, std::string("must be ") + kind + ", not " + shown(v));
  return d;
}

}  // namespace

int32_t asInt32(const Napi::Value& v, const Where& w) {
  return static_cast<int32_t>(integer(v, w, INT32_MIN, INT32_MAX, "an int32"));
}
uint64_t asUint64(const Napi::Value& v, const Where& w) {
  return static_cast<uint64_t>(integer(v, w, 0, 9007199254740992.0, "an integer from 0 to 2^53"));
}
double asNumber(const Napi::Value& v, const Where& w) {
  if (!v.IsNumber() || !std::isfinite(v.As<Napi::Number>().DoubleValue()))
    refuse(v, w, "must be a finite number, not " + shown(v));
  return v.As<Napi::Number>().DoubleValue();
}
bool asBool(const Napi::Value& v, const Where& w) {
  if (!v.IsBoolean()) refuse(v, w, "must be a boolean, not " + shown(v));
  return v.As<Napi::Boolean>().Value();
}
std::string asString(const Napi::Value& v, const Where& w) {
  if (!v.IsString()) refuse(v, w, "must be a string, not " + shown(v));
  return v.As<Napi::String>().Utf8Value();
}
Napi::Array asArray(const Napi::Value& v, const Where& w, const char* of) {
  if (!v.IsArray()) refuse(v, w, std::string("must be an array of ") + of + ", not " + shown(v));
  return v.As<Napi::Array>();
}
Where item(const Where& w, uint32_t i) {
  return {w.call, w.path + "[" + std::to_string(i) + "]"};
}

std::vector<uint64_t> asUint64s(const Napi::Value& v, const Where& w) {
  Napi::Array a = asArray(v, w, "integers");
  std::vector<uint64_t> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(asUint64(a.Get(i), item(w, i)));
  return out;
}
std::vector<double> asNumbers(const Napi::Value& v, const Where& w) {
  Napi::Array a = asArray(v, w, "numbers");
  std::vector<double> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(asNumber(a.Get(i), item(w, i)));
  return out;
}

}  // namespace collbench::addon
