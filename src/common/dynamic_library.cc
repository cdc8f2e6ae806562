#include "common/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

namespace ptxbench {

std::optional<DynamicLibrary> DynamicLibrary::Open(const std::string& name, std::string* why) {
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    if (why) *why = error ? error : "dlopen failed";
    return std::nullopt;
  }
  return DynamicLibrary(handle, name);
}

void* DynamicLibrary::Address(const char* symbol) const { return ::dlsym(handle_, symbol); }

std::string DynamicLibrary::Path() const {
  link_map* map = nullptr;
  if (::dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return name_;
}

void SymbolBinder::NoteMissing(const char* symbol) {
  if (!missing_.empty()) missing_ += ", ";
  missing_ += symbol;
}

LibraryChoice OpenFirstOf(const std::vector<std::string>& candidates,
                          const std::function<std::string(const DynamicLibrary&)>& bind) {
  LibraryChoice choice;
  for (const std::string& name : candidates) {
    std::string why;
    std::optional<DynamicLibrary> library = DynamicLibrary::Open(name, &why);
    if (!library) {
      // The loader's reason usually starts with the name; say it once.
      choice.passed_over.push_back(why.find(name) == std::string::npos ? name + ": " + why : why);
      continue;
    }
    if (std::string missing = bind(*library); !missing.empty()) {
      // Some other library by that name.
      choice.passed_over.push_back(name + ": lacks " + missing);
      continue;
    }
    choice.library = std::move(library);
    return choice;
  }
  return choice;
}

}  // namespace ptxbench
