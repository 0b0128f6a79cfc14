#include <algorithm>
#include <cstring>

#include "trainmem/message.hpp"
#include "util/message_table.hpp"

namespace trainmem {
namespace messages {

const char* find_template(const char* code) {
  const Catalog c = catalog_entries();
  const CatalogEntry* end = c.entries + c.count;
  const CatalogEntry* it = std::lower_bound(
      c.entries, end, code,
      [](const CatalogEntry& e, const char* k) { return std::strcmp(e.code, k) < 0; });
  return it != end && std::strcmp(it->code, code) == 0 ? it->text : nullptr;
}

}  // namespace messages

std::string english(const Message& m) {
  const char* text = messages::find_template(m.code.c_str());
  // A code outside the catalog is a bug the tests catch (test_messages.cpp); say it plainly.
  if (!text) return "(message " + m.code + ")";
  std::string out;
  for (const char* p = text; *p; ++p) {
    const char* close = *p == '{' ? std::strchr(p, '}') : nullptr;
    if (!close) {
      out += *p;
      continue;
    }
    const std::string hole(p + 1, close);
    bool found = false;
    for (const auto& kv : m.params)
      if (kv.first == hole) {
        out += kv.second;
        found = true;
        break;
      }
    for (size_t i = 0; !found && i < m.nested.size(); ++i)
      if (m.nested[i].first == hole) {
        found = true;
        for (size_t k = 0; k < m.nested[i].second.size(); ++k)
          out += (k ? "; " : "") + english(m.nested[i].second[k]);
      }
    if (!found) out.append(p, close + 1);  // kept visible: a missing parameter is a bug
    p = close;
  }
  return out;
}

Text::Text(Message m) : english_(english(m)) { parts_.push_back(std::move(m)); }

Text& Text::then(Message m) {
  const bool plain = !english_.empty() && parts_.empty();
  if (!english_.empty()) english_ += "; ";
  english_ += english(m);
  if (!plain) parts_.push_back(std::move(m));  // a plain sentence stays plain (not coded)
  return *this;
}

Text& Text::then_all(const Text& t) {
  // A plain sentence joined to coded clauses leaves the whole sentence plain (not coded).
  if (t.empty()) return *this;
  const bool keep = (english_.empty() || coded()) && t.coded();
  if (!english_.empty()) english_ += "; ";
  english_ += t.str();
  if (keep)
    parts_.insert(parts_.end(), t.parts_.begin(), t.parts_.end());
  else
    parts_.clear();
  return *this;
}

}  // namespace trainmem
