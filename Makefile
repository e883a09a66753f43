# fsbench — see README.md. Targets that mount or attach loop devices need root.
GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/fsbench/fsbench/internal/cli.Version=$(VERSION)
BUILD    := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: all build cross test test-slow test-slow-full test-lava unit lint test-faults fuzz bench bench-simcard bench-calibration bench-probe bench-class bench-confine bench-reference bench-powercut bench-powercut-reference bench-capacity bench-aging bench-endurance bench-nand bench-farm run clean docs-check

all: build

build:
	$(BUILD) -o fsbench ./cmd/fsbench

# The binary must also build for the boards it is meant for.
cross:
	@GOOS=linux GOARCH=arm GOARM=7 $(BUILD) -o dist/fsbench-linux-armv7 ./cmd/fsbench
	@GOOS=linux GOARCH=arm64 $(BUILD) -o dist/fsbench-linux-arm64 ./cmd/fsbench
	@echo "cross: dist/fsbench-linux-armv7 and dist/fsbench-linux-arm64 built"

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	@$(GO) vet ./...
	@echo "lint: gofmt and go vet clean"

# The limits on production code: no function above cyclomatic complexity 30 (gocyclo, fetched at
# a fixed version and not a dependency of fsbench) or longer than 100 lines. Not part of make
# test (it reads the code, it does not test it); CI (.ci/run) runs it.
.PHONY: complexity
complexity:
	$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 30 -ignore '_test\.go$$' .
	$(GO) run ./tools/funclen -max 100 .

# The README's test command, at most 5 minutes on a quiet 2-core machine with a warm module
# cache: gofmt and vet, the cross-builds, short fuzzing, then every test but the slow ones. As
# root that includes the integration tests that make, mount and measure real filesystems on loop
# devices over image files; without root those skip. The tests that boot an emulator (the QEMU
# guest, an emulated ARM board) or start a farm (labgrid, LAVA) call internal/testkit/slow's Need
# and are left out: make test-slow runs them. go test runs with -json through tools/testsum: each
# package's result as go test prints it, then the slow tests left out (one line, with the command
# that runs them), every test that was skipped (and why), ran a reduced version of itself, or
# failed, and how long make test took from its start; the whole verbose output is in $(TESTLOG).
TESTLOG ?= test.log
test: FUZZTIME = 3s
test: TEST_STARTED := $(shell date +%s)
test: lint cross fuzz
	@$(GO) run ./tools/testsum -started $(TEST_STARTED) -log $(TESTLOG) -- $(GO) test -json -count=1 -timeout 15m ./...

# Everything make test leaves out: the tests that boot an emulator or start a farm (the QEMU
# guest, the emulated ARM boards, the labgrid farms, LAVA's dispatcher), found by
# tools/slowtests (every test that calls slow.Need, directly or through a helper of its
# package), with FSBENCH_SLOW=1. They take turns on one emulator lock (internal/testkit/emulock).
# Needs scripts/setup-board-debian.sh, setup-labgrid.sh and setup-lava-debian.sh; each test that
# lacks its part says so. About 35 minutes on a 2-core machine; make test-slow-full, the reduced
# ones whole, about 45 (55 tests: 43m36s at load 3 to 4).
SLOWLOG ?= test-slow.log
SLOW    ?= 1
test-slow:
	@FSBENCH_SLOW=$(SLOW) $(GO) run ./tools/testsum -log $(SLOWLOG) -- $(GO) test -json -count=1 -timeout 80m \
		-run "$$($(GO) run ./tools/slowtests -run)" $$($(GO) run ./tools/slowtests -packages)

# The slow tests whole: a few of them run a smaller version of themselves in make test-slow (its
# summary lists them and what they leave out), so that CI, which runs it, stays within its time.
test-slow-full:
	$(MAKE) test-slow SLOW=full SLOWLOG=test-slow-full.log

# fsbench's LAVA test definition (contrib/lava) run by LAVA's own dispatcher (lava-run, Debian's
# lava-dispatcher: scripts/setup-lava-debian.sh) on the emulated arm64 board: three jobs, the
# cells as LAVA test cases, a second job on the same board and failing runs reported as
# failures. make test-slow runs it too.
test-lava:
	FSBENCH_SLOW=1 $(GO) test -count=1 -run 'TestLAVA' -v -timeout 60m ./internal/testkit/lavalab/

# Every fuzz target (func Fuzz... in a _test.go file) for FUZZTIME each, one after the other,
# quietly (a target's output is printed when it fails):
# go test -fuzz takes a single target per run. The targets are found with grep and sed, so that
# a new one is fuzzed without being listed here (not with go test -list, which would build every
# package's tests once more: 5 s of fuzzing each would then cost more than 2 min on a cold
# cache). A failure stops the loop and make; the failing input is then in the package's
# testdata/fuzz/<FuzzName>/.
#
# FUZZMINIMIZETIME is 0: the fuzzer does not shrink the inputs that reach new code. It would
# otherwise spend up to 60 s on each (an input of 1.5 KB is a million tries), reporting no
# progress meanwhile: that was FuzzParse's "0 execs/s after 12 s". Crashers are kept as found;
# run with FUZZMINIMIZETIME=60s to have them shrunk.
FUZZTIME         ?= 10s
FUZZMINIMIZETIME ?= 0
FUZZPARALLEL     ?= 2
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" at the end
# of -fuzztime on a busy machine, having found nothing (golang/go#75804, fixed in Go 1.27). Such a
# run, with no "Failing input written", is run once more; any other failure stops make.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; n=0; \
	for pkg in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$pkg/*_test.go); do \
			for try in 1 2; do \
				if $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) \
					-parallel $(FUZZPARALLEL) $$pkg >"$$log" 2>&1; then n=$$((n+1)); break; fi; \
				echo "fuzz: $$pkg $$t for $(FUZZTIME):"; cat "$$log"; \
				if [ $$try = 1 ] && grep -q 'context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
					echo "fuzz: $$t: the fuzz coordinator's deadline race (golang/go#75804), no failing input: once more"; \
				else exit 1; fi; \
			done; \
		done; \
	done; \
	echo "fuzz: $$n targets, $(FUZZTIME) each: no failing input"

# Every way a run can be given bad input, be killed or find its disk full, replayed through the
# binary (the simulated card and the QEMU guest included); prints a table of the cases. make test
# runs the quick ones. Then the jail's own cases: every escape route tried from inside it, the
# system call filter (open_tree_attr, a call newer than the filter), a daemon's jail, the property
# tests (a few hundred generated words per mkfs tool, and per filesystem's mount, run in the jail
# beside a decoy device), raw NAND's image builders, a card swapped between repetitions, UUIDs
# read from superblocks, results directories' markers; then in the QEMU guest the share's mapping
# (mknod in the guest makes nothing on the host) and the jail's tests on f2fs, vfat and nilfs2.
# pipefail: the grep must not hide a failed test.
test-faults: SHELL := /bin/bash
test-faults: .SHELLFLAGS := -o pipefail -c
test-faults:
	FSBENCH_SLOW=1 FSBENCH_FAULTS=full $(GO) test -count=1 -run 'TestFaults' -v -timeout 40m ./cmd/fsbench/ | grep -v '^=== RUN\|^    --- \(PASS\|SKIP\)'
	$(GO) test -count=1 -run 'TestEscapes|TestFilter|TestMount|TestStartDaemon|TestConfinedWords|TestConfinedIssueWords|TestConfinedMountWords|TestConfinedFlashMakers|TestFingerprintSwap|TestReadFSID|TestClaim|TestDeviceSwappedBetweenRepetitions' -v -timeout 30m ./internal/confine/ ./internal/fs/ ./internal/blockdev/ ./internal/session/ ./internal/runner/ | grep -v '^=== RUN\|^    --- \(PASS\|SKIP\)\|confine_property_test.go:[0-9]*: mk'
	FSBENCH_SLOW=1 $(GO) test -count=1 -run 'TestGuestShareMknod|TestGuestConfined' -v -timeout 40m ./internal/vm/ | grep -v '^=== RUN\|^    --- \(PASS\|SKIP\)'

# Unit tests only (no root needed, nothing mounted).
unit:
	$(GO) test -count=1 -short ./...

# Ratios of fsbench's read/write tests against tar and cp on the same tree, and fsbench's peak
# RSS during a default run, which fails above its goal of 32 MiB (beside it, the largest
# process of the run, as /usr/bin/time counts it). It prints figures measured in the same run.
bench: build
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestCopyReadVsTools|TestBenchPeakRSS' -v -timeout 60m ./internal/dataset/ ./cmd/fsbench/

# The simulated card against fio, dd and flashbench, measured vs modelled figures side by side,
# with the host's share beside each (server time, late replies, path offset, load average) and
# a final "N of M figures within 15 %" line. Timing figures on a busy machine say more about
# the machine: run it when `cat /proc/loadavg` is low, and more than once.
# flashbench is not packaged in a working form: build it from its public source and point
# FLASHBENCH at the binary (the flashbench part is skipped without it).
bench-simcard:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchSimcardVsTools' -v -timeout 30m ./internal/simcard/

# Every card profile against the published measurements of the real cards it stands for
# (docs/cards.md): fsbench's randio suite and probe on each simulated card at time scale 1, each
# target with fsbench's figure, the card's own, the host's share, the tolerance and the verdict.
# A few minutes; figures taken under load say so (load average beside each).
bench-calibration:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchCalibration' -v -timeout 40m ./internal/testkit/calibration/

# fsbench probe's alignment test and read/write sweeps against flashbench -a and dd on simulated
# cards (FLASHBENCH as for bench-simcard).
bench-probe:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchProbeVsTools' -v -timeout 20m ./internal/probe/

# The SD application class three ways on every simulated card, side by side: fsbench probe
# --class on the raw device (queue depth 1 and 32), fsbench's randio suite at queue depth 32
# through ext4, and Raspberry Pi's own card test (agnostics' data/sd_bench.fio, fio with
# libaio at iodepth 32, judged by its data/sdtest.sh) through ext4. agnostics is not part of
# fsbench: clone github.com/raspberrypi-ui/agnostics outside this repository and point
# AGNOSTICS at it (the fio part is skipped, saying so, without it). Root, fio, about 30 min.
bench-class:
	FSBENCH_BENCH=1 AGNOSTICS=$(AGNOSTICS) $(GO) test -count=1 -run 'TestBenchClass' -v -timeout 90m ./internal/probe/ 2>&1 | grep -E '^CLASS|FAIL|^ok|--- '

# What the jail costs: mkfs (vfat, ext4) and mount (ext4) jailed vs not, in alternating pairs on
# one loop device, medians and the pairwise ratio with its spread.
bench-confine:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchConfine' -v -timeout 20m ./internal/fs/ | grep -E '^BENCH|FAIL|ok'

# fsbench's bonnie and randio suites against bonnie++ and fio on the same filesystem, with the
# commands used (needs the Debian packages bonnie++ and fio). Each suite's package has its half;
# -p 1 runs them one after the other, as two benchmarks at once would disturb each other.
bench-reference:
	FSBENCH_BENCH=1 $(GO) test -p 1 -count=1 -run 'TestReferenceBench' -v -timeout 90m ./internal/suites/bonnie/ ./internal/suites/randio/

# fsbench probe --capacity against f3probe (Debian package f3) on every counterfeit and genuine
# simulated card: verdict, usable size, bytes the card saw written, card and wall time (root).
bench-capacity:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchCapacity' -v -timeout 60m ./internal/capacity/ 2>&1 | grep -E 'bench-capacity|FAIL|^ok'

# Power cuts per minute for ext4 on a 256 MiB simulated card (sd-typical), 50 cuts: printed, not
# asserted. The issue's aim is >= 30 per minute on a 2-core machine.
bench-powercut:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchPowerCut' -v -timeout 20m ./internal/runner/ 2>&1 | grep -E 'bench-powercut|FAIL|^ok'

# Aging (--age year-of-updates: updates to 80 % full, one capacity of churn) of a 512 MiB image
# for ext4, xfs and btrfs, fresh against aged: the summary's aging column is the time the aging
# took (the issue's aim: at most 5 minutes on a quiet machine). Needs root.
bench-aging: build
	./fsbench run --age year-of-updates --variants ext4,xfs,btrfs --size 512M -n 1 --tests write,read -o fsbench-results/bench-aging --force
	cat /proc/loadavg

# Issue 40's acceptance run: ext4 and btrfs on the host and f2fs in the QEMU guest, each card
# (a 256 MiB sd-typical whose blocks last a hundredth of their endurance) run to its end,
# ENDURANCE_N cards per filesystem (default 5: the U test needs 4 a side), then merged into one
# report with the verdict and the prediction's check. On a 2-core machine with other jobs beside
# it, 21 minutes on the host for 4 cards a side and 32 minutes in the guest (TCG) for 3
# (docs/endurance.md). Needs root, FUSE and scripts/setup-vm-debian.sh.
ENDURANCE_N ?= 5
ENDURANCE_ARGS = --suite endurance --workload bootlin --size 256M --endurance-scale 0.01 --time-scale 0.02 -n $(ENDURANCE_N)
bench-endurance: build
	./fsbench run $(ENDURANCE_ARGS) --target simcard:sd-typical --variants ext4,btrfs -o fsbench-results/bench-endurance/host --force
	./fsbench run $(ENDURANCE_ARGS) --target vm:simcard:sd-typical --variants f2fs -o fsbench-results/bench-endurance/guest --force
	./fsbench merge -o fsbench-results/bench-endurance/all fsbench-results/bench-endurance/host fsbench-results/bench-endurance/guest
	cat /proc/loadavg

# The powercut suite's cuts against an independent reference, in the QEMU guest (not CI): the
# same workload recorded by the simulated card and by dm-log-writes, and at flush-point cuts
# fsbench's card and xfstests' replay-log's replay checked alike; the verdicts must agree on
# >= 95 %. REPLAY_LOG: a static replay-log, built from xfstests' src/log-writes outside this
# tree (gcc -static -o replay-log replay-log.c log-writes.c; see docs/powercut.md).
bench-powercut-reference:
	CGO_ENABLED=0 FSBENCH_BENCH=1 REPLAY_LOG=$(REPLAY_LOG) $(GO) test -count=1 -run 'TestBenchPowerCutReference' -v -timeout 5h ./internal/suites/powercut/ 2>&1 | grep -E 'bench-powercut-reference|reference |FAIL|^ok'

# The Free Electrons 2010 study in full: jffs2, ubifs and squashfs on UBI at 8, 32, 128 and
# 252 MiB on a simulated NAND chip in a QEMU guest, 3 repetitions (CI runs 8 MiB once).
bench-nand: build
	./fsbench run --target vm --suite free-electrons -n 3 -o fsbench-results/bench-nand

# A labgrid farm of real parts on 127.0.0.1 (coordinator, exporter, one sshd "board" per place,
# a simplerest power relay) and one `fsbench run --target labgrid:p1,labgrid:p2,...` over a bigger
# matrix on every place side by side; prints the farm's start-up time, the farm run, each place's
# own time and their sum. FARM_PLACES (default 3) and FARM_ARGS (fsbench run flags) change it.
# Needs scripts/setup-labgrid.sh (labgrid in /opt/fsbench-labgrid, openssh-server).
# FARM_BOARDS=emulated: emulated arm64 boards (QEMU, scripts/setup-board-debian.sh) behind the
# places, powered by the relay; it also runs TestLabgridEmulatedFarm (one run on two boards,
# a power cycle, Ctrl-C and kill -9 mid-run).
bench-farm:
	FSBENCH_SLOW=1 FSBENCH_BENCH=1 FARM_BOARDS="$(FARM_BOARDS)" FARM_PLACES="$(FARM_PLACES)" FARM_ARGS="$(FARM_ARGS)" $(GO) test -count=1 \
		-run '$(if $(filter emulated,$(FARM_BOARDS)),TestLabgridEmulatedFarm|)TestBenchFarm' -v -timeout 60m ./cmd/fsbench/ | grep -v '^=== RUN'

# Every command README.md, ARCHITECTURE.md and docs/*.md show, run for real in a scratch
# directory (image files and the simulated card only, never a disk of this machine; as root, like
# make test), or, where it needs a real card, a board, a farm or hours, checked as far as it can
# be (its flags, its make target, its test) and listed with the reason and the test that runs
# its kind. About 2 min. make test runs the quick form (tools/internal/docscheck's TestDocuments).
docs-check:
	$(GO) run ./tools/docscheck

run: build
	./fsbench run

clean:
	rm -rf fsbench dist
