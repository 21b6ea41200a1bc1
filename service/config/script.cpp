#include "service/config/script.hpp"

#include "core/canonical_json.hpp"
#include "core/strict_yaml.hpp"

#include <boost/json/serialize.hpp>

#include <yaml-cpp/yaml.h>

namespace airlock::service {

namespace json = boost::json;
using core::yaml::index_path;

namespace {

std::optional<core::model_tool_call> read_call(core::yaml::reader& r, YAML::Node const& n, std::string const& path) {
    if (!r.mapping(n, path, {"tool", "arguments", "id"})) return std::nullopt;
    core::model_tool_call c;
    auto tool = n["tool"] ? r.text(n["tool"], path + ".tool") : std::nullopt;
    if (!n["tool"]) r.fail("missing_field", path + ".tool is required: the wire name the model asks for");
    if (!tool) return std::nullopt;
    c.name = *tool;
    c.arguments = json::object{};
    if (auto a = n["arguments"]) {
        std::size_t budget = core::yaml::max_json_nodes;
        auto v = r.json(a, path + ".arguments", budget);
        if (!v) return std::nullopt;
        // Written as a string, arguments are passed on as a string: how a model writes broken JSON.
        c.arguments = std::move(*v);
    }
    if (auto id = n["id"]) {
        auto s = r.text(id, path + ".id");
        if (!s) return std::nullopt;
        c.id = *s;
    }
    return c;
}

std::optional<std::uint64_t> read_count(core::yaml::reader& r, YAML::Node const& n, std::string const& path) {
    std::size_t budget = 1;
    auto v = r.json(n, path, budget);
    if (!v) return std::nullopt;
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    r.fail("wrong_type", path + " must be a count (an integer of 0 or more)");
    return std::nullopt;
}

std::optional<scripted_turn> read_turn(core::yaml::reader& r, YAML::Node const& n, std::string const& path) {
    if (!r.mapping(n, path, {"say", "call", "calls", "usage", "fail"})) return std::nullopt;
    scripted_turn t;
    auto before = r.problems.size();
    if (auto s = n["say"]) {
        if (auto text = r.string(s, path + ".say")) t.say = *text;
    }
    if (auto c = n["call"]) {
        if (auto call = read_call(r, c, path + ".call")) t.calls.push_back(std::move(*call));
    }
    if (auto cs = n["calls"]) {
        if (n["call"]) r.fail("conflicting_fields", path + " has both call and calls; write one");
        else if (r.sequence(cs, path + ".calls")) {
            for (std::size_t i = 0; i < cs.size(); ++i)
                if (auto call = read_call(r, cs[i], index_path(path + ".calls", i)))
                    t.calls.push_back(std::move(*call));
        }
    }
    if (auto u = n["usage"]) {
        if (r.mapping(u, path + ".usage", {"input_tokens", "output_tokens"})) {
            core::token_usage usage;
            if (u["input_tokens"])
                if (auto v = read_count(r, u["input_tokens"], path + ".usage.input_tokens")) usage.input_tokens = *v;
            if (u["output_tokens"])
                if (auto v = read_count(r, u["output_tokens"], path + ".usage.output_tokens")) usage.output_tokens = *v;
            t.usage = usage;
        }
    }
    if (auto f = n["fail"]) {
        if (r.mapping(f, path + ".fail", {"kind", "detail"})) {
            core::model_error e{core::tool_error_kind::tool_failed, "", "the script says this call fails"};
            if (auto k = f["kind"]) {
                auto s = r.string(k, path + ".fail.kind");
                auto kind = s ? core::parse_tool_error_kind(*s) : std::nullopt;
                if (s && !kind)
                    r.fail("invalid_value", path + ".fail.kind is " + core::yaml::in_quotes(*s) +
                                                "; expected unreachable, refused, timed_out, tool_failed or malformed");
                if (kind) e.kind = *kind;
            }
            if (auto d = f["detail"])
                if (auto s = r.string(d, path + ".fail.detail")) e.detail = *s;
            t.failure = e;
        }
    }
    if (r.problems.size() == before && !n["say"] && !n["call"] && !n["calls"] && !n["fail"])
        r.fail("empty_turn", path + " says nothing and calls nothing; write say, call, calls or fail");
    if (r.problems.size() != before) return std::nullopt;
    return t;
}

}  // namespace

core::result<script> parse_script(std::string_view text, std::string_view source) {
    if (auto nul = core::yaml::nul_byte(text)) return core::make_error("invalid_yaml", std::string(source) + " holds " + *nul);
    YAML::Node doc;
    try {
        doc = YAML::Load(std::string(text));
    } catch (YAML::Exception const& e) {
        return core::make_error("invalid_yaml", std::string(source) + ": not YAML: " + e.msg + " (line " +
                                                    std::to_string(e.mark.line + 1) + ")");
    }
    core::yaml::reader r({.document = "the script", .utf8_strings = true});
    script s;
    if (r.mapping(doc, "", {"model", "turns", "after_last"})) {
        if (auto m = doc["model"])
            if (auto v = r.text(m, "model")) s.model = *v;
        if (auto a = doc["after_last"]) {
            if (auto v = r.string(a, "after_last")) {
                if (*v == "fail") s.after_last = after_last_turn::fail;
                else if (*v == "repeat") s.after_last = after_last_turn::repeat;
                else r.fail("invalid_value", "after_last is " + core::yaml::in_quotes(*v) + "; expected fail or repeat");
            }
        }
        auto turns = doc["turns"];
        if (!turns) r.fail("missing_field", "turns is required: the list of what the model does, in order");
        else if (r.sequence(turns, "turns")) {
            if (turns.size() == 0) r.fail("invalid_value", "turns is empty: a script needs at least one turn");
            for (std::size_t i = 0; i < turns.size(); ++i)
                if (auto t = read_turn(r, turns[i], index_path("turns", i))) s.turns.push_back(std::move(*t));
        }
    }
    if (!r.problems.empty()) {
        auto e = r.problems.front();
        e.message = std::string(source) + ": " + e.message;
        return e;
    }
    return s;
}

}  // namespace airlock::service
