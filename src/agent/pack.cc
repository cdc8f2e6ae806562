#include "agent/pack.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/files.h"
#include "common/strings.h"

namespace ptxbench {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> Pack::VariantNames() const {
  std::vector<std::string> names = {"none"};
  for (const auto& [name, parts] : variants) names.push_back(name);
  return names;
}

std::string Pack::Render(const std::string& variant) const {
  if (variant == "none") return "";
  auto it = variants.find(variant);
  if (it == variants.end())
    throw UsageError("no pack variant '" + variant + "' for " + arch +
                     " (known: " + Join(VariantNames(), ", ") + ")");
  std::string text = "\n# Knowledge pack: " + title + " (variant " + variant + ")\n";
  if (!note.empty()) text += "\n" + note + "\n";
  for (const std::string& name : it->second) {
    const PackPart& part = *std::find_if(parts.begin(), parts.end(),
                                         [&](const PackPart& p) { return p.name == name; });
    std::string body = ReadFile(dir + "/" + part.file);
    if (part.header) {
      text += "\n## Helper header `" + fs::path(part.file).filename().string() + "`\n\n";
      if (!part.intro.empty()) text += part.intro + "\n\n";
      text += "```cuda\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n") + "```\n";
    } else {
      text += "\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n");
    }
  }
  return text;
}

std::map<std::string, std::string> Pack::Headers() const {
  std::map<std::string, std::string> out;
  for (const auto& p : parts)
    if (p.header) out[fs::path(p.file).filename().string()] = dir + "/" + p.file;
  return out;
}

std::vector<std::string> PackArchs(const std::string& packs_dir) {
  std::vector<std::string> archs;
  std::error_code ec;
  if (!fs::is_directory(packs_dir, ec)) return archs;
  for (const auto& e : fs::directory_iterator(packs_dir))
    if (fs::exists(e.path() / "manifest.json")) archs.push_back(e.path().filename().string());
  std::sort(archs.begin(), archs.end());
  return archs;
}

Pack LoadPackManifest(const std::string& packs_dir, const std::string& arch) {
  Pack pack;
  pack.dir = packs_dir + "/" + arch;
  std::string path = pack.dir + "/manifest.json";
  if (!FileExists(path))
    throw UsageError("no knowledge pack for " + arch + " (no " + path +
                     "); use --pack none for a run without one");
  auto fail = [&](const std::string& why) -> void { throw InputError(path + ": " + why); };
  json j;
  try {
    j = json::parse(ReadFile(path));
  } catch (const json::exception& e) {
    fail(std::string("not JSON: ") + e.what());
  }
  try {
    pack.arch = j.at("arch");
    if (pack.arch != arch) fail("arch is '" + pack.arch + "', the folder says " + arch);
    pack.title = j.value("title", arch);
    pack.note = j.value("note", "");
    pack.hardware_verified = j.at("hardware_verified");
    for (const auto& [name, v] : j.at("parts").items()) {
      PackPart p;
      p.name = name;
      if (v.is_string()) {
        p.file = v;
      } else {
        p.file = v.at("header");
        p.header = true;
        p.intro = v.value("intro", "");
      }
      if (!FileExists(pack.dir + "/" + p.file)) fail("part '" + name + "': no file " + p.file);
      pack.parts.push_back(p);
    }
    for (const auto& [name, list] : j.at("variants").items()) {
      if (name == "none") fail("variant 'none' is implicit (the empty pack)");
      std::vector<std::string> names = list;
      if (names.empty()) fail("variant '" + name + "' names no part");
      for (const auto& n : names)
        if (std::none_of(pack.parts.begin(), pack.parts.end(),
                         [&](const PackPart& p) { return p.name == n; }))
          fail("variant '" + name + "' names an unknown part '" + n + "'");
      pack.variants[name] = names;
    }
    if (!pack.variants.count("full")) fail("no 'full' variant");
    for (const auto& e : j.value("examples", json::array())) {
      PackExample ex{e.at("file"), e.at("task")};
      if (!FileExists(pack.dir + "/" + ex.file)) fail("example: no file " + ex.file);
      pack.examples.push_back(ex);
    }
  } catch (const json::exception& e) {
    fail(std::string("malformed: ") + e.what());
  }
  return pack;
}

std::string InlinePackHeaders(const std::string& source, const Pack& pack) {
  std::map<std::string, std::string> headers = pack.Headers();
  static const std::regex include_line(R"re(^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[^\n]*$)re",
                                       std::regex::multiline);
  std::string out;
  auto begin = std::sregex_iterator(source.begin(), source.end(), include_line);
  size_t pos = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    auto h = headers.find(fs::path((*it)[1].str()).filename().string());
    if (h == headers.end()) continue;
    out += source.substr(pos, it->position() - pos);
    out += "// ---- " + h->first + " (inlined from the knowledge pack) ----\n";
    out += ReadFile(h->second);
    out += "// ---- end of " + h->first + " ----";
    pos = it->position() + it->length();
  }
  out += source.substr(pos);
  return out;
}

std::vector<std::string> CompilableBlocks(const std::string& markdown) {
  std::vector<std::string> blocks;
  std::vector<std::string> lines = Split(markdown, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string head = Trim(lines[i]);
    if (head.rfind("```", 0) != 0) continue;
    std::string info = Trim(head.substr(3));
    std::string body;
    size_t k = i + 1;
    for (; k < lines.size() && Trim(lines[k]).rfind("```", 0) != 0; ++k) body += lines[k] + "\n";
    if (info == "cuda compile") blocks.push_back(body);
    i = k;  // past the closing fence
  }
  return blocks;
}

}  // namespace ptxbench
