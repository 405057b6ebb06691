#!/usr/bin/env bash
# Comparative benchmarks of groupconc and its peers.
#
# Checks first that every peer enforces the limits it claims (TestLimits),
# then runs ROUNDS rounds. Each round runs every peer, in an order that
# rotates from round to round, through every workload, one process per
# (peer, workload) with -count=1, so that no peer always runs first or
# last and no run inherits another's heap or goroutine-stack statistics.
# The raw output goes to $OUT; the benchstat tables to stdout.
#
# Needs only Go (and the module proxy, for the peers and benchstat).
#
#   ROUNDS=6 OUT=results.txt ./run.sh    (QUICK=1: tiny benchtimes, a smoke test)
set -euo pipefail
cd "$(dirname "$0")"

ROUNDS=${ROUNDS:-6}
OUT=${OUT:-results.txt} # *.txt here is git-ignored
# benchstat's go.mod asks for Go 1.26; an older go fetches that toolchain.
BENCHSTAT=${BENCHSTAT:-golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}

peers=(raw semmap errgroup pond ants conc groupconc groupconc-fair groupconc-user)
workloads=(W1Unlimited W2Groups1000 W3HotGroup W3HotGroupPriorities W3QueuedMemory W4Utilisation W5CrossGroupOrder W6LosslessStream)
declare -A benchtime=(
	[W1Unlimited]=1s          # batches of 1 000 trivial tasks
	[W2Groups1000]=1s         # batches of 4 000 trivial tasks
	[W3HotGroup]=1s           # batches of 100 000 queued trivial tasks
	[W3HotGroupPriorities]=16x # the same, groupconc alone, five shapes of priority in turn
	[W3QueuedMemory]=2x       # 100 000 queued tasks per iteration
	[W4Utilisation]=20x       # 4 000 tasks of 1 ms per iteration
	[W5CrossGroupOrder]=20x   # 1 001 tasks per iteration
	[W6LosslessStream]=1x     # streams of 100 000 and 1 000 000 tasks
)
if [[ ${QUICK:-} == 1 ]]; then # a smoke test of the script, not a measurement
	benchtime=([W1Unlimited]=50ms [W2Groups1000]=50ms [W3HotGroup]=50ms [W3HotGroupPriorities]=1x
		[W3QueuedMemory]=1x [W4Utilisation]=2x [W5CrossGroupOrder]=2x [W6LosslessStream]=1x)
fi

start=$(date +%s)
echo "== machine"
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
go version
echo "groupconc: $(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C .. status --porcelain --untracked-files=no -- ':!benchmarks' 2>/dev/null | grep -q . && echo ' (+ uncommitted changes)' || true)"

echo "== go vet"
go vet ./...

echo "== TestLimits: every peer enforces the limits it claims"
go test -count=1 ./... # no -race: it needs cgo and a C compiler
echo "What each peer cannot express (skipped there and in the workloads):"
go test -count=1 -run TestLimits -v ./... |
	awk '/^=== RUN/ { split($3, p, "/"); at = p[2] " " p[3]; next }
	     /^    [a-z_]+_test\.go:[0-9]+: / { sub(/^ +[^ ]+ /, ""); print "  " at ": " $0 }' |
	sort -u

bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .

echo "== $ROUNDS rounds -> $OUT"
: >"$OUT"
n=${#peers[@]}
for ((round = 0; round < ROUNDS; round++)); do
	order=()
	for ((i = 0; i < n; i++)); do
		order+=("${peers[$(((i + round) % n))]}")
	done
	echo "round $((round + 1))/$ROUNDS: ${order[*]}"
	for peer in "${order[@]}"; do
		for w in "${workloads[@]}"; do
			"$bin" -test.run '^$' -test.bench "^Benchmark${w}\$/^peer=${peer}\$" \
				-test.benchtime "${benchtime[$w]}" -test.count 1 >>"$OUT"
		done
	done
	# The least an executor can do with five priorities, beside W3HotGroupPriorities.
	"$bin" -test.run '^$' -test.bench '^BenchmarkW3HotPrioritiesFloor$' \
		-test.benchtime "${benchtime[W3HotGroupPriorities]}" -test.count 1 >>"$OUT"
done

units='.unit:(ns/task OR cpu-ns/task OR allocs/task OR B/task OR bytes/queued-task OR utilisation OR a-before-b)'
stat() { go run "$BENCHSTAT" "$@"; }

echo
echo "== all peers (median ± 95% confidence interval over $ROUNDS rounds)"
stat -filter "$units" -row ".name,/peer@(${peers[*]})" "$OUT"

echo
echo "== W1: groupconc vs raw goroutines"
stat -filter "$units .name:W1Unlimited /peer:(raw OR groupconc)" -col '/peer@(raw groupconc)' "$OUT"

echo
echo "== W1-W3 as user code calls it: groupconc-user vs raw goroutines (W1) and pond (W2, W3HotGroup)"
stat -filter "$units .name:W1Unlimited /peer:(raw OR groupconc-user)" -col '/peer@(raw groupconc-user)' "$OUT"
stat -filter "$units .name:(W2Groups1000 OR W3HotGroup) /peer:(pond OR groupconc-user)" -col '/peer@(pond groupconc-user)' "$OUT"

echo
echo "== W2-W5: groupconc vs the semaphore map"
stat -filter "$units .name:(W2Groups1000 OR W3HotGroup OR W3QueuedMemory OR W4Utilisation OR W5CrossGroupOrder) /peer:(semmap OR groupconc)" \
	-col '/peer@(semmap groupconc)' "$OUT"

echo
echo "== W1-W5: groupconc under IsolationFairShare vs IsolationOff"
stat -filter "$units /peer:(groupconc OR groupconc-fair)" -col '/peer@(groupconc groupconc-fair)' "$OUT"

echo
echo "== W3 hot, groupconc alone: each shape of priority against one priority, measured in one process"
stat -filter '.name:W3HotGroupPriorities .unit:(one-cpu-ns/task OR control/one OR sorted/one OR turn/one OR runs/one)' "$OUT"
echo "and for floorLine, the least an executor can do with five priorities (floor.go):"
stat -filter '.name:W3HotPrioritiesFloor .unit:(one-cpu-ns/task OR control/one OR sorted/one OR turn/one OR runs/one)' "$OUT"

echo
echo "== W6: a lossless stream, the producer held at each peer's bound"
stat -filter '.name:W6LosslessStream .unit:(ns/task OR cpu-ns/task OR allocs/task OR peak-heap-B OR peak-live-B OR peak-stack-B OR peak-goroutines OR peak-queued)' \
	-row /peer,/task -col /tasks "$OUT"

echo
echo "done in $(($(date +%s) - start)) s"
