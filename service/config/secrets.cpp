#include "service/config/secrets.hpp"

#include "core/secrets.hpp"
#include "core/sha256.hpp"
#include "core/strict_yaml.hpp"
#include "service/config/keys.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace airlock::service {

namespace fs = std::filesystem;

std::string key_id_of(std::string_view public_key_raw) { return derived_key_id(public_key_raw); }

namespace {

std::string show_path(fs::path const& p) { return core::yaml::in_quotes(p.string()); }

// Writes a new file with `mode`; refuses to replace one that appeared meanwhile.
core::result<void> write_new_file(fs::path const& p, std::string_view contents, mode_t mode, std::string const& what) {
    std::error_code ec;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    if (ec)
        return core::make_error("file_unwritable",
                                what + ": cannot create " + show_path(p.parent_path()) + " (" + ec.message() + ")");
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return core::make_error("file_unwritable",
                                what + ": cannot create " + show_path(p) + " (" + std::strerror(errno) + ")");
    std::size_t done = 0;
    while (done < contents.size()) {
        auto n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            auto err = std::string(std::strerror(errno));
            ::close(fd);
            ::unlink(p.c_str());
            return core::make_error("file_unwritable", what + ": cannot write " + show_path(p) + " (" + err + ")");
        }
        done += static_cast<std::size_t>(n);
    }
    // A key that vanishes in a crash after airlock signed with it would leave signatures nobody can
    // check; the fsync makes "created" mean "on disk".
    bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) return core::make_error("file_unwritable", what + ": cannot sync " + show_path(p));
    return {};
}

core::result<std::string> new_ed25519_pem() {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (!key) return core::make_error("keygen_failed", "OpenSSL could not generate an Ed25519 key");
    BIO* bio = BIO_new(BIO_s_mem());
    bool ok = bio && PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::string pem;
    if (ok) {
        char* data = nullptr;
        long len = BIO_get_mem_data(bio, &data);
        pem.assign(data, static_cast<std::size_t>(len));
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    if (!ok) return core::make_error("keygen_failed", "OpenSSL could not write the Ed25519 key as PEM");
    return pem;
}

// The base64 lines of a PEM file: any of them in an output would be a piece of the private key.
void register_pem_lines(fs::path const& file) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.starts_with("-----")) core::secrets::add(line);
    }
}

}  // namespace

fs::path public_key_path(fs::path const& key_file) {
    auto pub = key_file;
    pub.replace_extension(".pub");
    return pub;
}

core::result<void> create_missing_secrets(config& c) {
    if (c.signing && !c.signing->signer && c.signing->create_if_missing) {
        auto& s = *c.signing;
        auto pem = new_ed25519_pem();
        if (!pem) return pem.error();
        if (auto w = write_new_file(s.key_file, *pem, 0600, "signing.key_file"); !w) return w.error();
        auto signer = core::provenance_signer::from_pem(s.kid.empty() ? "unnamed" : s.kid, *pem);
        if (!signer) return signer.error();
        if (s.kid.empty()) {
            s.kid = key_id_of(signer->public_key_raw());
            signer = core::provenance_signer::from_pem(s.kid, *pem);
            if (!signer) return signer.error();
        }
        // Beside it, the public key the way `airlock keygen` names it, for upstreams that verify.
        auto pub = public_key_path(s.key_file);
        std::error_code ec;
        if (!fs::exists(pub, ec)) {
            if (auto w = write_new_file(pub, signer->public_key_pem(), 0644, "signing public key"); !w)
                return w.error();
        }
        s.signer = std::make_shared<core::provenance_signer const>(std::move(*signer));
    }
    for (auto& p : c.principals) {
        if (!p.token.empty() || !p.create_if_missing || !p.token_file) continue;
        unsigned char bytes[32];
        if (RAND_bytes(bytes, sizeof bytes) != 1)
            return core::make_error("keygen_failed", "OpenSSL could not produce random bytes for a token");
        auto token = core::to_hex(bytes, sizeof bytes);
        if (auto w = write_new_file(*p.token_file, token + "\n", 0600, "principal " + p.name + " token_file"); !w)
            return w.error();
        p.token = std::move(token);
    }
    return {};
}

void register_secrets(config const& c) {
    for (auto const& p : c.principals) core::secrets::add(p.token);
    for (auto const& s : c.secrets) core::secrets::add(s);
    for (auto const& p : c.providers) core::secrets::add(p.api_key);
    core::secrets::add(c.metrics.token);
    if (c.signing) register_pem_lines(c.signing->key_file);
    if (c.server.tls) register_pem_lines(c.server.tls->key_file);
}

}  // namespace airlock::service
