#include "task/flashinfer_set.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"
#include "record/vocabulary.h"
#include "task/family.h"

namespace ptxbench {

namespace fs = std::filesystem;
using nlohmann::json;
// Definitions keep their key order: the order of "inputs" and "outputs" is the order of the
// arguments of their destination-passing `run`, which our tvm-ffi call follows.
using ojson = nlohmann::ordered_json;

namespace {

// Every file under `dir` whose name ends with `ext`, sorted, so that loading is deterministic.
std::vector<fs::path> FilesUnder(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ext) files.push_back(it->path());
  if (ec) throw InputError(dir.string() + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

template <typename J>
J ParseJson(const std::string& text, const std::string& where) {
  try {
    return J::parse(text);
  } catch (const std::exception& e) {
    throw InputError(where + ": not valid JSON: " + e.what());
  }
}

// --- the definition's structure (malformed: InputError) ---

struct Axis {
  bool constant = false;
  int64_t value = 0;
};

struct Tensor {
  std::string name;
  bool scalar = false;             // shape null
  std::vector<std::string> shape;  // their axis names
  std::string dtype;
};

struct Parsed {
  std::string file, name, op_type, description;
  std::map<std::string, Axis> axes;
  std::vector<Tensor> inputs, outputs;  // in their order
  std::vector<std::string> tags;
};

std::string TypeName(const ojson& j) { return j.type_name(); }

const ojson& Field(const ojson& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw InputError(where + ": missing field \"" + key + "\"");
  return j.at(key);
}

std::string StringField(const ojson& j, const char* key, const std::string& where) {
  const ojson& v = Field(j, key, where);
  if (!v.is_string() || v.get<std::string>().empty())
    throw InputError(where + ": field \"" + key + "\" is " + TypeName(v) +
                     ", expected a non-empty string");
  return v.get<std::string>();
}

std::vector<Tensor> ParseTensors(const ojson& j, const char* key, const Parsed& p) {
  const ojson& v = Field(j, key, p.file);
  if (!v.is_object() || v.empty())
    throw InputError(p.file + ": \"" + key + "\" must be a non-empty object of tensors");
  std::vector<Tensor> out;
  for (const auto& [name, spec] : v.items()) {
    std::string where = p.file + ": " + key + "." + name;
    if (!spec.is_object()) throw InputError(where + ": expected {shape, dtype}");
    Tensor t;
    t.name = name;
    t.dtype = StringField(spec, "dtype", where);
    const ojson& shape = Field(spec, "shape", where);
    if (shape.is_null()) {
      t.scalar = true;
    } else if (shape.is_array()) {
      for (const ojson& a : shape) {
        if (!a.is_string()) throw InputError(where + ": shape entries are axis names");
        if (!p.axes.count(a.get<std::string>()))
          throw InputError(where + ": shape names axis \"" + a.get<std::string>() +
                           "\", which \"axes\" does not define");
        t.shape.push_back(a.get<std::string>());
      }
    } else {
      throw InputError(where + ": shape is " + TypeName(shape) + ", expected a list or null");
    }
    out.push_back(t);
  }
  return out;
}

Parsed ParseDefinition(const ojson& j, const std::string& file) {
  Parsed p;
  p.file = file;
  if (!j.is_object()) throw InputError(file + ": a definition is a JSON object");
  p.name = StringField(j, "name", file);
  p.op_type = StringField(j, "op_type", file);
  if (j.contains("description") && j["description"].is_string())
    p.description = j["description"].get<std::string>();
  const ojson& axes = Field(j, "axes", file);
  if (!axes.is_object() || axes.empty())
    throw InputError(file + ": \"axes\" must be a non-empty object");
  for (const auto& [name, a] : axes.items()) {
    std::string where = file + ": axes." + name;
    std::string type = a.is_object() ? a.value("type", std::string()) : "";
    Axis axis;
    if (type == "const") {
      if (!a.contains("value") || !a["value"].is_number_integer() || a["value"].get<int64_t>() <= 0)
        throw InputError(where + ": a const axis needs a positive integer \"value\"");
      axis.constant = true;
      axis.value = a["value"].get<int64_t>();
    } else if (type != "var") {
      throw InputError(where +
                       ": expected {\"type\": \"const\", \"value\": N} or "
                       "{\"type\": \"var\"}");
    }
    p.axes[name] = axis;
  }
  p.inputs = ParseTensors(j, "inputs", p);
  p.outputs = ParseTensors(j, "outputs", p);
  if (j.contains("tags") && !j["tags"].is_null()) {
    if (!j["tags"].is_array()) throw InputError(file + ": \"tags\" must be a list of strings");
    for (const ojson& t : j["tags"]) {
      if (!t.is_string()) throw InputError(file + ": \"tags\" must be a list of strings");
      p.tags.push_back(t.get<std::string>());
    }
  }
  return p;
}

// --- mapping onto a family (no family: a reason) ---

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ShapeText(const Tensor& t) { return t.name + "[" + Join(t.shape, ",") + "]"; }

std::string NamesText(const std::vector<Tensor>& ts) {
  std::vector<std::string> names;
  for (const auto& t : ts) names.push_back(t.name);
  return "(" + Join(names, ", ") + ")";
}

// Our family axis -> their axis; a reason when one of ours would take two of theirs or two of
// ours one of theirs (the families need independent axes).
class AxisBinding {
 public:
  bool Bind(const std::string& ours, const std::string& theirs, std::string* why) {
    auto it = map_.find(ours);
    if (it != map_.end() && it->second != theirs) {
      *why = "axis " + ours + " would be both " + it->second + " and " + theirs;
      return false;
    }
    for (const auto& [o, t] : map_)
      if (t == theirs && o != ours) {
        *why = "axis " + theirs + " would be both " + o + " and " + ours +
               ", which the family keeps independent";
        return false;
      }
    map_[ours] = theirs;
    return true;
  }
  const std::map<std::string, std::string>& map() const { return map_; }

 private:
  std::map<std::string, std::string> map_;
};

struct Mapping {
  std::string family;
  bool causal = false;
  std::map<std::string, std::string> axis_names;  // ours -> theirs
  std::vector<std::string> tensor_names;          // theirs, in the family's order
  std::vector<std::string> scalar_inputs;
};

bool MapGemm(const Parsed& p, const std::vector<Tensor>& in, Mapping* m, std::string* why) {
  const Tensor& A = in[0];
  const Tensor& B = in[1];
  const Tensor& C = p.outputs[0];
  for (const Tensor* t : {&A, &B, &C}) {
    if (t->shape.size() != 2) {
      *why = "the gemm family takes 2-D tensors (A[M,K], B[N,K] -> C[M,N]); " + ShapeText(*t) +
             " is not";
      return false;
    }
    // bfloat16 (the paper's gemm) or float16 (gemm_f16, their GEMM definitions), one type
    // for all three tensors.
    if ((t->dtype != "bfloat16" && t->dtype != "float16") || t->dtype != A.dtype) {
      *why = t->name + " is " + t->dtype + " and A is " + A.dtype +
             "; a gemm is bfloat16 or float16 throughout";
      return false;
    }
  }
  if (A.shape[1] != B.shape[1]) {
    *why = A.shape[1] == B.shape[0]
               ? "B is [K,N] (" + ShapeText(B) +
                     "); the gemm family takes B as [N,K] and computes A·Bᵀ"
               : ShapeText(A) + " and " + ShapeText(B) +
                     " share no last axis; the gemm family takes A[M,K], B[N,K]";
    return false;
  }
  if (C.shape[0] != A.shape[0] || C.shape[1] != B.shape[0]) {
    *why = "the output is " + ShapeText(C) + "; A·Bᵀ of the inputs " + ShapeText(A) + " and " +
           ShapeText(B) + " is [" + A.shape[0] + "," + B.shape[0] +
           "] (the gemm family takes A[M,K] first, then B[N,K])";
    return false;
  }
  AxisBinding bind;
  if (!bind.Bind("M", A.shape[0], why) || !bind.Bind("K", A.shape[1], why) ||
      !bind.Bind("N", B.shape[0], why))
    return false;
  m->family = A.dtype == "float16" ? "gemm_f16" : "gemm";
  m->axis_names = bind.map();
  m->tensor_names = {A.name, B.name, C.name};
  return true;
}

// Attention: Q, K and V have the same shape, so their names say which is which.
bool NameIs(const std::string& name, const std::vector<std::string>& accepted) {
  for (const std::string& a : accepted)
    if (Lower(name) == a) return true;
  return false;
}

bool MapAttention(const Parsed& p, const std::vector<Tensor>& in,
                  const std::vector<Tensor>& scalars, bool backward, Mapping* m, std::string* why) {
  const std::string family = backward ? "mha_bwd" : "mha_fwd";
  using Names = std::vector<std::string>;
  const std::vector<std::pair<std::string, Names>> want_in =
      backward
          ? std::vector<std::pair<std::string, Names>>{{"Q", {"q"}},
                                                       {"K", {"k"}},
                                                       {"V", {"v"}},
                                                       {"O", {"o", "out", "output"}},
                                                       {"dO", {"do", "d_o", "grad_o"}},
                                                       {"LSE", {"lse", "l", "logsumexp"}}}
          : std::vector<std::pair<std::string, Names>>{{"Q", {"q"}}, {"K", {"k"}}, {"V", {"v"}}};
  const std::vector<std::pair<std::string, Names>> want_out =
      backward ? std::vector<std::pair<std::string, Names>>{{"dQ", {"dq", "grad_q"}},
                                                            {"dK", {"dk", "grad_k"}},
                                                            {"dV", {"dv", "grad_v"}}}
               : std::vector<std::pair<std::string, Names>>{{"O", {"o", "out", "output"}},
                                                            {"LSE", {"lse", "l", "logsumexp"}}};
  auto expected = [&]() {
    std::vector<std::string> a, b;
    for (const auto& w : want_in) a.push_back(w.first);
    for (const auto& w : want_out) b.push_back(w.first);
    return "the " + family + " family takes (" + Join(a, ", ") + ") -> (" + Join(b, ", ") + ")";
  };
  std::vector<const Tensor*> tensors;
  std::vector<std::string> ours;
  for (size_t i = 0; i < want_in.size(); ++i) {
    if (!NameIs(in[i].name, want_in[i].second)) {
      *why = "the tensor inputs are " + NamesText(in) + "; " + expected() +
             " in that order (Q, K and V share a shape, so their names tell them apart)";
      return false;
    }
    tensors.push_back(&in[i]);
    ours.push_back(want_in[i].first);
  }
  for (size_t i = 0; i < want_out.size(); ++i) {
    if (!NameIs(p.outputs[i].name, want_out[i].second)) {
      *why = "the outputs are " + NamesText(p.outputs) + "; " + expected();
      return false;
    }
    tensors.push_back(&p.outputs[i]);
    ours.push_back(want_out[i].first);
  }
  AxisBinding bind;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = *tensors[i];
    const bool lse = ours[i] == "LSE";
    const std::string dtype = lse ? "float32" : "bfloat16";
    if (t.dtype != dtype) {
      *why =
          t.name + " is " + t.dtype + "; the " + family + " family has " + ours[i] + " in " + dtype;
      return false;
    }
    const std::vector<std::string> axes = lse ? std::vector<std::string>{"B", "H", "S"}
                                              : std::vector<std::string>{"B", "H", "S", "D"};
    if (t.shape.size() != axes.size()) {
      *why = "the " + family + " family has " + ours[i] + "[" + Join(axes, ",") +
             "] (contiguous, heads before the sequence); " + ShapeText(t) + " is not";
      return false;
    }
    for (size_t d = 0; d < axes.size(); ++d)
      if (!bind.Bind(axes[d], t.shape[d], why)) {
        *why = ShapeText(t) + ": " + *why + " (one B, H, S, D for every tensor)";
        return false;
      }
  }
  if (scalars.size() > 1) {
    *why = "scalar inputs " + NamesText(scalars) + ": the " + family +
           " family implies one (the scale 1/sqrt(D))";
    return false;
  }
  for (const Tensor& s : scalars)
    if (s.dtype != "float32" && s.dtype != "float16" && s.dtype != "bfloat16") {
      *why = "scalar input " + s.name + " is " + s.dtype + "; the only scalar the " + family +
             " family implies is the softmax scale (a float)";
      return false;
    }
  const bool says_causal = std::count(p.tags.begin(), p.tags.end(), "causal:true") > 0;
  const bool says_full = std::count(p.tags.begin(), p.tags.end(), "causal:false") > 0;
  if (says_causal == says_full) {
    *why = says_causal ? "tagged both causal:true and causal:false"
                       : "the mask is not stated: attention needs the tag causal:true or "
                         "causal:false (the reference is Python we do not run)";
    return false;
  }
  m->family = family;
  m->causal = says_causal;
  m->axis_names = bind.map();
  for (const Tensor* t : tensors) m->tensor_names.push_back(t->name);
  for (const Tensor& s : scalars) m->scalar_inputs.push_back(s.name);
  return true;
}

// The family the tensor counts point to, named in the reason when the rest does not fit.
bool Tried(const std::string& family, bool mapped, std::string* why) {
  if (!mapped) *why = "not " + family + " (whose tensor counts it has): " + *why;
  return mapped;
}

bool MapDefinition(const Parsed& p, Mapping* m, std::string* why) {
  std::vector<Tensor> in, scalars;
  for (const Tensor& t : p.inputs) (t.scalar ? scalars : in).push_back(t);
  for (const Tensor& t : p.outputs)
    if (t.scalar) {
      *why = "output " + t.name + " is a scalar; every family here writes tensors";
      return false;
    }
  const size_t n_in = in.size(), n_out = p.outputs.size();
  if (n_in == 2 && n_out == 1) {
    if (!scalars.empty()) {
      *why = "not gemm (whose tensor counts it has): scalar inputs " + NamesText(scalars) +
             ": the gemm family takes none";
      return false;
    }
    return Tried("gemm", MapGemm(p, in, m, why), why);
  }
  if (n_in == 3 && n_out == 2)
    return Tried("mha_fwd", MapAttention(p, in, scalars, false, m, why), why);
  if (n_in == 6 && n_out == 3)
    return Tried("mha_bwd", MapAttention(p, in, scalars, true, m, why), why);
  *why = std::to_string(n_in) + " tensor inputs and " + std::to_string(n_out) +
         " outputs: no family judged here has that shape (gemm 2 -> 1, mha_fwd 3 -> 2, "
         "mha_bwd 6 -> 3)";
  return false;
}

// Task names become parts of file names (run folders, caches).
bool PlainName(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.size() > 200) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// --- workloads ---

struct Loaded {
  Parsed parsed;
  Mapping mapping;
  Definition def;
  std::set<std::string> uuids;
};

// The workload as one of ours, or a reason it is not judged here.
bool CheckWorkload(const Loaded& l, const json& w, Workload* out, std::string* why) {
  const Parsed& p = l.parsed;
  const Mapping& m = l.mapping;
  Axes values;  // theirs
  for (const auto& [name, v] : w["axes"].items()) {
    auto it = p.axes.find(name);
    if (it == p.axes.end()) {
      *why = "axis " + name + " is not an axis of the definition";
      return false;
    }
    const int64_t value = v.get<int64_t>();
    if (value <= 0) {
      *why = "axis " + name + " = " + std::to_string(value) + ": empty tensors are not judged here";
      return false;
    }
    if (it->second.constant && value != it->second.value) {
      *why = "axis " + name + " = " + std::to_string(value) + ", but the definition fixes it at " +
             std::to_string(it->second.value);
      return false;
    }
    values[name] = value;
  }
  Workload wl;
  wl.id = w["uuid"].get<std::string>();
  for (const auto& [ours, theirs] : m.axis_names) {
    const Axis& a = p.axes.at(theirs);
    if (a.constant) {
      values[theirs] = a.value;
      continue;
    }
    if (!values.count(theirs)) {
      *why = "no value for the variable axis " + theirs;
      return false;
    }
    wl.axes[ours] = values.at(theirs);
  }
  const json& inputs = w["inputs"];
  std::set<std::string> known;
  for (const Tensor& t : p.inputs) {
    known.insert(t.name);
    if (!inputs.contains(t.name)) {
      *why = "input " + t.name + " has no entry in \"inputs\"";
      return false;
    }
    const json& spec = inputs[t.name];
    const std::string type = spec.is_object() ? spec.value("type", std::string()) : "";
    if (type == "safetensors") {
      *why = "input " + t.name + " is read from a safetensors file (" +
             spec.value("path", std::string("?")) +
             "); ptxbench draws every input itself, seeded (standard normal; mha_bwd's O and "
             "LSE from its reference forward), and reads no tensors from files";
      return false;
    }
    if (!t.scalar) {
      if (type != "random") {
        *why = "input " + t.name + " is a tensor given as \"" + type +
               "\"; only \"random\" tensors are judged here";
        return false;
      }
      continue;
    }
    if (type != "scalar" || !spec.contains("value") || !spec["value"].is_number()) {
      *why = "scalar input " + t.name + " needs {\"type\": \"scalar\", \"value\": number}";
      return false;
    }
    // The only scalar a family implies: the attention scale.
    const int64_t D = values.at(m.axis_names.at("D"));
    const double implied = 1.0 / std::sqrt(static_cast<double>(D));
    const double given = spec["value"].get<double>();
    if (!(std::fabs(given - implied) <= 1e-6 * implied)) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "scalar input %s = %.9g; the %s family computes with the scale 1/sqrt(D) = "
                    "%.9g (D=%lld)",
                    t.name.c_str(), given, m.family.c_str(), implied, static_cast<long long>(D));
      *why = buf;
      return false;
    }
  }
  for (const auto& [name, spec] : inputs.items())
    if (!known.count(name)) {
      *why = "input " + name + " is not an input of the definition";
      return false;
    }
  *out = wl;
  return true;
}

// Structure of one workload line; a malformed line is an InputError.
void CheckWorkloadLine(const json& line, const std::string& where) {
  if (!line.is_object()) throw InputError(where + ": a workload line is a JSON object");
  for (const char* k : {"solution", "evaluation"})
    if (line.contains(k) && !line[k].is_null())
      throw InputError(where + ": \"" + k +
                       "\" is set: this line is a trace, not a workload (traces belong in "
                       "traces/)");
  if (!line.contains("definition") || !line["definition"].is_string())
    throw InputError(where + ": missing field \"definition\" (a string)");
  if (!line.contains("workload") || !line["workload"].is_object())
    throw InputError(where + ": missing field \"workload\" (an object)");
  const json& w = line["workload"];
  if (!w.contains("uuid") || !w["uuid"].is_string() || w["uuid"].get<std::string>().empty())
    throw InputError(where + ": the workload has no \"uuid\" (a non-empty string)");
  if (!w.contains("axes") || !w["axes"].is_object())
    throw InputError(where + ": the workload has no \"axes\" object");
  for (const auto& [name, v] : w["axes"].items())
    if (!v.is_number_integer())
      throw InputError(where + ": axis " + name + " is " + v.type_name() + ", expected an integer");
  if (!w.contains("inputs") || !w["inputs"].is_object())
    throw InputError(where + ": the workload has no \"inputs\" object");
}

}  // namespace

FamilyTaskDefaults DefaultsForFamily(const std::string& family, bool causal) {
  std::map<std::string, std::vector<std::string>> tensor_cores;
  for (const ArchInfo& a : Architectures())
    tensor_cores[std::string(a.name)] = {std::string(a.tensor_family)};
  // FLOPs as our definitions count them: a causal mask halves the score work.
  if (family == "gemm") return {"2*M*N*K", tensor_cores, "cublaslt_bf16_fp32acc"};
  if (family == "gemm_f16") return {"2*M*N*K", tensor_cores, "cublaslt_f16_fp32acc"};
  if (family == "mha_fwd")
    return {causal ? "2*B*H*S*S*D" : "4*B*H*S*S*D", tensor_cores, "cudnn_sdpa_fwd"};
  if (family == "mha_bwd")
    return {causal ? "5*B*H*S*S*D" : "10*B*H*S*S*D", tensor_cores, "cudnn_sdpa_bwd"};
  throw InternalError("no task defaults for family " + family);
}

bool IsFlashInferTraceSet(const std::string& tasks_dir) {
  std::string ours, theirs;
  for (const fs::path& f : FilesUnder(fs::path(tasks_dir) / "definitions", ".json")) {
    const json j = ParseJson<json>(ReadFile(f.string()), f.string());
    const bool family = j.is_object() && j.contains("family");
    const bool op_type = j.is_object() && j.contains("op_type");
    if (family == op_type)
      throw InputError(f.string() +
                       ": neither a ptxbench definition (\"family\") nor a FlashInfer-Bench "
                       "one (\"op_type\")");
    (family ? ours : theirs) = f.string();
  }
  if (!ours.empty() && !theirs.empty())
    throw InputError(tasks_dir + ": mixes ptxbench definitions (" + ours +
                     ") and FlashInfer-Bench definitions (" + theirs + ")");
  return !theirs.empty();
}

FlashInferTaskSet LoadFlashInferTaskSet(const std::string& trace_set) {
  FlashInferTaskSet set;
  std::map<std::string, Loaded> loaded;             // taken so far, by name
  std::map<std::string, std::string> left_by_name;  // name -> file
  std::map<std::string, std::string> file_of;       // every definition's name -> file
  for (const fs::path& f : FilesUnder(fs::path(trace_set) / "definitions", ".json")) {
    const std::string file = f.string();
    Parsed p = ParseDefinition(ParseJson<ojson>(ReadFile(file), file), file);
    if (file_of.count(p.name))
      throw InputError(file + ": definition " + p.name + " is also in " + file_of[p.name]);
    file_of[p.name] = file;
    Mapping m;
    std::string why;
    if (!PlainName(p.name)) {
      set.left_out.push_back({f.stem().string(), file, p.op_type,
                              "its name \"" + p.name +
                                  "\" is not a plain file name (letters, digits, _ - .), "
                                  "which ptxbench needs for run folders and caches"});
      left_by_name[p.name] = file;
      continue;
    }
    if (!MapDefinition(p, &m, &why)) {
      set.left_out.push_back({p.name, file, p.op_type, why});
      left_by_name[p.name] = file;
      continue;
    }
    Definition d;
    d.name = p.name;
    d.family = m.family;
    d.description = p.description.empty() ? FindFamily(m.family)->Semantics() : p.description;
    for (const auto& [ours, theirs] : m.axis_names) {
      const Axis& a = p.axes.at(theirs);
      if (a.constant)
        d.constant_axes[ours] = a.value;
      else
        d.variable_axes.push_back(ours);
    }
    if (m.family == "mha_fwd" || m.family == "mha_bwd")
      d.constant_axes["causal"] = m.causal ? 1 : 0;
    FamilyTaskDefaults defaults = DefaultsForFamily(m.family, m.causal);
    d.flops_formula = defaults.flops_formula;
    d.required_families = defaults.required_families;
    d.baseline = defaults.baseline;  // tolerance: ours (their definitions carry none)
    d.flashinfer = FlashInferLink{trace_set,       file, p.op_type, m.axis_names, m.tensor_names,
                                  m.scalar_inputs, {}};
    const std::string name = p.name;  // before p is moved into the entry
    loaded.emplace(name, Loaded{std::move(p), m, std::move(d), {}});
  }

  const fs::path workloads = fs::path(trace_set) / "workloads";
  std::error_code ec;
  if (!fs::is_directory(workloads, ec))
    throw InputError(trace_set + ": a FlashInfer-Bench trace set needs a workloads/ folder");
  for (const fs::path& f : FilesUnder(workloads, ".jsonl")) {
    int line_no = 0;
    for (const std::string& text : SplitLines(ReadFile(f.string()))) {
      ++line_no;
      if (Trim(text).empty()) continue;
      const std::string where = f.string() + ":" + std::to_string(line_no);
      const json line = ParseJson<json>(text, where);
      CheckWorkloadLine(line, where);
      const std::string name = line["definition"].get<std::string>();
      if (left_by_name.count(name)) continue;  // not judged: nothing to take from its workloads
      auto it = loaded.find(name);
      if (it == loaded.end())
        throw InputError(where + ": a workload of definition " + name +
                         ", which definitions/ does not hold");
      Loaded& l = it->second;
      const json& w = line["workload"];
      const std::string uuid = w["uuid"].get<std::string>();
      if (!l.uuids.insert(uuid).second)
        throw InputError(where + ": workload " + uuid + " of " + name + " appears twice");
      Workload wl;
      std::string why;
      if (CheckWorkload(l, w, &wl, &why)) {
        l.def.workloads.push_back(wl);
        l.def.flashinfer->workloads[uuid] = w;
      } else {
        l.def.refused_workloads.push_back({uuid, why});
      }
    }
  }

  for (auto& [name, l] : loaded) {
    Definition& d = l.def;
    if (d.workloads.empty()) {
      std::string why = d.refused_workloads.empty()
                            ? "no workload of it in workloads/"
                            : "none of its " + std::to_string(d.refused_workloads.size()) +
                                  " workloads can be judged here (" +
                                  d.refused_workloads.front().id + ": " +
                                  d.refused_workloads.front().reason + ")";
      set.left_out.push_back({d.name, l.parsed.file, l.parsed.op_type, why});
      continue;
    }
    d.Flops(d.workloads.front());  // the formula and the axes agree
    set.definitions.push_back(std::move(d));
  }
  std::sort(set.definitions.begin(), set.definitions.end(),
            [](const Definition& a, const Definition& b) { return a.name < b.name; });
  std::sort(set.left_out.begin(), set.left_out.end(),
            [](const LeftOutDefinition& a, const LeftOutDefinition& b) { return a.name < b.name; });
  return set;
}

}  // namespace ptxbench
