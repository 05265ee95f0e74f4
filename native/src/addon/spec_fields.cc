// The field tables and their one reader (see spec_fields.h). A table row says a field's name, its kind (what
// JavaScript value it must be), whether it is required, and how its checked value is stored; readObject() refuses
// unknown, missing and mistyped fields before anything is stored.
#include "spec_fields.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "../core/backend_errors.h"
#include "addon_common.h"

namespace collbench::addon {
namespace {

enum class Kind { Int32, Uint64, Number, Bool, String, Uint64s, Numbers, Object, Objects };

const char* kindName(Kind k) {
  switch (k) {
    case Kind::Int32: return "int32";
    case Kind::Uint64: return "uint64";
    case Kind::Number: return "number";
    case Kind::Bool: return "boolean";
    case Kind::String: return "string";
    case Kind::Uint64s: return "uint64[]";
    case Kind::Numbers: return "number[]";
    case Kind::Object: return "object";
    case Kind::Objects: return "object[]";
  }
  return "?";
}

// What the reader knows while it reads one value: the call and the field's path ("fill[2].offset") for errors.
struct Where {
  const char* call;
  std::string path;
};

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

// A number that is an integer in [lo, hi] (hi at most 2^53: exact in a double).
double integer(const Napi::Value& v, const Where& w, double lo, double hi, const char* kind) {
  if (!v.IsNumber()) refuse(v, w, std::string("must be ") + kind + ", not " + shown(v));
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < lo || d > hi)
    refuse(v, w, std::string("must be ") + kind + ", not " + shown(v));
  return d;
}

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
Where item(const Where& w, uint32_t i) { return {w.call, w.path + "[" + std::to_string(i) + "]"}; }

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

// One field of a T: its name, kind and whether it must be given; `store` checks the value (as `kind`, and any rule of
// its own) and writes it into the T. An optional field that is absent (or undefined) leaves the T's member as the
// struct declares it: "none" (no peers, no graph replay, no arrivals), which the TypeScript type also means by absence.
template <class T>
struct Field {
  const char* name;
  Kind kind;
  bool required;
  void (*store)(const Napi::Value& v, const Where& w, T* out);
};

template <class T, size_t N>
const Field<T>* findField(const Field<T> (&table)[N], const std::string& name) {
  for (const Field<T>& f : table)
    if (name == f.name) return &f;
  return nullptr;
}

template <class T, size_t N>
T readObject(const Napi::Value& v, const Where& w, const Field<T> (&table)[N]) {
  if (!v.IsObject() || v.IsArray()) refuse(v, w, "must be an object, not " + shown(v));
  const Napi::Object o = v.As<Napi::Object>();
  const std::string prefix = w.path.empty() ? "" : w.path + ".";
  const Napi::Array keys = o.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    if (findField(table, key) == nullptr) refuse(v, {w.call, prefix + key}, "is not a field of this object");
  }
  T out{};
  for (const Field<T>& f : table) {
    const Napi::Value fv = o.Get(f.name);
    const Where fw{w.call, prefix + f.name};
    if (fv.IsUndefined()) {
      if (f.required) refuse(fv, fw, std::string("is missing (") + kindName(f.kind) + ")");
      continue;
    }
    f.store(fv, fw, &out);
  }
  return out;
}

// The enum-valued strings of a Segment.
BufId asBuf(const Napi::Value& v, const Where& w) {
  const std::string s = asString(v, w);
  if (s == "send") return BufId::Send;
  if (s == "recv") return BufId::Recv;
  refuse(v, w, "must be 'send' or 'recv', not " + shown(v));
}
SegKind asSegKind(const Napi::Value& v, const Where& w) {
  const std::string s = asString(v, w);
  std::string names;
  for (const EnumName& k : kSegKindNames) {
    if (s == k.name) return static_cast<SegKind>(k.value);
    names += std::string(names.empty() ? "" : ", ") + k.name;
  }
  refuse(v, w, "must be one of " + names + ", not " + shown(v));
}

// bench/core/types.ts Segment.
const Field<Segment> kSegmentFields[] = {
    {"buf", Kind::String, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->buf = asBuf(v, w); }},
    {"kind", Kind::String, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->kind = asSegKind(v, w); }},
    {"offset", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->offset = asUint64(v, w); }},
    {"count", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->count = asUint64(v, w); }},
    {"indexBase", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, Segment* s) { s->indexBase = asUint64(v, w); }},
    {"stream", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->stream = asUint64(v, w); }},
    {"rank", Kind::Int32, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->rank = asInt32(v, w); }},
};

// bench/core/types.ts PeerCounts.
const Field<PeerCounts> kPeerCountsFields[] = {
    {"sendCounts", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->sendCounts = asUint64s(v, w); }},
    {"sendDispls", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->sendDispls = asUint64s(v, w); }},
    {"recvCounts", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->recvCounts = asUint64s(v, w); }},
    {"recvDispls", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->recvDispls = asUint64s(v, w); }},
};

std::vector<Segment> asSegments(const Napi::Value& v, const Where& w) {
  Napi::Array a = asArray(v, w, "segments");
  std::vector<Segment> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(readObject(a.Get(i), item(w, i), kSegmentFields));
  return out;
}

// bench/core/types.ts HalfSpec (core/spec.h says what each field means).
using HS = HalfSpec;
const Field<HS> kHalfSpecFields[] = {
    {"coll", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->coll = static_cast<Coll>(asInt32(v, w)); }},
    {"dtype", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->dtype = static_cast<DType>(asInt32(v, w)); }},
    {"op", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->op = static_cast<RedOp>(asInt32(v, w)); }},
    {"root", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->root = asInt32(v, w); }},
    {"inPlace", Kind::Bool, true, [](const Napi::Value& v, const Where& w, HS* s) { s->inPlace = asBool(v, w); }},
    {"count", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->count = asUint64(v, w); }},
    {"sendOffset", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->sendOffset = asUint64(v, w); }},
    {"recvOffset", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->recvOffset = asUint64(v, w); }},
    {"rotateBytes", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->rotateBytes = asUint64(v, w); }},
    {"maxBytes", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->maxBytes = asUint64(v, w); }},
    {"peers", Kind::Object, false,
     [](const Napi::Value& v, const Where& w, HS* s) { s->peers = readObject(v, w, kPeerCountsFields); }},
    {"fill", Kind::Objects, true, [](const Napi::Value& v, const Where& w, HS* s) { s->fill = asSegments(v, w); }},
    {"expect", Kind::Objects, true, [](const Napi::Value& v, const Where& w, HS* s) { s->expect = asSegments(v, w); }},
    {"iters", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->iters = asInt32(v, w); }},
    {"aggIters", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->aggIters = asInt32(v, w); }},
    {"blocking", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->blocking = asInt32(v, w); }},
    {"perIter", Kind::Bool, true, [](const Napi::Value& v, const Where& w, HS* s) { s->perIter = asBool(v, w); }},
    {"checkRounds", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->checkRounds = asInt32(v, w); }},
    {"checkSeed", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->checkSeed = asUint64(v, w); }},
    {"average", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->average = static_cast<Combine>(asInt32(v, w)); }},
    {"unalignElems", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->unalignElems = asUint64(v, w); }},
    {"graphLaunches", Kind::Int32, false,
     [](const Napi::Value& v, const Where& w, HS* s) { s->graphLaunches = asInt32(v, w); }},
    {"arrivals", Kind::Bool, false, [](const Napi::Value& v, const Where& w, HS* s) { s->arrivals = asBool(v, w); }},
};

// bench/native/binding.ts SequenceOptions.
const Field<SequenceSpec> kSequenceFields[] = {
    {"iters", Kind::Int32, true, [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->iters = asInt32(v, w); }},
    {"warmupIters", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->warmupIters = asInt32(v, w); }},
    {"gapUs", Kind::Numbers, false,
     [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->gapUs = asNumbers(v, w); }},
    {"check", Kind::Bool, true, [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->check = asBool(v, w); }},
};

template <class T, size_t N>
Napi::Object tableObject(Napi::Env env, const Field<T> (&table)[N]) {
  Napi::Object o = Napi::Object::New(env);
  for (const Field<T>& f : table) {
    Napi::Object d = Napi::Object::New(env);
    d.Set("kind", kindName(f.kind));
    d.Set("required", f.required);
    o.Set(f.name, d);
  }
  return o;
}

}  // namespace

std::vector<HalfSpec> readSpecs(const Napi::Value& value, const char* call) {
  std::vector<HalfSpec> out;
  if (value.IsArray()) {
    Napi::Array a = value.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i)
      out.push_back(readObject(a.Get(i), {call, "[" + std::to_string(i) + "]"}, kHalfSpecFields));
  } else {
    out.push_back(readObject(value, {call, ""}, kHalfSpecFields));
  }
  return out;
}

SequenceSpec readSequenceOptions(const Napi::Value& value, const char* call) {
  return readObject(value, {call, ""}, kSequenceFields);
}

Napi::Object specFieldsObject(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("halfSpec", tableObject(env, kHalfSpecFields));
  o.Set("segment", tableObject(env, kSegmentFields));
  o.Set("peerCounts", tableObject(env, kPeerCountsFields));
  o.Set("sequenceOptions", tableObject(env, kSequenceFields));
  return o;
}

}  // namespace collbench::addon
