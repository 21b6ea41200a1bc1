#include "core/secrets.hpp"

#include "core/utf8.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

namespace airlock::core {

namespace {

struct escape_style {
    bool slash = false;      // '/' as "\/" (PHP, some Java encoders)
    bool ascii = false;      // beyond ASCII as \uXXXX (Python's json.dumps, PHP)
    bool html = false;       // '<', '>', '&' as \u003c... (Go's encoding/json)
    bool upper_hex = false;  // \u00E9 rather than \u00e9
};

void append_u(std::string& out, unsigned code, bool upper) {
    char buf[8];
    std::snprintf(buf, sizeof buf, upper ? "\\u%04X" : "\\u%04x", code);
    out += buf;
}

// `s` as it reads between the quotes of a JSON string written in `style`.
std::string json_escaped(std::string_view s, escape_style style) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c == '\b') out += "\\b";
        else if (c == '\f') out += "\\f";
        else if (c < 0x20) append_u(out, c, style.upper_hex);
        else if (c == '/' && style.slash) out += "\\/";
        else if ((c == '<' || c == '>' || c == '&') && style.html) append_u(out, c, style.upper_hex);
        else if (c >= 0x80 && style.ascii) {
            // decode_utf8 advances i past a well-formed sequence; a byte that starts none is kept.
            long cp = decode_utf8(s, i);
            if (cp < 0) {
                out += static_cast<char>(c);
                ++i;
                continue;
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                append_u(out, static_cast<unsigned>(0xd800 + (cp >> 10)), style.upper_hex);
                append_u(out, static_cast<unsigned>(0xdc00 + (cp & 0x3ff)), style.upper_hex);
            } else {
                append_u(out, static_cast<unsigned>(cp), style.upper_hex);
            }
            continue;
        } else out += static_cast<char>(c);
        ++i;
    }
    return out;
}

// RFC 3986 percent-encoding: everything but the unreserved characters.
std::string percent_encoded(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                          c == '.' || c == '_' || c == '~';
        if (unreserved) {
            out += static_cast<char>(c);
            continue;
        }
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        out += buf;
    }
    return out;
}

bool could_be_number(std::string_view s) {
    return s.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
}

}  // namespace

bool secret_set::add(std::string_view secret) {
    if (secret.size() < min_bytes) return false;
    if (std::find(forms_.begin(), forms_.end(), secret) != forms_.end()) return true;
    std::vector<std::string> forms{std::string(secret), percent_encoded(secret)};
    for (bool slash : {false, true})
        for (bool ascii : {false, true})
            for (bool html : {false, true})
                for (bool upper : {false, true}) forms.push_back(json_escaped(secret, {slash, ascii, html, upper}));
    for (auto& f : forms) {
        if (std::find(forms_.begin(), forms_.end(), f) != forms_.end()) continue;
        numeric_ = numeric_ || could_be_number(f);
        forms_.push_back(std::move(f));
    }
    // Longest first: a secret that contains another is redacted whole.
    std::stable_sort(forms_.begin(), forms_.end(), [](auto const& a, auto const& b) { return a.size() > b.size(); });
    return true;
}

bool secret_set::found_in(std::string_view text) const {
    for (auto const& f : forms_)
        if (text.find(f) != std::string_view::npos) return true;
    return false;
}

bool secret_set::redact(std::string& text) const {
    bool changed = false;
    for (auto const& f : forms_) {
        for (auto at = text.find(f); at != std::string::npos; at = text.find(f, at + mark.size())) {
            text.replace(at, f.size(), mark);
            changed = true;
        }
    }
    return changed;
}

bool secret_set::redact_cut(std::string& text) const {
    bool changed = redact(text);
    // Pieces of one or two bytes say next to nothing about a secret of six or more, and would
    // turn the last character of many an excerpt into "[redacted]".
    constexpr std::size_t shortest_piece = 3;
    std::size_t longest = 0;
    for (auto const& f : forms_) {
        for (std::size_t k = std::min(f.size() - 1, text.size()); k >= shortest_piece && k > longest; --k) {
            if (std::string_view(text).ends_with(std::string_view(f).substr(0, k))) {
                longest = k;
                break;
            }
        }
    }
    if (longest == 0) return changed;
    text.replace(text.size() - longest, longest, mark);
    return true;
}

bool secret_set::redact(boost::json::value& v) const {
    if (forms_.empty()) return false;
    switch (v.kind()) {
        case boost::json::kind::string: {
            auto& s = v.get_string();
            if (!found_in(s)) return false;
            std::string text(s);
            redact(text);
            s = text;
            return true;
        }
        case boost::json::kind::object: return redact(v.get_object());
        case boost::json::kind::array: {
            bool changed = false;
            for (auto& e : v.get_array()) changed = redact(e) || changed;
            return changed;
        }
        case boost::json::kind::int64:
        case boost::json::kind::uint64:
        case boost::json::kind::double_:
            if (!numeric_ || !found_in(boost::json::serialize(v))) return false;
            v = mark;
            return true;
        default: return false;
    }
}

bool secret_set::redact(boost::json::object& o) const {
    if (forms_.empty()) return false;
    bool changed = false;
    bool keys = false;
    for (auto& kv : o) {
        keys = keys || found_in(kv.key());
        changed = redact(kv.value()) || changed;
    }
    if (!keys) return changed;
    // Keys cannot be renamed in place; two that read the same once redacted keep the later value.
    boost::json::object out(o.storage());
    out.reserve(o.size());
    for (auto& kv : o) {
        std::string key(kv.key());
        redact(key);
        out.insert_or_assign(key, std::move(kv.value()));
    }
    o = std::move(out);
    return true;
}

namespace secrets {

namespace {

struct registry {
    std::mutex mutex;
    std::shared_ptr<secret_set const> set = std::make_shared<secret_set const>();
    // Read without the lock on every output: most processes have no secret at all.
    std::atomic<bool> any{false};
};

registry& the_registry() {
    static registry r;
    return r;
}

}  // namespace

void add(std::string_view secret) {
    if (secret.size() < secret_set::min_bytes) return;
    auto& r = the_registry();
    std::lock_guard lock(r.mutex);
    auto next = std::make_shared<secret_set>(*r.set);
    next->add(secret);
    r.set = std::move(next);
    r.any = true;
}

void clear() {
    auto& r = the_registry();
    std::lock_guard lock(r.mutex);
    r.set = std::make_shared<secret_set const>();
    r.any = false;
}

std::shared_ptr<secret_set const> current() {
    static auto const none = std::make_shared<secret_set const>();
    auto& r = the_registry();
    if (!r.any) return none;
    std::lock_guard lock(r.mutex);
    return r.set;
}

void redact(std::string& text) {
    current()->redact(text);
}

std::string redacted(std::string_view text) {
    std::string out(text);
    redact(out);
    return out;
}

void redact_cut(std::string& text) {
    current()->redact_cut(text);
}

void redact(boost::json::value& v) {
    current()->redact(v);
}

void redact(boost::json::object& o) {
    current()->redact(o);
}

}  // namespace secrets
}  // namespace airlock::core
