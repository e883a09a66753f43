package lavalab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// The dispatcher's results records, as lava-run 2023.01 logs them: a measurement is tagged.
func TestReadResults(t *testing.T) {
	log := `{"dt": "2026-11-26T04:38:17.389240", "lvl": "info", "msg": "validate duration: 0.04"}
{"dt": "2026-11-26T05:01:02.1", "lvl": "results", "msg": {"case": "fsbench_ext4_mkfs", "definition": "0_fsbench", "duration": ! "0.10", "measurement": ! "0.0220575", "result": "pass", "units": "seconds"}}
{"dt": "2026-11-26T05:01:02.5", "lvl": "results", "msg": {"case": "git-repo-action", "definition": "lava", "duration": "0.05", "extra": {"commit": "034115ab", "path": "fsbench.yaml"}, "level": "1.1.3.1", "namespace": "common", "result": "pass"}}
{"dt": "2026-11-26T05:01:03.1", "lvl": "results", "msg": {"case": "fsbench-run", "definition": "0_fsbench", "result": "fail"}}
{"dt": "2026-11-26T05:01:04.1", "lvl": "target", "msg": "lava-test-case x --result pass: ! \"no\""}
{"dt": "2026-11-26T05:01:05.1", "lvl": "results", "msg": {"case": "job", "definition": "lava", "result": "pass"}}
`
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := r.read(p); err != nil {
		t.Fatal(err)
	}
	want := []Case{{Definition: "0_fsbench", Name: "fsbench_ext4_mkfs", Result: "pass", Measurement: "0.0220575", Units: "seconds"},
		{Definition: "0_fsbench", Name: "fsbench-run", Result: "fail"}}
	if r.Job != "pass" || len(r.Cases) != len(want) {
		t.Fatalf("job %q, cases %+v", r.Job, r.Cases)
	}
	for i := range want {
		if r.Cases[i] != want[i] {
			t.Errorf("case %d: %+v, want %+v", i, r.Cases[i], want[i])
		}
	}
}

// fsbench's LAVA test definition run by LAVA's own dispatcher on the emulated arm64 board,
// three jobs on the same device (the same SD card and the same board disk, where each run keeps
// its results):
//  1. ext4: every cell is a passing test case with its median, and fsbench-run passes;
//  2. the next job on the board, whose disk holds the first job's results: ext2, its own cells
//     only, none of the first job's (each run has a results directory of its own); then ext2
//     again with every test limited to 1 ms: its cells fail, fsbench-run fails, nothing passes;
//  3. fsbench fails (a device the board does not have: fsbench refuses) and fsbench does not
//     run at all (no such binary): fsbench-run fails in both, and no cell passes.
func TestLAVAJob(t *testing.T) {
	slow.Need(t, "runs LAVA jobs on an emulated board")
	if os.Geteuid() != 0 {
		t.Skip("needs root: LAVA's dispatcher keeps its jobs in /var/lib/lava, the board's cache is in /var/cache")
	}
	if _, err := exec.LookPath("lava-run"); err != nil {
		t.Skip("lava-run not found: install Debian's lava-dispatcher (scripts/setup-lava-debian.sh)")
	}
	arch, err := board.LookupArch("arm64")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{arch.QEMU, "mkfs.ext4", "git"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found (scripts/setup-board-debian.sh installs it)", p)
		}
	}
	emulock.Hold(t)
	ctx := context.Background()
	dir := t.TempDir()
	bin := buildFSBench(t, dir, "arm64")
	repo := definitionsRepo(t, dir)
	dev, err := NewDevice(ctx, Options{Dir: filepath.Join(dir, "lab"), Arch: arch, FSBench: bin, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	tests := []string{"mkfs", "mount", "write"}
	params := func(variant string) map[string]string {
		return map[string]string{"DEVICE": board.Device, "VARIANTS": variant, "SUITE": "bootlin", "TESTS": strings.Join(tests, ","),
			"REPETITIONS": "1", "EXTRA": "--dataset-size 2M", "RESULTS": DataDir + "/results"}
	}
	run := func(j Job) *Result {
		t.Helper()
		r, err := dev.Run(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("job %q: %s, %d test cases, LAVA's verdict %s", j.Name, r.Took.Round(time.Second), len(r.Cases), r.Job)
		for _, c := range r.Cases {
			t.Logf("  %s %s %s %s %s", c.Definition, c.Name, c.Result, c.Measurement, c.Units)
		}
		if r.Job != "pass" {
			t.Fatalf("LAVA did not complete the job: %s; the log ends:\n%s", r.Error, r.Tail(60))
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("job %q: the dispatcher's log ends:\n%s", j.Name, r.Tail(60))
			}
		})
		return r
	}
	def := func(name string, p map[string]string) Definition {
		return Definition{Repository: repo, Path: "fsbench.yaml", Name: name, Params: p}
	}

	first := run(Job{Name: "fsbench ext4", Definitions: []Definition{def("fsbench", params("ext4"))}})
	checkCells(t, first, "ext4", tests, "ext2")

	timedOut := params("ext2")
	timedOut["EXTRA"] += " --timeout 1ms"
	second := run(Job{Name: "fsbench ext2, the next job on the board", Definitions: []Definition{def("fsbench", params("ext2")), def("fsbench-fails", timedOut)}})
	checkCells(t, second, "ext2", tests, "ext4")
	if c, ok := second.Lookup("fsbench-fails", "fsbench_ext2_mkfs"); !ok || c.Result != "fail" {
		t.Errorf("a cell that timed out: %+v (found %v), want fail", c, ok)
	}
	checkFailed(t, second, "fsbench-fails")
	// The three runs are on the board's disk, each in its own directory.
	runs := boardRuns(t, dev)
	if len(runs) != 3 {
		t.Errorf("the board keeps %d runs, want 3 (one per definition run): %v", len(runs), runs)
	}

	refused := params("ext4")
	refused["DEVICE"] = "/dev/mmcblk7"
	missing := params("ext4")
	missing["FSBENCH"] = "/usr/bin/fsbench-missing"
	third := run(Job{Name: "fsbench fails", Definitions: []Definition{def("fsbench", refused), def("no-fsbench", missing)}})
	checkFailed(t, third, "fsbench")
	checkFailed(t, third, "no-fsbench")
}

// checkFailed checks that the definition def of r failed: fsbench-run fails, no case passes.
func checkFailed(t *testing.T, r *Result, def string) {
	t.Helper()
	if c, ok := r.Lookup(def, "fsbench-run"); !ok || c.Result != "fail" {
		t.Errorf("definition %s: fsbench-run %+v (found %v), want fail", def, c, ok)
	}
	for _, c := range r.Cases {
		if strings.HasSuffix(c.Definition, "_"+def) && c.Result == "pass" {
			t.Errorf("a failed run reports a passing case: %+v", c)
		}
	}
}

// checkCells checks that r holds a passing case with a measurement for each test of variant,
// fsbench-run passing, and no case of the variant other.
func checkCells(t *testing.T, r *Result, variant string, tests []string, other string) {
	t.Helper()
	for _, test := range tests {
		name := "fsbench_" + variant + "_" + test
		c, ok := r.Lookup("fsbench", name)
		if !ok || c.Result != "pass" || c.Measurement == "" || c.Units == "" {
			t.Errorf("case %s: %+v (found %v), want pass with a measurement", name, c, ok)
		}
	}
	if c, ok := r.Lookup("fsbench", "fsbench-run"); !ok || c.Result != "pass" {
		t.Errorf("fsbench-run: %+v (found %v), want pass", c, ok)
	}
	for _, c := range r.Cases {
		if strings.HasPrefix(c.Name, "fsbench_"+other+"_") {
			t.Errorf("a case of another run: %+v", c)
		}
	}
}

// buildFSBench builds this tree's fsbench for the board.
func buildFSBench(t *testing.T, dir, arch string) string {
	t.Helper()
	bin := filepath.Join(dir, "fsbench-linux-"+arch)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/fsbench/fsbench/cmd/fsbench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// definitionsRepo makes a git repository holding this tree's test definition, as a lab keeps
// its definitions.
func definitionsRepo(t *testing.T, dir string) string {
	t.Helper()
	repo := filepath.Join(dir, "definitions")
	def, err := os.ReadFile(filepath.Join("..", "..", "..", "contrib", "lava", "fsbench.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "fsbench.yaml"), def, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "fsbench.yaml"},
		{"-c", "user.name=fsbench", "-c", "user.email=fsbench@example.org", "commit", "-q", "-m", "fsbench's test definition"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// boardRuns lists the runs on the board's disk. LAVA ends a job by switching the board off, so
// the disk's journal may hold the last writes: a copy of it is mounted here, which replays its
// journal and leaves the board's own disk as the board left it.
func boardRuns(t *testing.T, d *Device) []string {
	t.Helper()
	mnt, cp := t.TempDir(), filepath.Join(t.TempDir(), "data.img")
	if out, err := exec.Command("cp", "--sparse=always", d.Data, cp).CombinedOutput(); err != nil {
		t.Fatalf("copying the board's disk: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", cp, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mounting the board's disk: %v: %s", err, out)
	}
	defer func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	}()
	dirs, _ := filepath.Glob(filepath.Join(mnt, "results", "run-*"))
	var runs []string
	for _, d := range dirs {
		r, err := results.Load(d)
		if err != nil {
			t.Errorf("run %s: %v", filepath.Base(d), err)
			continue
		}
		var names []string
		for _, v := range r.Variants {
			names = append(names, v.Name)
		}
		runs = append(runs, filepath.Base(d)+": "+strings.Join(names, ","))
	}
	return runs
}

// The device dictionary and the job definition lava-run reads (lava-run --validate accepts
// them: TestLAVAJob runs them).
func TestDictionaryAndJob(t *testing.T) {
	arch, err := board.LookupArch("arm64")
	if err != nil {
		t.Fatal(err)
	}
	d := &Device{Dir: "/lab", Dictionary: "/lab/device.yaml", Kernel: "/cache/vmlinuz-6.1.0-56-arm64", Ramdisk: "/lab/ramdisk.cpio",
		Card: "/lab/card.img", Data: "/lab/data.img", Arch: arch}
	golden.Check(t, "device.yaml", []byte(d.dictionary()))
	job, err := d.definition(Job{Name: "fsbench ext4", Definitions: []Definition{
		{Repository: "/lab/definitions", Path: "fsbench.yaml", Name: "fsbench", Params: map[string]string{"VARIANTS": "ext4", "DEVICE": "/dev/mmcblk0", "EXTRA": `--dataset-size "2M"`}},
		{Repository: "/lab/definitions", Path: "fsbench.yaml", Name: "no-fsbench"}}})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "job.yaml", []byte(job))
}
