#pragma once
// A fresh directory under the system temp dir, removed with everything in it when the test ends.

#include <filesystem>
#include <random>
#include <string>

namespace airlock::testing {

class temp_dir {
public:
    explicit temp_dir(std::string const& prefix = "airlock-test") {
        std::random_device rd;
        for (int attempt = 0; attempt < 100; ++attempt) {
            auto p = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(rd()));
            if (std::filesystem::create_directory(p)) {
                path_ = p;
                return;
            }
        }
        throw std::runtime_error("cannot create a temporary directory");
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(temp_dir const&) = delete;
    temp_dir& operator=(temp_dir const&) = delete;

    std::filesystem::path const& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace airlock::testing
