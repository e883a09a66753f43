package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// TestFaults replays the ways a run can be given bad input, be killed, or find its disk full,
// through the binary, as a user (or a dropped SSH session) does it, and checks each ends with
// the documented exit code, its results as documented, and nothing left behind: no mount, loop
// device, ledger, trace instance, child process or work directory. It prints a table of the
// cases. `make test` runs the quick ones; `make test-faults` (FSBENCH_FAULTS=full) runs them all,
// the simulated card and the QEMU guest included. FSBENCH_FAULTS_BINARY replays them against
// another build (an older release, to see which cases it fails).
func TestFaults(t *testing.T) {
	needRoot(t)
	full := os.Getenv("FSBENCH_FAULTS") == "full"
	if b := os.Getenv("FSBENCH_FAULTS_BINARY"); b != "" {
		defer func(old string) { binary = old }(binary)
		binary = b
	}
	var mu sync.Mutex
	type row struct {
		name, want, got string
		ok              bool
	}
	var table []row
	t.Cleanup(func() {
		passed := 0
		var b strings.Builder
		fmt.Fprintf(&b, "\n%-52s %-10s %-10s %s\n", "case", "expected", "got", "result")
		for _, r := range table {
			res := "FAILED"
			if r.ok {
				res, passed = "passed", passed+1
			}
			fmt.Fprintf(&b, "%-52s %-10s %-10s %s\n", r.name, r.want, r.got, res)
		}
		fmt.Fprintf(&b, "%d cases tried, %d passed\n", len(table), passed)
		fmt.Print(b.String())
	})
	all, skipped := faultCases(), 0
	for _, fc := range all {
		if fc.full && !full {
			skipped++
		}
	}
	if skipped > 0 {
		t.Logf("reduced: %d of %d cases, the quick ones (FSBENCH_FAULTS=full, make test-faults, runs them all)", len(all)-skipped, len(all))
	}
	for _, fc := range all {
		if fc.full && !full {
			continue
		}
		t.Run(fc.name, func(t *testing.T) {
			if fc.need != nil {
				if why := fc.need(); why != "" {
					t.Skip(why)
				}
			}
			dir := t.TempDir()
			res := fc.run(t, dir)
			if res.code != fc.want {
				t.Errorf("exit code %d, want %d; output:\n%s", res.code, fc.want, tail(res.out, 40))
			}
			if fc.check != nil {
				fc.check(t, dir, res)
			}
			for _, l := range leftovers(dir, res.pids) {
				t.Errorf("left behind: %s", l)
			}
			for _, x := range res.extra {
				for _, l := range leftovers(x, nil) {
					if l != "mounted: "+x {
						t.Errorf("left behind: %s", l)
					}
				}
			}
			mu.Lock()
			table = append(table, row{fc.name, strconv.Itoa(fc.want), strconv.Itoa(res.code), !t.Failed()})
			mu.Unlock()
		})
	}
}

// result is how one case's fsbench ended.
type result struct {
	code int
	out  string // stdout and stderr
	pids []int  // the fsbench processes the case started
	took time.Duration
	// extra are more directories the case had fsbench work in (a filesystem of the test's own,
	// whose own mount point is not a leftover).
	extra []string
}

type faultCase struct {
	name  string
	full  bool          // only with FSBENCH_FAULTS=full
	need  func() string // why the case cannot run here, or ""
	want  int
	run   func(t *testing.T, dir string) result
	check func(t *testing.T, dir string, r result)
}

// small is a real run that takes seconds: one variant, small data.
var small = []string{"run", "--size", "320M", "-n", "1", "--variants", "ext4", "--dataset-size", "8M", "--video-size", "8M"}

// longer runs long enough to be interrupted in the middle of a test.
var longer = []string{"run", "--size", "320M", "-n", "3", "--variants", "ext4,ext2", "--dataset-size", "16M", "--video-size", "24M"}

func args(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

// fsb runs fsbench to completion.
func fsb(t *testing.T, a ...string) result {
	t.Helper()
	p := start(t, a...)
	return p.wait(t)
}

// proc is a running fsbench.
type proc struct {
	cmd     *exec.Cmd
	out     *syncBuf
	started time.Time
	done    chan struct{}
	err     error
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, a ...string) *proc {
	t.Helper()
	return startIn(t, "", a...)
}

// startIn starts fsbench with dir as its working directory ("": the test's).
func startIn(t *testing.T, dir string, a ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, a...), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Its own process group: the signals of the test reach fsbench alone, as a kill would.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(10 * time.Minute):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("fsbench did not end within 10 minutes:\n%s", tail(p.out.String(), 40))
	}
	code := 0
	if ee, ok := p.err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if p.err != nil {
		t.Fatal(p.err)
	}
	return result{code: code, out: p.out.String(), pids: []int{p.cmd.Process.Pid}, took: time.Since(p.started)}
}

// waitFor waits until cond holds (or fsbench ended, or a minute passed).
func (p *proc) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("fsbench ended before %s:\n%s", what, tail(p.out.String(), 40))
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %s within 3 minutes:\n%s", what, tail(p.out.String(), 40))
}

func (p *proc) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// measured is a condition: results.json in dir holds at least n measurements.
func measured(dir string, n int) func() bool {
	return func() bool { return countMeasurements(filepath.Join(dir, "results.json")) >= n }
}

// leftovers lists what a finished case left: mounts under dir, loop devices over files under
// dir, ledgers and trace instances of its fsbench processes, processes still working in dir
// (a card server, QEMU), the guest's initramfs directory, and work directories.
func leftovers(dir string, pids []int) []string {
	var out []string
	for _, m := range mountsUnder(dir) {
		out = append(out, "mounted: "+m)
	}
	for _, l := range loopsOver(dir) {
		out = append(out, "loop device "+l)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/run/fsbench/%d.json", pid)); err == nil {
			out = append(out, fmt.Sprintf("ledger of pid %d", pid))
		}
		if left, _ := filepath.Glob(fmt.Sprintf("/sys/kernel/tracing/instances/fsbench-%d-*", pid)); len(left) > 0 {
			out = append(out, fmt.Sprintf("trace instances %v", left))
		}
		if left, _ := filepath.Glob(fmt.Sprintf("%s/fsbench-vm-%d-*", os.TempDir(), pid)); len(left) > 0 {
			out = append(out, fmt.Sprintf("guest scratch %v", left))
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(dir)) {
			out = append(out, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	works, _ := filepath.Glob(filepath.Join(dir, "*", ".work-*"))
	vms, _ := filepath.Glob(filepath.Join(dir, "*", ".vm"))
	for _, w := range append(works, vms...) {
		out = append(out, "work directory "+w)
	}
	return out
}

func sum(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func status(dir string) string {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	json.Unmarshal(b, &r)
	return r.Status
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, tail(out, 30))
		}
	}
}

func absent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s exists; the refused run should have left nothing", path)
	}
}

// tmpfs mounts a tmpfs of size bytes on a new directory of the test's own (not under the case's
// directory, whose mounts are leftovers), unmounted when the test ends.
func tmpfs(t *testing.T, size uint64) string {
	t.Helper()
	mp := t.TempDir()
	if err := unix.Mount("tmpfs", mp, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatal(err)
	}
	mp, _ = filepath.EvalSymlinks(mp)
	t.Cleanup(func() { unix.Unmount(mp, unix.MNT_DETACH) })
	return mp
}

// decoyWords is a case of a configuration whose mkfs words (DECOY standing for a decoy loop
// device's path, OUTSIDE for a file outside the run, card for a symlink to the decoy in the
// directory fsbench runs in) must be refused at once, naming the line, with the decoy's sha256
// unchanged and nothing written outside.
func decoyWords(name, fsName, words string, must ...string) faultCase {
	return faultCase{name: name, want: 2,
		run: func(t *testing.T, dir string) result {
			dev, same := decoy(t)
			outside := filepath.Join(t.TempDir(), "undo")
			expand := strings.NewReplacer("DECOY", dev, "OUTSIDE", outside)
			cwd := t.TempDir()
			if err := os.Symlink(dev, filepath.Join(cwd, "card")); err != nil {
				t.Fatal(err)
			}
			cfg := writeFile(t, filepath.Join(dir, "m.toml"), fmt.Sprintf("size = \"320M\"\n[[variant]]\nfs = %q\nmkfs = %q\n", fsName, expand.Replace(words)))
			r := fsbIn(t, cwd, "run", "-c", cfg, "-o", filepath.Join(dir, "res"))
			if !same() {
				t.Errorf("the decoy %s changed", dev)
			}
			absent(t, outside)
			for i, m := range must {
				must[i] = expand.Replace(m)
			}
			return r
		},
		check: func(t *testing.T, dir string, r result) {
			mustContain(t, r.out, append([]string{"m.toml:4:"}, must...)...)
			absent(t, filepath.Join(dir, "res"))
		}}
}

// decoyMount is a case of a configuration whose ext4 mount options name the decoy (NODE: a node
// of it made on the root filesystem, outside /dev; NUMBER: its device number, as ext4's
// journal_dev= takes it): refused at once (exit 2), naming the line, the decoy byte-identical.
func decoyMount(name, opts string, must ...string) faultCase {
	return faultCase{name: name, want: 2,
		run: func(t *testing.T, dir string) result {
			dev, same := decoy(t)
			var st unix.Stat_t
			if err := unix.Stat(dev, &st); err != nil {
				t.Fatal(err)
			}
			node := filepath.Join(t.TempDir(), "journal")
			if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
				t.Fatal(err)
			}
			// ext4's journal_dev= is new_encode_dev(): minor's low 8 bits, major, minor's rest.
			maj, min := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
			number := strconv.FormatUint(uint64(min&0xff|maj<<8|(min&^0xff)<<12), 10)
			expand := strings.NewReplacer("NODE", node, "NUMBER", number)
			cfg := writeFile(t, filepath.Join(dir, "m.toml"), fmt.Sprintf("size = \"320M\"\n[[variant]]\nfs = \"ext4\"\nmount = %q\n", expand.Replace(opts)))
			r := fsb(t, "run", "-c", cfg, "-o", filepath.Join(dir, "res"))
			if !same() {
				t.Errorf("the decoy %s changed", dev)
			}
			for i, m := range must {
				must[i] = expand.Replace(m)
			}
			return r
		},
		check: func(t *testing.T, dir string, r result) {
			mustContain(t, r.out, append([]string{"m.toml:4:"}, must...)...)
			absent(t, filepath.Join(dir, "res"))
		}}
}

// decoyUUID is a configuration whose ext4 mkfs words copy the UUID of another device (the decoy,
// which carries an ext4 of its own): refused before anything is made (exit 2), naming the device,
// the decoy byte-identical.
func decoyUUID() faultCase {
	const uuid = "6a1c7d2e-0b3f-4e59-8a77-3c2d1e0f9b84"
	var dev string
	return faultCase{name: "ext4 mkfs -U <UUID of another device>", want: 2,
		run: func(t *testing.T, dir string) result {
			dev = testdev.Loop(t, 64<<20, "")
			if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-U", uuid, "-L", "users-data", dev).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			before := testdev.Sum(t, dev)
			cfg := writeFile(t, filepath.Join(dir, "m.toml"), "size = \"320M\"\n[[variant]]\nfs = \"ext4\"\nmkfs = \"-U "+strings.ToUpper(uuid)+"\"\n")
			r := fsb(t, "run", "-c", cfg, "-o", filepath.Join(dir, "res"))
			if testdev.Sum(t, dev) != before {
				t.Errorf("the decoy %s changed", dev)
			}
			return r
		},
		check: func(t *testing.T, dir string, r result) {
			mustContain(t, r.out, "already carries", dev+" (ext4)")
			absent(t, filepath.Join(dir, "res"))
		}}
}

// fsbIn runs fsbench to completion in dir.
func fsbIn(t *testing.T, dir string, a ...string) result {
	t.Helper()
	return startIn(t, dir, a...).wait(t)
}

// decoy is a loop device of the test's own over a file of a known pattern; same reports whether
// its sha256 is still what it was.
func decoy(t *testing.T) (dev string, same func() bool) {
	t.Helper()
	dev = testdev.Loop(t, 256<<20, "the user's data ")
	before := testdev.Sum(t, dev)
	return dev, func() bool { return testdev.Sum(t, dev) == before }
}

// victim is a loop device of the test's own, standing for a disk fsbench must never touch: its
// content is a known pattern, checked afterwards.
func victim(t *testing.T) (dev string, intact func() bool) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "victim.img")
	pattern := bytes.Repeat([]byte("the user's data "), 1<<16) // 1 MiB
	if err := os.WriteFile(img, pattern, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	return dev, func() bool {
		f, err := os.Open(dev)
		if err != nil {
			return false
		}
		defer f.Close()
		b := make([]byte, len(pattern))
		if _, err := io.ReadFull(f, b); err != nil {
			return false
		}
		return bytes.Equal(b, pattern)
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// config writes a configuration file into dir.
func config(t *testing.T, dir, content string) string {
	t.Helper()
	return writeFile(t, filepath.Join(dir, "m.toml"), content)
}

// marked makes dir look like an earlier fsbench run's results directory.
func marked(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".fsbench"), `{"fsbench": "results directory", "created": "2026-01-01T00:00:00Z", "pid": 1, "started": "2026-01-01T00:00:00Z"}`)
	writeFile(t, filepath.Join(dir, "results.json"), `{"schema": "fsbench.results/v1", "status": "complete", "measurements": []}`)
}

func needGuestSkip() string {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return "qemu-system-x86_64 not installed"
	}
	return ""
}

func needFUSE() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	return ""
}

func faultCases() []faultCase {
	refused := func(name string, want int, a func(t *testing.T, dir string) []string, must ...string) faultCase {
		return faultCase{name: name, want: want,
			run: func(t *testing.T, dir string) result { return fsb(t, a(t, dir)...) },
			check: func(t *testing.T, dir string, r result) {
				mustContain(t, r.out, must...)
				absent(t, filepath.Join(dir, "res"))
				if r.took > 30*time.Second {
					t.Errorf("refused after %v: the refusal must come before anything is staged", r.took.Round(time.Second))
				}
			}}
	}
	out := func(dir string) string { return filepath.Join(dir, "res") }
	return []faultCase{
		// 1. A config's mkfs words naming another device or a file outside the run, in the
		// spellings the tools accept: each refused (exit 2), the decoy byte-identical.
		decoyWords("mkfs words name another device", "btrfs", "-m single DECOY", "is not an option"),
		decoyWords("f2fs -fc/dev/X (a cluster with the value attached)", "f2fs", "-fcDECOY", "option -c is refused"),
		decoyWords("xfs -fllogdev=SYMLINK in the working directory", "xfs", "-fllogdev=card", "-l logdev=card is refused"),
		decoyWords("ext4 -FJdevice=/dev/X", "ext4", "-FJdevice=DECOY", "-J device=DECOY is refused"),
		decoyWords("ext4 -Fz/path (an undo file outside the run)", "ext4", "-FzOUTSIDE", "option -z is refused"),
		decoyWords("a positional device word", "ext4", "DECOY", `"DECOY" is not an option`),
		decoyWords("mksquashfs -p (a pseudo file's command)", "squashfs", `-p 'x f 644 0 0 dd if=/dev/zero of=DECOY'`, "run a program"),
		// Raw NAND's image builders take no words (TestConfinedFlashMakers runs them through
		// the jail with a device word, which is what the jail alone holds).
		decoyWords("jffs2 mkfs -o /dev/X", "jffs2", "-o DECOY", "jffs2 takes no mkfs words"),
		decoyWords("ubifs mkfs -x zlib", "ubifs", "-x zlib", "ubifs takes no mkfs words"),
		decoyMount("ext4 mount journal_path= a node of the decoy outside /dev", "journal_path=NODE", "journal_path=NODE is refused"),
		decoyMount("ext4 mount journal_dev= the decoy's number", "journal_dev=NUMBER", "journal_dev=NUMBER is refused"),
		decoyUUID(),
		refused("mount option names another device", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "-c", config(t, dir, "[[variant]]\nfs = \"btrfs\"\nmount = \"device=/dev/loop4\"\n"))
		}, "m.toml:3:", "device=/dev/loop4 is refused"),
		// 2. Results directories.
		{name: "-o on an earlier run is refused", want: 2,
			run: func(t *testing.T, dir string) result {
				marked(t, out(dir))
				before := sum(filepath.Join(out(dir), "results.json"))
				r := fsb(t, args(small, "-o", out(dir))...)
				if sum(filepath.Join(out(dir), "results.json")) != before {
					t.Error("the earlier run's results.json was changed")
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				mustContain(t, r.out, "holds an earlier fsbench run", "--force")
			}},
		{name: "-o on a directory of the user's is refused", want: 2,
			run: func(t *testing.T, dir string) result {
				keep := writeFile(t, filepath.Join(out(dir), "thesis.tex"), "mine")
				r := fsb(t, args(small, "-o", out(dir), "--force")...)
				if b, _ := os.ReadFile(keep); string(b) != "mine" {
					t.Error("the user's file was changed")
				}
				absent(t, filepath.Join(out(dir), ".fsbench"))
				return r
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, "files fsbench did not write") }},
		{name: "run -o on a user's file and an empty .fsbench", want: 2,
			run: func(t *testing.T, dir string) result {
				keep := writeFile(t, filepath.Join(out(dir), "thesis.tex"), "mine")
				writeFile(t, filepath.Join(out(dir), ".fsbench"), "")
				r := fsb(t, args(small, "-o", out(dir))...)
				if b, _ := os.ReadFile(keep); string(b) != "mine" {
					t.Error("the user's file was changed")
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, ".fsbench is empty") }},
		{name: "run -o through a .fsbench linked to a user's file", want: 2,
			run: func(t *testing.T, dir string) result {
				keep := writeFile(t, filepath.Join(t.TempDir(), "thesis.tex"), "mine")
				if err := os.MkdirAll(out(dir), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(keep, filepath.Join(out(dir), ".fsbench")); err != nil {
					t.Fatal(err)
				}
				r := fsb(t, args(small, "-o", out(dir))...)
				if b, _ := os.ReadFile(keep); string(b) != "mine" {
					t.Error("the file the link leads to was changed")
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, "symbolic link") }},
		{name: "merge -o on a user's file and an empty .fsbench", want: 2,
			run: func(t *testing.T, dir string) result {
				var runs []string
				for _, name := range []string{"run1", "run2"} {
					run := filepath.Join(dir, name)
					if r := fsb(t, args(small, "-o", run, "--tests", "mkfs")...); r.code != 0 {
						t.Fatalf("a run to merge: exit %d:\n%s", r.code, tail(r.out, 20))
					}
					runs = append(runs, run)
				}
				keep := writeFile(t, filepath.Join(out(dir), "thesis.tex"), "mine")
				writeFile(t, filepath.Join(out(dir), ".fsbench"), "")
				r := fsb(t, append([]string{"merge", "-o", out(dir)}, runs...)...)
				if b, _ := os.ReadFile(keep); string(b) != "mine" {
					t.Error("the user's file was changed")
				}
				if b, _ := os.ReadFile(filepath.Join(out(dir), ".fsbench")); len(b) != 0 {
					t.Errorf("the empty .fsbench was written: %q", b)
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, ".fsbench is empty") }},
		{name: "--force never deletes what fsbench did not write", want: 0,
			run: func(t *testing.T, dir string) result {
				marked(t, out(dir))
				keep := writeFile(t, filepath.Join(out(dir), ".work", "notes.txt"), "mine")
				r := fsb(t, args(small, "-o", out(dir), "--force", "--tests", "mkfs")...)
				if b, _ := os.ReadFile(keep); string(b) != "mine" {
					t.Errorf("%s was removed or changed", keep)
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				if s := status(out(dir)); s != "complete" {
					t.Errorf("status %q", s)
				}
			}},
		{name: "a second run on the same -o fails at once", want: 130,
			run: func(t *testing.T, dir string) result {
				a := start(t, args(longer, "-o", out(dir))...)
				a.waitFor(t, "a first measurement", measured(out(dir), 1))
				b := fsb(t, args(small, "-o", out(dir), "--force")...)
				if b.code != 1 || !strings.Contains(b.out, "is in use by another fsbench run") || b.took > 10*time.Second {
					t.Errorf("second run: exit %d after %v:\n%s", b.code, b.took, tail(b.out, 10))
				}
				a.signal(t, syscall.SIGINT)
				r := a.wait(t)
				r.pids = append(r.pids, b.pids...)
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				if s := status(out(dir)); s != "interrupted" || countMeasurements(filepath.Join(out(dir), "results.json")) < 1 {
					t.Errorf("the first run's results: status %q", s)
				}
			}},
		// 3. Signals of a dropped SSH session and a closed pipe.
		{name: "SIGHUP mid-test", want: 129, run: signalled(syscall.SIGHUP, 3), check: interrupted},
		{name: "SIGTERM mid-test", want: 143, run: signalled(syscall.SIGTERM, 3), check: interrupted},
		{name: "SIGINT while staging the dataset", want: 130, full: true,
			run: func(t *testing.T, dir string) result {
				p := start(t, args(longer, "-o", out(dir), "--dataset-size", "200M")...)
				p.waitFor(t, "the staging", func() bool { return strings.Contains(strings.Join(mountsUnder(dir), " "), "/data-") })
				p.signal(t, syscall.SIGINT)
				return p.wait(t)
			}},
		{name: "output pipe closed (fsbench run 2>&1 | head)", want: 141,
			run: func(t *testing.T, dir string) result {
				cmd := exec.Command(binary, args(longer, "-o", out(dir))...)
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stdout, cmd.Stderr = pw, pw
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				pw.Close()
				// Read until a few measurements were logged, then go away as head does.
				buf := make([]byte, 1<<16)
				var got []byte
				for !measured(out(dir), 2)() {
					n, err := pr.Read(buf)
					got = append(got, buf[:n]...)
					if err != nil {
						break
					}
				}
				pr.Close()
				err = cmd.Wait()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				return result{code: code, out: string(got), pids: []int{cmd.Process.Pid}, took: time.Since(start)}
			},
			check: interrupted},
		// 4. A killed run is undone by fsbench cleanup, the simulated card included.
		{name: "SIGKILL on the simulated card, then fsbench cleanup", want: 0, need: needFUSE,
			run: func(t *testing.T, dir string) result {
				p := start(t, "run", "--target", "simcard:sd-typical", "--time-scale", "0.01", "--size", "256M", "-n", "3",
					"--variants", "ext4", "--dataset-size", "8M", "--video-size", "8M", "-o", out(dir))
				p.waitFor(t, "a measurement", measured(out(dir), 3))
				p.signal(t, syscall.SIGKILL)
				p.wait(t)
				if len(mountsUnder(dir)) == 0 {
					t.Fatal("test set-up: the killed run left nothing mounted")
				}
				// The card's loop device got mq-deadline; the ledger holds the scheduler to put back.
				var led struct {
					Schedulers []struct{ Dev, Was string }
				}
				b, err := os.ReadFile(fmt.Sprintf("/run/fsbench/%d.json", p.cmd.Process.Pid))
				if err == nil {
					err = json.Unmarshal(b, &led)
				}
				if err != nil || len(led.Schedulers) == 0 {
					t.Fatalf("the killed run's ledger records no I/O scheduler to put back (%v): %s", err, b)
				}
				r := fsb(t, "cleanup")
				r.pids = append(r.pids, p.cmd.Process.Pid)
				for _, s := range led.Schedulers {
					if _, err := os.Stat(filepath.Join("/sys/block", s.Dev, "loop", "backing_file")); err == nil {
						continue // another test took the freed number meanwhile: its scheduler is that test's
					}
					cur, _ := os.ReadFile(filepath.Join("/sys/block", s.Dev, "queue", "scheduler"))
					if !strings.Contains(string(cur), "["+s.Was+"]") {
						t.Errorf("after cleanup %s's scheduler is %q, want %s back", s.Dev, strings.TrimSpace(string(cur)), s.Was)
					}
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				mustContain(t, r.out, "simulated card server", "removed directory", "put back the I/O scheduler")
				if left, _ := filepath.Glob(filepath.Join(out(dir), ".work-*", "simcard.data")); len(left) > 0 {
					t.Errorf("the card's data file is left: %v", left)
				}
			}},
		{name: "SIGKILL mid-test, then fsbench cleanup", want: 0, full: true,
			run: func(t *testing.T, dir string) result {
				p := start(t, args(longer, "-o", out(dir))...)
				p.waitFor(t, "a measurement", measured(out(dir), 3))
				p.signal(t, syscall.SIGKILL)
				p.wait(t)
				r := fsb(t, "cleanup")
				r.pids = append(r.pids, p.cmd.Process.Pid)
				return r
			}},
		// 5. Values refused before anything is staged (exit 2, no results directory).
		refused("size of a petabyte", 2, func(t *testing.T, dir string) []string { return args(small, "-o", out(dir), "--size", "1P") }, "free"),
		refused("scheduler with a shell command", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--scheduler", "cfq; rm -rf /")
		}, "not a scheduler name"),
		refused("missing dataset", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--dataset", filepath.Join(dir, "nope"))
		}, "--dataset", "not a directory"),
		refused("image in a read-only place", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--image", "/proc/fsbench.img")
		}, "--image"),
		refused("--time-scale NaN", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--target", "simcard:sd-typical", "--time-scale", "NaN")
		}, "--time-scale"),
		refused("--time-scale Inf", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--target", "simcard:sd-typical", "--time-scale", "Inf")
		}, "--time-scale"),
		refused("a mount option the kernel refuses", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "-c", config(t, dir,
				"[[variant]]\nfs = \"ext4\"\nmount = \"data=bogus\"\n"))
		}, "variant ext4 (configuration line 1)", "data=bogus"),
		refused("an mkfs option the tool refuses", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "-c", config(t, dir,
				"[[variant]]\nfs = \"ext4\"\nmkfs = \"-O no_such_feature\"\n"))
		}, "variant ext4", "mkfs.ext4"),
		refused("a dataset larger than the device", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--size", "256M", "--dataset", "/usr")
		}, "cannot fit"),
		refused("a matrix of millions of variants", 2, func(t *testing.T, dir string) []string {
			var l []string
			for i := range 100 {
				l = append(l, fmt.Sprintf("%q", fmt.Sprintf("commit=%d", i+1)))
			}
			list := "[" + strings.Join(l, ", ") + "]"
			return args(small, "-o", out(dir), "-c", config(t, dir,
				"[[variant]]\nfs = [\"ext4\", \"ext2\", \"ext3\", \"xfs\"]\nmkfs = "+list+"\nmount = "+list+"\n"))
		}, "m.toml:1:"),
		refused("a config typo names the line", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "-c", config(t, dir, "size = \"512M\"\n\n[[variant]]\nfs = \"ext4\"\nmout = \"noatime\"\n"))
		}, "m.toml:5:"),
		// 6. Full disks.
		refused("image larger than its filesystem's free space", 2, func(t *testing.T, dir string) []string {
			return args(small, "-o", out(dir), "--image", filepath.Join(tmpfs(t, 64<<20), "img"))
		}, "has 64 MiB free"),
		{name: "the image's filesystem fills during the run", want: 1,
			run: func(t *testing.T, dir string) result {
				fsdir := tmpfs(t, 400<<20)
				p := start(t, args(longer, "-o", out(dir), "--image", filepath.Join(fsdir, "img"))...)
				p.waitFor(t, "a measurement", measured(out(dir), 2))
				// Someone else fills the disk the image lives on.
				exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(fsdir, "filler"), "bs=1M").Run()
				r := p.wait(t)
				r.extra = []string{fsdir}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				mustContain(t, r.out, "the filesystem holding the image", "is full")
				if s := status(out(dir)); s != "failed" {
					t.Errorf("status %q, want failed", s)
				}
			}},
		{name: "results on a full filesystem", want: 1,
			run: func(t *testing.T, dir string) result {
				fsdir := tmpfs(t, 8<<20)
				p := start(t, args(longer, "-o", filepath.Join(fsdir, "res"), "--image", filepath.Join(dir, "img"))...)
				p.waitFor(t, "a measurement", measured(filepath.Join(fsdir, "res"), 2))
				exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(fsdir, "filler"), "bs=64k").Run()
				r := p.wait(t)
				r.extra = []string{fsdir}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				if strings.Contains(r.out, "results: ") {
					t.Errorf("a run whose results could not be written says where they are:\n%s", tail(r.out, 10))
				}
			}},
		// Device refusals.
		{name: "a mounted device is refused", want: 2,
			run: func(t *testing.T, dir string) result {
				dev, intact := victim(t)
				if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
					t.Fatalf("%v %s", err, out)
				}
				mnt := t.TempDir()
				if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
					t.Fatal(err)
				}
				defer unix.Unmount(mnt, 0)
				_ = intact
				return fsb(t, args(small, "-o", out(dir), "--target", "device:"+dev, "--destroy", dev)...)
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, "refusing to use", "mounted") }},
		{name: "--destroy must name the same device", want: 2,
			run: func(t *testing.T, dir string) result {
				dev, intact := victim(t)
				r := fsb(t, args(small, "-o", out(dir), "--target", "device:"+dev, "--destroy", "/dev/null")...)
				if !intact() {
					t.Errorf("%s was written to", dev)
				}
				return r
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, "refusing to use") }},
		{name: "a results file that is not one", want: 1,
			run: func(t *testing.T, dir string) result {
				return fsb(t, "report", writeFile(t, filepath.Join(dir, "results.json"), "{\"schema\": \"something/else\"}"))
			},
			check: func(t *testing.T, dir string, r result) { mustContain(t, r.out, "not an fsbench results file") }},
		// A board over SSH (a fake ssh client that runs the board's side on this machine).
		{name: "Ctrl-C on the host during a board run", want: 130,
			run: func(t *testing.T, dir string) result {
				p := startBoard(t, dir)
				p.waitFor(t, "board measurements", func() bool { return boardMeasured(dir) >= 3 })
				p.signal(t, syscall.SIGINT)
				r := p.wait(t)
				r.extra = []string{filepath.Join(dir, "board")}
				return r
			},
			check: func(t *testing.T, dir string, r result) {
				interrupted(t, dir, r)
				mustContain(t, r.out, "the board stopped its run and cleaned up")
			}},
		{name: "the host dies during a board run (the link drops)", want: 0,
			run: func(t *testing.T, dir string) result {
				p := startBoard(t, dir)
				p.waitFor(t, "board measurements", func() bool { return boardMeasured(dir) >= 3 })
				p.signal(t, syscall.SIGKILL)
				r := p.wait(t)
				// The board's fsbench notices the end of its input and stops in order.
				deadline := time.Now().Add(2 * time.Minute)
				for time.Now().Before(deadline) && len(leftovers(filepath.Join(dir, "board"), nil)) > 0 {
					time.Sleep(200 * time.Millisecond)
				}
				if r.code != 137 {
					t.Errorf("the host's exit %d, want 137 (SIGKILL)", r.code)
				}
				// Then the host's own record of the killed run, as after any SIGKILL.
				c := fsb(t, "cleanup")
				c.pids = append(c.pids, r.pids...)
				c.extra = []string{filepath.Join(dir, "board")}
				return c
			},
			check: func(t *testing.T, dir string, r result) {
				runs, _ := filepath.Glob(filepath.Join(dir, "board", "runs", "*", "res"))
				if len(runs) != 1 || status(runs[0]) != "interrupted" {
					t.Errorf("the board's results: %v, status %q", runs, status(runs[0]))
				}
			}},
		// 7. The QEMU guest.
		{name: "SIGINT during a guest run", want: 130, full: true, need: needGuestSkip,
			run: func(t *testing.T, dir string) result {
				p := start(t, "run", "--target", "vm", "--size", "256M", "-n", "2", "--variants", "ext4", "--dataset-size", "8M",
					"--video-size", "8M", "-o", out(dir))
				p.waitFor(t, "a measurement", measured(out(dir), 2))
				p.signal(t, syscall.SIGINT)
				return p.wait(t)
			},
			check: interrupted},
		{name: "SIGKILL during a guest run; fsbench cleanup", want: 0, full: true, need: needGuestSkip,
			run: func(t *testing.T, dir string) result {
				p := start(t, "run", "--target", "vm", "--size", "256M", "-n", "2", "--variants", "ext4", "--dataset-size", "8M",
					"--video-size", "8M", "-o", out(dir))
				p.waitFor(t, "the guest", func() bool { return strings.Contains(p.out.String(), "booting a guest") })
				time.Sleep(2 * time.Second)
				p.signal(t, syscall.SIGKILL)
				p.wait(t)
				r := fsb(t, "cleanup")
				r.pids = append(r.pids, p.cmd.Process.Pid)
				return r
			}},
		{name: "SIGHUP on the simulated card", want: 129, full: true, need: needFUSE,
			run: func(t *testing.T, dir string) result {
				p := start(t, "run", "--target", "simcard:sd-typical", "--time-scale", "0.01", "--size", "256M", "-n", "3",
					"--variants", "ext4", "--dataset-size", "8M", "--video-size", "8M", "-o", out(dir))
				p.waitFor(t, "a measurement", measured(out(dir), 3))
				p.signal(t, syscall.SIGHUP)
				return p.wait(t)
			},
			check: interrupted},
	}
}

// signalled starts a run and sends sig once n measurements are saved.
func signalled(sig syscall.Signal, n int) func(t *testing.T, dir string) result {
	return func(t *testing.T, dir string) result {
		p := start(t, args(longer, "-o", filepath.Join(dir, "res"))...)
		p.waitFor(t, "measurements", measured(filepath.Join(dir, "res"), n))
		p.signal(t, sig)
		return p.wait(t)
	}
}

// interrupted checks an interrupted run's results: marked so, completed cells kept.
func interrupted(t *testing.T, dir string, r result) {
	t.Helper()
	res := filepath.Join(dir, "res")
	if s := status(res); s != "interrupted" {
		t.Errorf("status %q, want interrupted", s)
	}
	if countMeasurements(filepath.Join(res, "results.json")) < 1 {
		t.Error("completed cells were lost")
	}
}

// startBoard starts a run on a "board" reached with a fake ssh client (see fakeSSH): the board's
// side runs on this machine, in dir/board.
func startBoard(t *testing.T, dir string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args(longer, "--target", "ssh://board.example", "--remote-dir", filepath.Join(dir, "board"),
		"--remote-binary", binary, "-o", filepath.Join(dir, "res"))...), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "FSBENCH_SSH="+fakeSSH(t))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// boardMeasured counts the measurements the board's run saved.
func boardMeasured(dir string) int {
	runs, _ := filepath.Glob(filepath.Join(dir, "board", "runs", "*", "res", "results.json"))
	if len(runs) == 0 {
		return 0
	}
	return countMeasurements(runs[0])
}
