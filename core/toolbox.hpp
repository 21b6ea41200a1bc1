#pragma once
// ToolBox: typed in-process tools. The argument struct, described with Boost.Describe, is the one
// declaration of a tool's arguments: the JSON Schema shown to a model is derived from it, the body
// receives it, and check_against(manifest) reports where the box and the reviewed manifest disagree.
//
//     enum class currency { eur, usd };
//     BOOST_DESCRIBE_ENUM(currency, eur, usd)
//
//     struct post_args {
//         std::string account;
//         std::int64_t amount_cents;
//         currency in = currency::eur;
//         std::optional<std::string> memo;             // optional members are not required
//         static constexpr core::field_doc field_docs[] = {
//             {"account", "The account to debit."},
//             {"amount_cents", "How much, in cents."},
//         };
//     };
//     BOOST_DESCRIBE_STRUCT(post_args, (), (account, amount_cents, in, memo))
//
//     core::toolbox box("ledger");
//     box.add<post_args>("post", {.description = "Post to the ledger."},
//                        [](post_args a) -> core::tool_result<boost::json::value> { ... });
//
// Member types: bool; integers ("integer", range-checked); float/double ("number"); std::string;
// enums described with BOOST_DESCRIBE_ENUM (a string, one of the enumerator names);
// std::vector<T>; structs described with BOOST_DESCRIBE_STRUCT (nested objects); std::optional<T>
// as a struct member. Anything else fails to compile. Recursive argument types are not supported.
//
// Arguments are converted strictly, and whatever does not fit is a `malformed` tool_error naming the
// field (e.g. "arguments.payee.name: expected a string, got an integer"); the body does not run:
// - a required member that is absent;
// - a value of the wrong JSON type, including null for an optional member (absent means empty;
//   the published schema does not admit null, and the conversion admits exactly what it publishes);
// - an integer outside the member type's range, or a number with a fractional part for an integer
//   (1.0 fits: JSON Schema counts it as an integer);
// - a string that is not one of an enum's names (byte for byte);
// - a key that is not a member, at any depth (the schema says "additionalProperties": false).
//   A misspelled optional field would otherwise be dropped silently and the call would proceed
//   on a default the model never chose.
// A null `arguments` at the top level is read as {} (MCP lets a client omit them).

#include "core/error.hpp"
#include "core/manifest.hpp"
#include "core/tool.hpp"
#include "core/tool_id.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace airlock::core {

// One member's description in the derived schema. An argument struct lists them in a static member
//     static constexpr field_doc field_docs[] = {{"account", "The account to debit."}, ...};
// so the prose travels with the type into every tool (and every nesting) that uses it. An entry that
// names no member, or names one twice, fails to compile: a renamed field must not silently lose its
// description.
struct field_doc {
    std::string_view field;
    std::string_view description;
};

struct tool_options {
    std::string description;
    // Whether calling the tool changes the world: the author's claim about their own code. Defaults
    // to true, so a tool nobody thought about gets the cautious treatment (the taint gate applies).
    bool mutates = true;
};

// What a registered tool declares about itself, without being called.
struct declared_tool {
    tool_id id;
    std::string description;
    boost::json::object schema;  // JSON Schema of the arguments
    bool mutates = true;
};

// A disagreement between the box and a manifest.
enum class drift_kind {
    not_granted,                    // implemented here, granted nowhere in the manifest
    not_implemented,                // granted for this box's server, implemented nowhere here
    mutates_but_granted_read_only,  // the tool says it mutates; the grant says `mutates: false`
    grant_repeats_arguments,        // the grant of a tool here writes its own `arguments` schema
};
std::string_view to_string(drift_kind k) noexcept;

struct drift_finding {
    drift_kind kind;
    tool_id tool;
    std::string message;  // names the tool and says why the disagreement matters
};

namespace detail {

template <class T>
struct optional_traits : std::false_type {};
template <class T>
struct optional_traits<std::optional<T>> : std::true_type {
    using value_type = T;
};

template <class T>
struct vector_traits : std::false_type {};
template <class T, class A>
struct vector_traits<std::vector<T, A>> : std::true_type {
    using value_type = T;
};

template <class T>
concept described_struct = std::is_class_v<T> && boost::describe::has_describe_members<T>::value;
template <class T>
concept described_enum = std::is_enum_v<T> && boost::describe::has_describe_enumerators<T>::value;
template <class T>
concept character = std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
                    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;
template <class T>
concept integer = std::is_integral_v<T> && !std::is_same_v<T, bool> && !character<T>;
template <class T>
concept documented = requires { T::field_docs[0].field; T::field_docs[0].description; };

template <class>
inline constexpr bool unsupported = false;

// Public members, including those of described bases: what a model may send and the body reads.
template <class T>
using members_of = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;
template <class T>
using hidden_members_of = boost::describe::describe_members<
    T, boost::describe::mod_protected | boost::describe::mod_private | boost::describe::mod_inherited>;

template <class T, class D>
using member_type = std::remove_cvref_t<decltype(std::declval<T&>().*D::pointer)>;

template <class T>
constexpr bool has_member_named(std::string_view name) {
    bool found = false;
    boost::mp11::mp_for_each<members_of<T>>([&](auto d) {
        if (std::string_view(decltype(d)::name) == name) found = true;
    });
    return found;
}

// Every field_docs entry of T, and of every struct reachable from T's members, names a distinct
// member. Evaluated at compile time by toolbox::add.
template <class T>
constexpr bool field_docs_are_valid() {
    if constexpr (optional_traits<T>::value || vector_traits<T>::value) {
        return field_docs_are_valid<typename T::value_type>();
    } else if constexpr (described_struct<T>) {
        bool ok = true;
        if constexpr (documented<T>) {
            constexpr auto n = std::size(T::field_docs);
            for (std::size_t i = 0; i < n; ++i) {
                if (!has_member_named<T>(T::field_docs[i].field)) ok = false;
                for (std::size_t j = 0; j < i; ++j)
                    if (T::field_docs[i].field == T::field_docs[j].field) ok = false;
            }
        }
        boost::mp11::mp_for_each<members_of<T>>([&](auto d) {
            if (!field_docs_are_valid<member_type<T, decltype(d)>>()) ok = false;
        });
        return ok;
    } else {
        return true;
    }
}

template <class T>
std::string_view doc_for(std::string_view field) {
    if constexpr (documented<T>) {
        for (auto const& d : T::field_docs)
            if (d.field == field) return d.description;
    }
    return {};
}

template <class T>
boost::json::object schema_of();

template <class T>
boost::json::object object_schema() {
    static_assert(boost::mp11::mp_empty<hidden_members_of<T>>::value,
                  "argument structs must describe only public members: a non-public member would be "
                  "left at its default whatever the model sends");
    boost::json::object properties;
    boost::json::array required;
    boost::mp11::mp_for_each<members_of<T>>([&](auto d) {
        using D = decltype(d);
        using M = member_type<T, D>;
        boost::json::object field;
        if constexpr (optional_traits<M>::value) {
            field = schema_of<typename optional_traits<M>::value_type>();
        } else {
            field = schema_of<M>();
            required.emplace_back(D::name);
        }
        if (auto text = doc_for<T>(D::name); !text.empty()) field["description"] = text;
        properties[D::name] = std::move(field);
    });
    boost::json::object out;
    out["type"] = "object";
    out["properties"] = std::move(properties);
    // Omitted rather than empty: draft-04 validators, still common among MCP hosts, reject [].
    if (!required.empty()) out["required"] = std::move(required);
    out["additionalProperties"] = false;
    return out;
}

template <class T>
boost::json::object schema_of() {
    boost::json::object out;
    if constexpr (std::is_same_v<T, bool>) {
        out["type"] = "boolean";
    } else if constexpr (integer<T>) {
        out["type"] = "integer";
        // Bounds are published only where they are narrower than JSON tooling's own; the conversion
        // enforces the same range either way.
        if constexpr (std::is_unsigned_v<T>) out["minimum"] = 0;
        if constexpr (sizeof(T) < sizeof(std::int64_t)) {
            if constexpr (std::is_signed_v<T>)
                out["minimum"] = static_cast<std::int64_t>(std::numeric_limits<T>::min());
            out["maximum"] = static_cast<std::int64_t>(std::numeric_limits<T>::max());
        }
    } else if constexpr (std::is_floating_point_v<T>) {
        out["type"] = "number";
    } else if constexpr (std::is_same_v<T, std::string>) {
        out["type"] = "string";
    } else if constexpr (described_enum<T>) {
        out["type"] = "string";
        boost::json::array names;
        boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>(
            [&](auto e) { names.emplace_back(decltype(e)::name); });
        out["enum"] = std::move(names);
    } else if constexpr (vector_traits<T>::value) {
        out["type"] = "array";
        out["items"] = schema_of<typename vector_traits<T>::value_type>();
    } else if constexpr (described_struct<T>) {
        out = object_schema<T>();
    } else if constexpr (optional_traits<T>::value) {
        static_assert(unsupported<T>, "std::optional is meaningful only as a struct member (absent = empty)");
    } else {
        static_assert(unsupported<T>,
                      "unsupported argument member type: use bool, an integer, float/double, std::string, "
                      "a described enum, std::vector, a described struct, or std::optional of those");
    }
    return out;
}

// Where a value did not fit. `path` is built while unwinding (".payee.name", "[2]"), so a call whose
// arguments fit pays nothing for it.
struct field_error {
    std::string path;
    std::string problem;
};

// "expected <what>, got <kind of v>". Never quotes the value: arguments may be sensitive.
field_error expected(std::string_view what, boost::json::value const& v);
field_error out_of_range(std::string const& lowest, std::string const& highest);
field_error not_an_enum_name(std::vector<std::string_view> const& names);

// A JSON number with no fractional part (an int64, a uint64, or a double such as 1.0), widened.
struct integral_number {
    enum { not_integral, fits_int64, fits_uint64, too_large } kind = not_integral;
    std::int64_t as_int64 = 0;
    std::uint64_t as_uint64 = 0;
};
integral_number integral_of(boost::json::value const& v) noexcept;

template <class T>
std::optional<field_error> read(boost::json::value const& v, T& out);

template <class T>
std::optional<field_error> read_object(boost::json::value const& v, T& out) {
    auto const* obj = v.if_object();
    if (!obj) return expected("an object", v);
    // Unknown keys first: a misspelled field is the cause, and reporting the required field it was
    // meant to be as "missing" would send the model looking in the wrong place.
    for (auto const& kv : *obj) {
        if (!has_member_named<T>(std::string_view(kv.key())))
            return field_error{"." + std::string(kv.key()), "is not an argument of this tool"};
    }
    std::optional<field_error> failure;
    boost::mp11::mp_for_each<members_of<T>>([&](auto d) {
        using D = decltype(d);
        using M = member_type<T, D>;
        if (failure) return;
        auto& member = out.*D::pointer;
        auto const* found = obj->if_contains(D::name);
        if constexpr (optional_traits<M>::value) {
            if (!found) {
                member.reset();
                return;
            }
            member.emplace();
            failure = read(*found, *member);
        } else {
            if (!found) {
                failure = field_error{{}, "is required and missing"};
            } else {
                failure = read(*found, member);
            }
        }
        if (failure) failure->path = "." + std::string(D::name) + failure->path;
    });
    return failure;
}

template <class T>
std::optional<field_error> read(boost::json::value const& v, T& out) {
    if constexpr (std::is_same_v<T, bool>) {
        auto const* b = v.if_bool();
        if (!b) return expected("a boolean", v);
        out = *b;
    } else if constexpr (integer<T>) {
        auto n = integral_of(v);
        if (n.kind == integral_number::not_integral) return expected("an integer", v);
        bool fits = (n.kind == integral_number::fits_int64 && std::in_range<T>(n.as_int64)) ||
                    (n.kind == integral_number::fits_uint64 && std::in_range<T>(n.as_uint64));
        if (!fits)
            return out_of_range(std::to_string(std::numeric_limits<T>::min()),
                                std::to_string(std::numeric_limits<T>::max()));
        out = n.kind == integral_number::fits_int64 ? static_cast<T>(n.as_int64) : static_cast<T>(n.as_uint64);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (auto const* d = v.if_double()) out = static_cast<T>(*d);
        else if (auto const* i = v.if_int64()) out = static_cast<T>(*i);
        else if (auto const* u = v.if_uint64()) out = static_cast<T>(*u);
        else return expected("a number", v);
    } else if constexpr (std::is_same_v<T, std::string>) {
        auto const* s = v.if_string();
        if (!s) return expected("a string", v);
        out.assign(s->data(), s->size());
    } else if constexpr (described_enum<T>) {
        auto const* s = v.if_string();
        if (!s) return expected("a string", v);
        bool matched = false;
        std::vector<std::string_view> names;
        boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto e) {
            names.emplace_back(decltype(e)::name);
            if (!matched && std::string_view(*s) == decltype(e)::name) {
                out = decltype(e)::value;
                matched = true;
            }
        });
        if (!matched) return not_an_enum_name(names);
    } else if constexpr (vector_traits<T>::value) {
        auto const* arr = v.if_array();
        if (!arr) return expected("an array", v);
        out.clear();
        out.reserve(arr->size());
        for (std::size_t i = 0; i < arr->size(); ++i) {
            typename vector_traits<T>::value_type item{};
            if (auto e = read((*arr)[i], item)) {
                e->path = "[" + std::to_string(i) + "]" + e->path;
                return e;
            }
            out.push_back(std::move(item));
        }
    } else if constexpr (described_struct<T>) {
        return read_object(v, out);
    } else {
        static_assert(unsupported<T>, "unsupported argument member type (see schema_of)");
    }
    return std::nullopt;
}

// Arguments → Args, or a malformed tool_error naming the field. The only way a body gets its Args.
template <class Args>
tool_result<Args> arguments_to(tool_id const& tool, boost::json::value const& arguments) {
    static boost::json::value const none = boost::json::object{};
    Args out{};
    if (auto e = read_object(arguments.is_null() ? none : arguments, out))
        return tool_error{tool_error_kind::malformed, tool.uri(), "arguments" + e->path + ": " + e->problem};
    return out;
}

template <class T>
struct is_awaitable : std::false_type {};
template <class T, class E>
struct is_awaitable<boost::asio::awaitable<T, E>> : std::true_type {};

template <class R>
tool_result<boost::json::value> to_tool_result(R&& r, tool_id const& tool) {
    if constexpr (std::is_same_v<std::remove_cvref_t<R>, tool_result<boost::json::value>>) {
        // A body need not know its own id to report failure; the box fills it in.
        if (r.has_error() && r.error().tool.empty()) {
            auto e = r.error();
            e.tool = tool.uri();
            return e;
        }
        return std::forward<R>(r);
    } else {
        return boost::json::value(std::forward<R>(r));
    }
}

template <class Args, class Body>
boost::asio::awaitable<tool_result<boost::json::value>> invoke(std::shared_ptr<Body const> body, tool_id tool,
                                                               boost::json::value arguments) {
    auto args = arguments_to<Args>(tool, arguments);
    if (!args) co_return args.error();
    using R = std::invoke_result_t<Body const&, Args&&>;
    if constexpr (is_awaitable<R>::value) {
        auto r = co_await std::invoke(*body, std::move(*args));
        co_return to_tool_result(std::move(r), tool);
    } else {
        co_return to_tool_result(std::invoke(*body, std::move(*args)), tool);
    }
}

template <class R>
concept tool_return =
    std::is_same_v<R, tool_result<boost::json::value>> || std::is_convertible_v<R, boost::json::value>;
template <class R>
concept tool_body_return = tool_return<R> || (is_awaitable<R>::value && tool_return<typename R::value_type>);

}  // namespace detail

// A set of typed in-process tools, all under one server name, dispatched by ToolId in one place.
class toolbox final : public tool_client {
public:
    // Every tool in the box is tool://<server>/<name>. The server name is checked when a tool is added,
    // so a box with an invalid one refuses every registration, naming the server.
    explicit toolbox(std::string server) : server_(std::move(server)) {}

    std::string const& server() const noexcept { return server_; }

    // Adds the tool tool://<server>/<name> whose arguments are Args. Body is called as
    // `body(Args)` (const: calls may run concurrently) and returns boost::json::value (or anything
    // convertible), tool_result<boost::json::value>, or an awaitable of either. A tool_error it returns
    // with an empty `tool` gets this tool's id. An exception escaping the body is a bug and propagates.
    // Refused: an invalid name or server ("invalid_tool_id"), the same tool twice ("duplicate_tool").
    template <class Args, class Body>
    result<tool_id> add(std::string_view name, tool_options options, Body body) {
        static_assert(detail::described_struct<Args>, "the argument type must be described with BOOST_DESCRIBE_STRUCT");
        static_assert(std::is_default_constructible_v<Args>, "the argument type must be default-constructible");
        static_assert(detail::field_docs_are_valid<Args>(),
                      "a field_docs entry names no member of its struct, or names one twice");
        static_assert(std::is_invocable_v<Body const&, Args&&>, "the body must be callable as body(Args)");
        static_assert(detail::tool_body_return<std::invoke_result_t<Body const&, Args&&>>,
                      "the body must return boost::json::value, tool_result<boost::json::value>, "
                      "or an awaitable of either");
        auto id = tool_id::make(server_, name);
        if (!id) return id.error();
        // Shared so a call already under way keeps its body even if the box goes first.
        auto shared = std::make_shared<Body const>(std::move(body));
        invoker call = [shared, tool = *id](boost::json::value arguments) {
            return detail::invoke<Args>(shared, tool, std::move(arguments));
        };
        return insert(declared_tool{*id, std::move(options.description), detail::schema_of<Args>(), options.mutates},
                      std::move(call));
    }

    // The tool's declaration, or nullptr.
    declared_tool const* find(tool_id const& tool) const noexcept;
    // Every tool in the box, in ToolId order.
    std::vector<tool_id> ids() const;

    // Every disagreement between this box and `m`, at once, so one run fixes them all:
    // - a tool here that `m` does not grant: the binary can do what its declaration does not admit;
    // - a grant whose server is this box's server with no tool here: the model would be offered a tool
    //   that fails when chosen. Grants for other servers are some other client's (the ToolRouter fans
    //   out by server), so they are not this box's to judge;
    // - a tool that declares it mutates, granted `mutates: false`: that exemption lets model-chosen
    //   arguments past the taint gate into something that changes the world. The reverse (a grant
    //   stricter than the tool) is allowed: the operator may know of a side effect the author forgot.
    // - the grant of a tool here that carries an `arguments` schema: the schema comes from the type, so
    //   a second copy in the manifest can only drift from it. Grants for tools outside the box may
    //   carry one; whether that is right is for the client that serves them.
    // Findings come in ToolId order for the box's tools (a tool's mutates finding before its arguments
    // finding), then manifest order for unimplemented grants.
    std::vector<drift_finding> check_against(manifest const& m) const;

    // Converts the arguments into the tool's Args and runs its body. A tool not in the box is `refused`
    // (nothing ran); arguments that do not fit are `malformed` and the body does not run. Provenance is
    // not used: nothing leaves the process, so there is no callee to carry it to.
    boost::asio::awaitable<tool_result<boost::json::value>> async_call(tool_id tool, boost::json::value arguments,
                                                                       std::optional<provenance> prov) override;
    // Always local: the tools run in this process.
    destination destination_of(tool_id const& tool) const override;

private:
    using invoker = std::function<boost::asio::awaitable<tool_result<boost::json::value>>(boost::json::value)>;
    struct entry {
        declared_tool declared;
        invoker call;
    };
    result<tool_id> insert(declared_tool declared, invoker call);

    std::string server_;
    std::map<tool_id, entry> tools_;
};

}  // namespace airlock::core
