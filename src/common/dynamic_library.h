// Libraries opened at run time (dlopen) rather than linked: vendor libraries that only the child
// process timing a baseline may map (cuBLASLt, cuDNN), libraries a machine may lack (NVML,
// libcuda, libcrypto), and the shared objects ptxbench builds (candidates, FlashInfer).
//
// A library, once opened, is never closed: CUDA libraries register kernels, threads and
// callbacks with the runtime, and unloading one while the process runs risks a crash that would
// be blamed on whatever ran next.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptxbench {

class DynamicLibrary {
 public:
  // dlopen(name, RTLD_NOW | RTLD_LOCAL): a name without '/' is searched for as the loader does.
  // nullopt when it fails, with the loader's reason in *why (it usually names the file).
  static std::optional<DynamicLibrary> Open(const std::string& name, std::string* why = nullptr);

  // The address of `symbol`, or nullptr when the library (and what it depends on) lacks it.
  void* Address(const char* symbol) const;
  // `symbol` as a pointer to Function, e.g. Find<int(const char*)>("f"); nullptr when absent.
  template <typename Function>
  Function* Find(const char* symbol) const {
    return reinterpret_cast<Function*>(Address(symbol));
  }

  // The name it was opened by.
  const std::string& name() const { return name_; }
  // Where the loader found it (a path), or the name when the loader does not say.
  std::string Path() const;

 private:
  DynamicLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

// Resolves a library's symbols into typed pointers, noting every one that is missing, so that a
// failure names them all at once.
class SymbolBinder {
 public:
  explicit SymbolBinder(const DynamicLibrary& library) : library_(library) {}

  // Sets `slot` (a function pointer, or void*) to `symbol`; a missing one is noted.
  template <typename Pointer>
  void Require(Pointer& slot, const char* symbol) {
    Bind(slot, symbol);
    if (!slot) NoteMissing(symbol);
  }
  // Sets `slot` to `symbol`, or nullptr: the caller copes without it.
  template <typename Pointer>
  void Optional(Pointer& slot, const char* symbol) {
    Bind(slot, symbol);
  }
  // The first of `symbols` the library has (a function renamed across releases); when it has
  // none the first name is noted as missing. Returns the name found, or nullptr.
  template <typename Pointer>
  const char* RequireFirstOf(Pointer& slot, std::initializer_list<const char*> symbols) {
    for (const char* symbol : symbols) {
      Bind(slot, symbol);
      if (slot) return symbol;
    }
    NoteMissing(*symbols.begin());
    return nullptr;
  }

  // The missing symbols, "a, b"; empty when every required one was found.
  const std::string& missing() const { return missing_; }

 private:
  template <typename Pointer>
  void Bind(Pointer& slot, const char* symbol) {
    slot = reinterpret_cast<Pointer>(library_.Address(symbol));
  }
  void NoteMissing(const char* symbol);

  const DynamicLibrary& library_;
  std::string missing_;
};

// The first of several candidate libraries that loads and has what the caller needs.
struct LibraryChoice {
  std::optional<DynamicLibrary> library;  // nullopt when no candidate fit
  // One line per candidate passed over, in order: "<name>: <the loader's reason>" or
  // "<name>: lacks <symbols>". With a library: the ones tried before it; without: all.
  std::vector<std::string> passed_over;
};

// Tries `candidates` in order. `bind` resolves what the caller needs from a library that
// loaded and returns the missing symbols ("" when none: that library is chosen). A library
// passed over stays loaded, like any other.
LibraryChoice OpenFirstOf(const std::vector<std::string>& candidates,
                          const std::function<std::string(const DynamicLibrary&)>& bind);

}  // namespace ptxbench
