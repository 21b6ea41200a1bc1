// `make package`: the Debian package CPack builds from this build tree, unpacked with dpkg-deb
// into a temporary directory, runs: the packaged binary prints its version and accepts the
// packaged configuration, and the systemd unit is hardened and passes systemd-analyze verify.
#include "tests/support/child_process.hpp"
#include "tests/support/file_text.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace airlock::testing;
using namespace std::chrono_literals;

namespace {

// Builds the package into `out` with the build tree's CPack configuration; returns the .deb.
std::filesystem::path build_package(std::filesystem::path const& out) {
    auto r = run_command({"cpack", "--config", std::string(AIRLOCK_BUILD_DIR) + "/CPackConfig.cmake", "-G", "DEB", "-B",
                          out.string()},
                         300s);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    for (auto const& e : std::filesystem::directory_iterator(out))
        if (e.path().extension() == ".deb") return e.path();
    FAIL("cpack made no .deb");
    return {};
}

}  // namespace

TEST_CASE("the Debian package unpacks to a binary that runs, a default configuration that checks, and a hardened unit") {
    temp_dir work{"airlock-package"};
    auto deb = build_package(work.path() / "out");
    auto root = work.path() / "root";
    auto x = run_command({"dpkg-deb", "-x", deb.string(), root.string()});
    INFO(x.err);
    REQUIRE(x.exit_code == 0);

    auto binary = root / "usr/bin/airlock";
    auto version = run_command({binary.string(), "--version"});
    CHECK(version.exit_code == 0);
    CHECK(version.out == "airlock " AIRLOCK_VERSION "\n");

    // The configuration the package installs checks with nothing else present.
    auto config = root / "etc/airlock/airlock.yaml";
    auto check = run_command({binary.string(), "check", config.string()});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
    CHECK_THAT(check.out, Catch::Contains("ok config"));
    CHECK_THAT(check.out, Catch::Contains("/var/lib/airlock/journal"));

    auto info = run_command({"dpkg-deb", "-f", deb.string(), "Package", "Version", "Depends"});
    CHECK_THAT(info.out, Catch::Contains("Package: airlock"));
    CHECK_THAT(info.out, Catch::Contains("Version: " AIRLOCK_VERSION));
    CHECK_THAT(info.out, Catch::Contains("libssl3"));  // from dpkg-shlibdeps
    auto control = run_command({"dpkg-deb", "-I", deb.string(), "conffiles"});
    CHECK_THAT(control.out, Catch::Contains("/etc/airlock/airlock.yaml"));

    auto unit_path = root / "usr/lib/systemd/system/airlock.service";
    auto unit = file_text(unit_path);
    for (auto const* line : {"DynamicUser=yes", "StateDirectory=airlock", "ProtectSystem=strict", "NoNewPrivileges=yes",
                             "ExecStart=/usr/bin/airlock serve --config /etc/airlock/airlock.yaml",
                             "ExecReload=/bin/kill -HUP $MAINPID"})
        CHECK_THAT(unit, Catch::Contains(line));

    if (std::filesystem::exists("/usr/bin/systemd-analyze")) {
        // verify wants ExecStart's binary to exist: a copy of the unit names the unpacked one.
        auto text = unit;
        for (auto at = text.find("/usr/bin/airlock"); at != std::string::npos; at = text.find("/usr/bin/airlock", at + 1)) {
            text.replace(at, std::string("/usr/bin/airlock").size(), binary.string());
            at += binary.string().size() - 1;
        }
        auto copy = work.path() / "airlock.service";
        std::ofstream(copy) << text;
        auto verify = run_command({"/usr/bin/systemd-analyze", "verify", "--man=no", copy.string()});
        INFO(verify.out << verify.err);
        CHECK(verify.exit_code == 0);
        CHECK(verify.err.find("Unknown") == std::string::npos);
    }
}
