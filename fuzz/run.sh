#!/usr/bin/env bash
# Builds every fuzz target and runs each for a bounded time, starting from the seeds in
# fuzz/seeds/ (copied into a scratch corpus, so a run never changes the tree). A failing
# input fails the run; libFuzzer leaves it under fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh [SECONDS_PER_TARGET]    (default 20; needs the nightly toolchain and cargo-fuzz)
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-20}"
targets=(request_body query_token stream_fragments model_files safetensors_header)
# No sanitizer and the dev profile: the build is many minutes shorter (the dependency tree,
# candle among it, is compiled unoptimised and without debug info), safe Rust gives
# AddressSanitizer nothing to find, and the targets assert their own invariants (a panic
# is a failure either way). A longer local run may prefer the release build:
# `cargo +nightly fuzz run --sanitizer none TARGET`.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if ! cargo +nightly fuzz build --dev --sanitizer none >"$scratch/build.log" 2>&1; then
    grep -v '^ *Compiling' "$scratch/build.log" | tail -n 40 >&2
    echo "fuzz: the targets did not build" >&2
    exit 1
fi
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    if [[ -d "seeds/$t" ]]; then cp seeds/"$t"/* "$scratch/$t/"; fi
    log="$scratch/$t.log"
    if ! cargo +nightly fuzz run --dev --sanitizer none "$t" "$scratch/$t" -- \
        -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz: $t failed; its input is under fuzz/artifacts/$t/" >&2
        exit 1
    fi
    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
    echo "fuzz: $t: $runs inputs in ${secs}s, no failure"
done
