package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// benchRow is one tool's run on one card.
type benchRow struct {
	verdict string // genuine, counterfeit/<class>, damaged
	usable  uint64
	ok      bool
	written uint64        // bytes the card saw written at its announced addresses
	card    time.Duration // the card's modelled busy time: what the check costs on that card
	wall    time.Duration // this host's time (the card served without waiting)
	exit    int
	note    string
}

// TestBenchCapacity is make bench-capacity: fsbench probe --capacity and f3probe (Debian's f3)
// side by side on every counterfeit profile and every genuine one, each served as a 2 GiB card,
// like for like first (no reset on either side, as on every real card in a reader or slot):
// the verdict and usable size each finds (ok: the right class and the real size within one AU),
// the bytes the card saw written, and the time, as the card's modelled busy time (independent
// of this host's load) and as wall time (this host's, card waits off). fsbench runs twice: with
// the simulated card's reset (how it runs on this card) and with --no-reset (how it runs on a
// card whose power the host cannot cycle, like f3probe here). The order of the tools alternates
// from card to card. Each tool must leave the card as it found it (sha256 of its data).
func TestBenchCapacity(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-capacity), as root")
	}
	if os.Geteuid() != 0 || !simcard.FUSEAvailable {
		t.Skip("needs root and FUSE: serves simulated cards through loop devices")
	}
	f3, err := exec.LookPath("f3probe")
	if err != nil {
		t.Skip("f3probe not found: apt install f3")
	}
	bin := buildFsbench(t)
	f3ver, _ := exec.Command(f3, "--version").CombinedOutput()
	load0 := loadavg()
	const cardSize = 2 << 30
	tools := []string{"fsbench", "f3probe", "fsbench --no-reset"}
	type line struct {
		profile, truth string
		rows           map[string]benchRow
	}
	var lines []line
	for i, name := range append(flash.Counterfeits(), flash.Builtins()...) {
		// A subtest per card, so that its server, loop device and 2 GiB backing file go before
		// the next card is served (this machine's loop devices and disk are shared).
		t.Run(name, func(t *testing.T) {
			p, err := flash.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			backing := filepath.Join(dir, "card.img")
			dev := serveLoop(t, dir, name, cardSize, backing)
			stats := filepath.Join(dir, "sim", simcard.StatsFile)
			truthUsable, truthClass := uint64(cardSize), "genuine"
			if p.Fake != nil {
				truthUsable, truthClass = p.Fake.Usable(), p.Fake.Class(cardSize)
			}
			au := uint64(p.AUSize)
			l := line{profile: name, truth: fmt.Sprintf("%s %s", truthClass, mb(truthUsable)), rows: map[string]benchRow{}}
			before := sumFile(t, backing)
			order := tools
			if i%2 == 1 {
				order = []string{tools[1], tools[0], tools[2]}
			}
			for _, tool := range order {
				st0 := readStats(t, stats)
				start := time.Now()
				var row benchRow
				switch tool {
				case "f3probe":
					row = runF3(t, f3, dev)
				default:
					args := []string{"probe", "--capacity", "-q", "--undo-dir", filepath.Join(dir, "undo"), "-o", filepath.Join(dir, "out"), dev}
					if tool != "fsbench" {
						args = append(args[:3], append([]string{"--no-reset"}, args[3:]...)...)
					}
					row, _ = runFsbench(t, bin, args, filepath.Join(dir, "out", "capacity.json"))
				}
				row.wall = time.Since(start)
				row.written, row.card = cardCost(st0, readStats(t, stats))
				row.ok = judge(row, truthClass, truthUsable, au)
				if after := sumFile(t, backing); after != before {
					row.note = "card changed"
					msg := fmt.Sprintf("bench-capacity: %s on %s left the card changed (sha256 %s before, %s after)", tool, name, before, after)
					if tool == "f3probe" {
						t.Log(msg) // f3probe's business, reported in the table
					} else {
						t.Error(msg)
					}
					before = after
				}
				l.rows[tool] = row
				if tool != "f3probe" && !row.ok {
					t.Errorf("bench-capacity: %s on %s: %s, usable %d; the card is %s", tool, name, row.verdict, row.usable, l.truth)
				}
			}
			lines = append(lines, l)
		})
	}
	// Like for like: neither tool resets the card (f3probe cannot reset a loop device; a real
	// card in a reader or slot gives neither a reset), so both write past any cache.
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "LIKE FOR LIKE, no reset on either side\t\t")
	for _, tool := range []string{"f3probe", "fsbench --no-reset"} {
		fmt.Fprintf(w, "%s: verdict\tusable\tok\twritten MiB\tcard s\twall s\t", tool)
	}
	fmt.Fprintf(w, "fsbench writes\tcard time\t\n")
	fmt.Fprintf(w, "card (2 GiB announced)\tis\t\t\t\t\t\t\t\t\t\t\t\t\t÷ f3probe's\t÷ f3probe's\t\n")
	var fewerBytes, lessTime, asRight, n int
	var more []string
	for _, l := range lines {
		fmt.Fprintf(w, "%s\t%s\t", l.profile, l.truth)
		for _, tool := range []string{"f3probe", "fsbench --no-reset"} {
			r := l.rows[tool]
			fmt.Fprintf(w, "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t", r.verdict, mb(r.usable), okText(r), float64(r.written)/(1<<20), r.card.Seconds(), r.wall.Seconds())
		}
		fs, f3r := l.rows["fsbench --no-reset"], l.rows["f3probe"]
		fmt.Fprintf(w, "%.2f\t%.2f\t\n", float64(fs.written)/float64(max(f3r.written, 1)), fs.card.Seconds()/max(f3r.card.Seconds(), 1e-9))
		n++
		if fs.written < f3r.written {
			fewerBytes++
		} else {
			more = append(more, fmt.Sprintf("%s (%.2f vs %.2f MiB)", l.profile, float64(fs.written)/(1<<20), float64(f3r.written)/(1<<20)))
		}
		if fs.card <= f3r.card {
			lessTime++
		}
		if fs.ok || !f3r.ok {
			asRight++
		}
	}
	w.Flush()
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		t.Logf("bench-capacity: %s", line)
	}
	t.Logf("bench-capacity: like for like, fsbench --no-reset is at least as right as f3probe on %d of %d cards, writes fewer bytes on %d, takes no more card time on %d", asRight, n, fewerBytes, lessTime)
	if len(more) > 0 {
		t.Logf("bench-capacity: fsbench --no-reset writes no fewer bytes than f3probe on: %s", strings.Join(more, ", "))
	}

	// With the card's reset (the simulated card's power switch; a host that can cycle a card's
	// power): fsbench's own method, which needs no writing past a cache.
	b.Reset()
	w = tabwriter.NewWriter(&b, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "WITH THE CARD'S RESET (fsbench only)\tis\tverdict\tusable\tok\twritten MiB\tcard s\twall s\t\n")
	for _, l := range lines {
		r := l.rows["fsbench"]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t\n", l.profile, l.truth, r.verdict, mb(r.usable), okText(r), float64(r.written)/(1<<20), r.card.Seconds(), r.wall.Seconds())
	}
	w.Flush()
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		t.Logf("bench-capacity: %s", line)
	}
	t.Logf("bench-capacity: %s; cards served with waits off (wall time is this host's); load average %s before, %s after", strings.TrimSpace(strings.SplitN(string(f3ver), "\n", 2)[0]), load0, loadavg())
}

func okText(r benchRow) string {
	ok := map[bool]string{true: "ok", false: "WRONG"}[r.ok]
	if r.note != "" {
		ok += ", " + r.note
	}
	return ok
}

func readStats(t *testing.T, p string) simcard.Stats {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s simcard.Stats
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// runFsbench runs fsbench probe --capacity (args) and reads its verdict from out (its
// capacity.json), which must agree with its exit code; it returns stdout too (the explanation).
func runFsbench(t *testing.T, bin string, args []string, out string) (benchRow, string) {
	t.Helper()
	os.Remove(out)
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	row := benchRow{}
	if errors.As(err, &ee) {
		row.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("fsbench %v: %v", args, err)
	}
	b, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("fsbench %v: exit %d, no capacity.json: %s", args, row.exit, stderr.String())
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExitCode() != row.exit {
		t.Errorf("fsbench %v: exit %d, the result says %d", args, row.exit, r.ExitCode())
	}
	row.verdict, row.usable = r.Verdict, r.Usable
	if r.Class != "" {
		row.verdict += "/" + r.Class
	}
	return row, stdout.String()
}

var (
	f3Verdict = regexp.MustCompile("The device `[^']*' is (the real thing|a counterfeit of type (\\w+)|damaged)")
	f3Usable  = regexp.MustCompile(`\*Usable\* size: .*\((\d+) blocks\)`)
	f3Block   = regexp.MustCompile(`Physical block size: .*\(2\^(\d+) Bytes\)`)
)

// runF3 runs f3probe as users do (not --destructive: it saves the blocks it overwrites in
// memory and writes them back at the end) and reads its verdict and usable size.
func runF3(t *testing.T, f3, dev string) benchRow {
	t.Helper()
	out, err := exec.Command(f3, "--time-ops", dev).CombinedOutput()
	row := benchRow{}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		row.exit = ee.ExitCode() // f3probe exits non-zero for a card that is not the real thing
	} else if err != nil {
		t.Fatalf("f3probe: %v\n%s", err, out)
	}
	m := f3Verdict.FindSubmatch(out)
	u := f3Usable.FindSubmatch(out)
	o := f3Block.FindSubmatch(out)
	if m == nil || u == nil || o == nil {
		t.Fatalf("f3probe: cannot read its verdict:\n%s", out)
	}
	switch {
	case bytes.HasPrefix(m[1], []byte("the real")):
		row.verdict = VerdictGenuine
	case len(m[2]) > 0:
		row.verdict = VerdictCounterfeit + "/" + string(m[2])
	default:
		row.verdict = VerdictDamaged
	}
	blocks, _ := strconv.ParseUint(string(u[1]), 10, 64)
	order, _ := strconv.ParseUint(string(o[1]), 10, 64)
	row.usable = blocks << order
	return row
}

// judge says whether a verdict is right: the class, and the usable size within one AU.
func judge(r benchRow, class string, usable, au uint64) bool {
	switch class {
	case "genuine":
		return r.verdict == VerdictGenuine
	case flash.FakeBad:
		return r.verdict == VerdictDamaged || r.usable == 0
	}
	d := int64(r.usable) - int64(usable)
	return r.verdict == VerdictCounterfeit+"/"+class && d > -int64(au) && d < int64(au)
}

// mb prints a size in MiB, exact to the byte where it is not a whole number of MiB.
func mb(n uint64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.4f MiB", float64(n)/(1<<20))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
