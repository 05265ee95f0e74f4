// Reads a JavaScript object through a table of its fields (name, kind, required, destination): an unknown field, a
// missing required one or a value of the wrong kind is refused with CORE_BAD_SPEC naming the field, never defaulted.
// Used by spec_fields.cc and the NCCL module's init config; tableObject() hands a table to the tests.
#pragma once
#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collbench::addon {

enum class Kind { Int32, Uint64, Number, Bool, String, Uint64s, Numbers, Object, Objects, External };

const char* kindName(Kind k);

// What the reader knows while it reads one value: the call and the field's path ("fill[2].offset") for errors.
struct Where {
  const char* call;
  std::string path;
};

// Throws the CORE_BAD_SPEC error "<call>: field '<path>' <what>".
[[noreturn]] void refuse(const Napi::Value& v, const Where& w, const std::string& what);
// A value as an error message shows it ('text', 12, an object, undefined).
std::string shown(const Napi::Value& v);
Where item(const Where& w, uint32_t i);

// Each checks the value's kind (and range) and returns it, or refuses it naming w.path.
int32_t asInt32(const Napi::Value& v, const Where& w);
uint64_t asUint64(const Napi::Value& v, const Where& w);
double asNumber(const Napi::Value& v, const Where& w);
bool asBool(const Napi::Value& v, const Where& w);
std::string asString(const Napi::Value& v, const Where& w);
Napi::Array asArray(const Napi::Value& v, const Where& w, const char* of);
std::vector<uint64_t> asUint64s(const Napi::Value& v, const Where& w);
std::vector<double> asNumbers(const Napi::Value& v, const Where& w);

// One field of a T: its name, kind and whether it must be given; `store` checks the value (as `kind`, and any rule of
// its own) and writes it into the T. An optional field that is absent (or undefined) leaves the T's member as the
// struct declares it, which must mean what the TypeScript type means by its absence (e.g. HalfSpec: no peers).
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

}  // namespace collbench::addon
