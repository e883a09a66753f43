# fsbench — see README.md. Targets that mount or attach loop devices need root.
GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/fsbench/fsbench/internal/cli.Version=$(VERSION)
BUILD    := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: all build cross test unit lint bench bench-simcard bench-probe bench-reference bench-nand run clean

all: build

build:
	$(BUILD) -o fsbench ./cmd/fsbench

# The binary must also build for the boards it is meant for.
cross:
	GOOS=linux GOARCH=arm GOARM=7 $(BUILD) -o dist/fsbench-linux-armv7 ./cmd/fsbench
	GOOS=linux GOARCH=arm64 $(BUILD) -o dist/fsbench-linux-arm64 ./cmd/fsbench

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

# The README's test command. As root it includes the integration tests that make, mount and
# measure real filesystems on loop devices over image files; without root those skip.
test: lint cross
	$(GO) test -count=1 -timeout 40m ./...

# Unit tests only (no root needed, nothing mounted).
unit:
	$(GO) test -count=1 -short ./...

# Ratios of fsbench's read/write tests against tar and cp on the same tree, and fsbench's peak
# RSS during a default run. Not a test: it prints figures measured in the same run.
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

# fsbench probe's alignment test and read/write sweeps against flashbench -a and dd on simulated
# cards (FLASHBENCH as for bench-simcard).
bench-probe:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestBenchProbeVsTools' -v -timeout 20m ./internal/probe/

# fsbench's bonnie and randio suites against bonnie++ and fio on the same filesystem, with the
# commands used (needs the Debian packages bonnie++ and fio).
bench-reference:
	FSBENCH_BENCH=1 $(GO) test -count=1 -run 'TestReferenceBench' -v -timeout 30m ./internal/suite/

# The Free Electrons 2010 study in full: jffs2, ubifs and squashfs on UBI at 8, 32, 128 and
# 252 MiB on a simulated NAND chip in a QEMU guest, 3 repetitions (CI runs 8 MiB once).
bench-nand: build
	./fsbench run --target vm --suite free-electrons -n 3 -o fsbench-results/bench-nand

run: build
	./fsbench run

clean:
	rm -rf fsbench dist
