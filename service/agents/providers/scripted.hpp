#pragma once
// The scripted model provider: plays a script of turns from a YAML (or JSON) file, with no network.
// For demos, tests and `make run`. The turn it plays is the number of assistant messages already in
// the request, so one provider serves any number of runs at once and a resumed run picks up where it
// stopped. The file format is documented in docs/scripted-provider.md.

#include "core/error.hpp"
#include "core/model.hpp"
#include "service/config/script.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service {

class scripted_provider final : public core::model_provider {
public:
    explicit scripted_provider(script s) : script_(std::move(s)) {}
    static core::result<std::shared_ptr<scripted_provider>> load(std::filesystem::path const& file);

    boost::asio::awaitable<core::model_result<core::completion>> async_complete(core::completion_request request) override;
    core::destination destination_of() const override { return core::local_destination{}; }
    std::string kind() const override { return "scripted"; }

    // How many completions were asked for (tests: a strict replay asks none).
    std::uint64_t calls() const noexcept { return calls_.load(); }
    script const& played() const noexcept { return script_; }

private:
    script script_;
    std::atomic<std::uint64_t> calls_{0};
};

}  // namespace airlock::service
