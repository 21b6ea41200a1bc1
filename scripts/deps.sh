#!/usr/bin/env bash
# Installs what airlock needs to build and test: Debian packages and the pinned npm peers.
# Idempotent and silent when everything is already present; prints only what it installs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

debian_packages=(
  g++ make cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev liblmdb-dev lmdb-utils catch2 libyaml-cpp-dev libspdlog-dev libjemalloc-dev
  nginx-light prometheus ccache curl
  clang-14 libfuzzer-14-dev
  postgresql-15 libpq-dev
)
# The machine image may ship its own Node.js; Debian's is only brought in when there is no npm at all.
command -v npm >/dev/null 2>&1 || debian_packages+=(nodejs npm)

missing=()
for p in "${debian_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "deps: installing Debian packages: ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm peers: reinstalled only when the lockfile changed since the last install.
peers="$here/tests/peers"
stamp="$peers/node_modules/.airlock-lock.sha256"
want=$(sha256sum "$peers/package-lock.json" | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "deps: installing npm peers from tests/peers/package-lock.json"
  (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
fi
