#include "mcp/protocol/sse.hpp"

#include <algorithm>
#include <limits>

namespace airlock::mcp {

namespace {

constexpr unsigned char bom[3] = {0xEF, 0xBB, 0xBF};

// `retry` is honoured only when the value is nothing but ASCII digits; a value too large for 64 bits
// is ignored like any other invalid one rather than wrapped.
std::optional<std::uint64_t> parse_retry(std::string_view v) {
    if (v.empty()) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return std::nullopt;
        auto digit = static_cast<std::uint64_t>(c - '0');
        if (n > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        n = n * 10 + digit;
    }
    return n;
}

// Splits at CRLF, LF or lone CR, the three line ends a reader accepts.
template <class F>
void for_each_line(std::string_view text, F&& f) {
    std::size_t pos = 0;
    while (true) {
        auto k = text.find_first_of("\r\n", pos);
        if (k == std::string_view::npos) {
            f(text.substr(pos));
            return;
        }
        f(text.substr(pos, k - pos));
        pos = (text[k] == '\r' && k + 1 < text.size() && text[k + 1] == '\n') ? k + 2 : k + 1;
    }
}

}  // namespace

core::result<void> sse_parser::check_size(std::size_t pending) {
    if (pending + data_.size() + type_.size() <= max_) return {};
    failed_ = core::make_error("sse_event_too_large",
                               "an SSE event is larger than the limit of " + std::to_string(max_) + " bytes");
    line_.clear();
    data_.clear();
    return *failed_;
}

core::result<void> sse_parser::feed(std::string_view bytes, std::vector<sse_event>& out) {
    if (failed_) return *failed_;
    if (!started_) {
        // A BOM is stripped only at the very start of the stream, and may arrive a byte at a time.
        std::size_t i = 0;
        while (i < bytes.size() && bom_matched_ < 3 && static_cast<unsigned char>(bytes[i]) == bom[bom_matched_]) {
            ++bom_matched_;
            ++i;
        }
        if (bom_matched_ == 3) {
            started_ = true;
        } else if (i == bytes.size()) {
            return {};  // all bytes so far could still be a BOM
        } else {
            // Not a BOM after all: the bytes held back are ordinary content.
            started_ = true;
            std::string held(reinterpret_cast<char const*>(bom), bom_matched_);
            if (auto r = process(held, out); !r) return r;
        }
        bytes.remove_prefix(i);
    }
    return process(bytes, out);
}

core::result<void> sse_parser::process(std::string_view bytes, std::vector<sse_event>& out) {
    if (bytes.empty()) return {};
    std::size_t pos = 0;
    if (after_cr_ && bytes[0] == '\n') pos = 1;
    after_cr_ = false;
    while (pos < bytes.size()) {
        auto k = bytes.find_first_of("\r\n", pos);
        if (k == std::string_view::npos) {
            if (auto r = check_size(line_.size() + bytes.size() - pos); !r) return r;
            line_.append(bytes.substr(pos));
            return {};
        }
        auto piece = bytes.substr(pos, k - pos);
        if (line_.empty()) {
            if (auto r = check_size(piece.size()); !r) return r;
            if (auto r = line(piece, out); !r) return r;
        } else {
            if (auto r = check_size(line_.size() + piece.size()); !r) return r;
            line_.append(piece);
            auto whole = std::move(line_);
            line_.clear();
            if (auto r = line(whole, out); !r) return r;
        }
        if (bytes[k] == '\r') {
            if (k + 1 == bytes.size()) {
                after_cr_ = true;  // the LF of a CRLF may be in the next chunk
                pos = k + 1;
            } else {
                pos = bytes[k + 1] == '\n' ? k + 2 : k + 1;
            }
        } else {
            pos = k + 1;
        }
    }
    return {};
}

core::result<void> sse_parser::line(std::string_view text, std::vector<sse_event>& out) {
    if (text.empty()) {
        // Dispatch. An event with no data lines is not dispatched; its type is forgotten, its id kept.
        if (data_.empty()) {
            type_.clear();
            event_retry_.reset();
            return {};
        }
        if (data_.back() == '\n') data_.pop_back();
        sse_event e;
        if (!type_.empty()) e.type = std::move(type_);
        e.data = std::move(data_);
        e.id = last_id_;
        e.retry = event_retry_;
        out.push_back(std::move(e));
        data_.clear();
        type_.clear();
        event_retry_.reset();
        return {};
    }
    if (text.front() == ':') return {};  // comment (keep-alives)

    std::string_view field = text;
    std::string_view value;
    if (auto colon = text.find(':'); colon != std::string_view::npos) {
        field = text.substr(0, colon);
        value = text.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
        if (auto r = check_size(value.size() + 1); !r) return r;
        data_.append(value);
        data_.push_back('\n');
    } else if (field == "event") {
        type_.assign(value);
    } else if (field == "id") {
        if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
    } else if (field == "retry") {
        if (auto n = parse_retry(value)) {
            retry_ = n;
            event_retry_ = n;
        }
    }
    // Any other field name is ignored, as the spec requires.
    return {};
}

bool sse_parser::finish() {
    bool discarded = !data_.empty() || !line_.empty() || (!started_ && bom_matched_ > 0);
    data_.clear();
    type_.clear();
    line_.clear();
    event_retry_.reset();
    after_cr_ = false;
    return discarded;
}

core::result<std::string> format_sse_event(sse_frame const& f) {
    auto has_break = [](std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; };
    std::string out;
    if (f.event) {
        if (has_break(*f.event)) return core::make_error("invalid_sse_field", "SSE event type holds a line break");
        out += "event: ";
        out += *f.event;
        out += '\n';
    }
    if (f.id) {
        if (has_break(*f.id)) return core::make_error("invalid_sse_field", "SSE event id holds a line break");
        if (f.id->find('\0') != std::string::npos)
            return core::make_error("invalid_sse_field", "SSE event id holds NUL, which readers ignore");
        out += "id: ";
        out += *f.id;
        out += '\n';
    }
    if (f.retry) {
        out += "retry: ";
        out += std::to_string(*f.retry);
        out += '\n';
    }
    // Always one space after the colon, so data that itself starts with a space keeps it.
    for_each_line(f.data, [&](std::string_view l) {
        out += "data:";
        if (!l.empty()) {
            out += ' ';
            out += l;
        }
        out += '\n';
    });
    out += '\n';
    return out;
}

std::string format_sse_comment(std::string_view text) {
    std::string out;
    for_each_line(text, [&](std::string_view l) {
        out += ':';
        if (!l.empty()) {
            out += ' ';
            out += l;
        }
        out += '\n';
    });
    return out;
}

}  // namespace airlock::mcp
