// Package testsum reads `go test -json` and tells what a test run did: it prints each package's
// result as go test does without -v (ok, FAIL, the output of the tests that failed), keeps the
// whole verbose output in a log file, and ends with what is easy to miss in a long run: every
// test that was skipped and why, every test that ran a reduced version of itself, and the
// tests that failed. It is the project's test command's (make test) tail.
package testsum

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// ReducedMarker starts a test's log line saying that it ran a reduced version of itself, and
// how to run it whole: t.Log("reduced: 8 of 30 cases; FSBENCH_FAULTS=full runs them all").
const ReducedMarker = "reduced:"

// event is one record of go test -json (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// Test is one test's outcome.
type Test struct {
	Package, Name string
	// Why is a skipped test's reason, or a reduced test's line (without the marker).
	Why string
	// Output is a failed test's output.
	Output string
}

// Summary is what a test run did.
type Summary struct {
	Packages, PackagesFailed int
	Passed                   int
	Skipped, Reduced, Failed []Test
	// Benchmarks are the benchmarks that did not run: they have make targets of their own
	// (their skip says FSBENCH_BENCH), so they are listed apart from the tests that skipped.
	Benchmarks []Test
	// LeftOut are the slow tests the fast test command leaves out (they boot an emulator or a
	// farm; their skip carries internal/testkit/slow's reason): listed in one line with the
	// command that runs them.
	LeftOut []Test
	// BuildFailed are the packages that did not build.
	BuildFailed []string
	// Took is the whole run's time, when the caller measured it.
	Took time.Duration
	// Slowest are the top-level tests that took longest, longest first: where a long test
	// run's time goes (the candidates for a make target of their own).
	Slowest []Timed
}

// Timed is a top-level test and how long it took.
type Timed struct {
	Package, Name string
	Took          time.Duration
}

// slowestShown is how many of the slowest tests the summary names, and slowestMin the least
// time a test takes to be named there.
const (
	slowestShown = 5
	slowestMin   = time.Second
)

// Read reads go test -json from r until its end. Each package's result goes to progress as it
// comes (lines that are not JSON, such as a build error, pass through), and the verbose output
// to log.
func Read(r io.Reader, progress, log io.Writer) (*Summary, error) {
	s := &Summary{}
	outputs := map[[2]string]*strings.Builder{} // package, test → output
	reduced := map[[2]string]string{}
	failed := map[string][]string{} // package → failed tests, in order
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(progress, "%s\n", line)
			fmt.Fprintf(log, "%s\n", line)
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "output", "build-output":
			io.WriteString(log, e.Output)
			if e.Action == "output" {
				b := outputs[key]
				if b == nil {
					b = &strings.Builder{}
					outputs[key] = b
				}
				b.WriteString(e.Output)
				if _, msg, ok := strings.Cut(e.Output, ": "+ReducedMarker); ok && strings.HasPrefix(e.Output, "    ") {
					reduced[key] = strings.TrimSpace(msg)
				}
			} else if e.Action == "build-output" {
				io.WriteString(progress, e.Output)
			}
		case "build-fail":
			s.BuildFailed = append(s.BuildFailed, e.ImportPath)
		case "pass", "fail", "skip":
			if e.Test == "" {
				s.Packages++
				s.packageDone(progress, e, outputs, failed)
				continue
			}
			out := ""
			if b := outputs[key]; b != nil {
				out = b.String()
			}
			t := Test{Package: e.Package, Name: e.Test}
			switch e.Action {
			case "pass":
				s.Passed++
			case "skip":
				t.Why = skipReason(out)
				switch {
				case strings.Contains(t.Why, "FSBENCH_BENCH"):
					s.Benchmarks = append(s.Benchmarks, t)
				case strings.HasPrefix(t.Why, slow.Marker) && strings.Contains(t.Why, slow.Env):
					s.LeftOut = append(s.LeftOut, t)
				default:
					s.Skipped = append(s.Skipped, t)
				}
			case "fail":
				t.Output = out
				s.Failed = append(s.Failed, t)
				failed[e.Package] = append(failed[e.Package], e.Test)
			}
			if !strings.Contains(e.Test, "/") && e.Action != "skip" {
				s.noteTime(Timed{Package: e.Package, Name: e.Test, Took: time.Duration(e.Elapsed * float64(time.Second))})
			}
			if why, ok := reduced[key]; ok && e.Action == "pass" {
				t.Why = why
				s.Reduced = append(s.Reduced, t)
			}
		}
	}
	return s, sc.Err()
}

// noteTime keeps t if it is among the slowest tests so far.
func (s *Summary) noteTime(t Timed) {
	if t.Took < slowestMin {
		return
	}
	i := sort.Search(len(s.Slowest), func(i int) bool { return s.Slowest[i].Took < t.Took })
	s.Slowest = slices.Insert(s.Slowest, i, t)
	if len(s.Slowest) > slowestShown {
		s.Slowest = s.Slowest[:slowestShown]
	}
}

// packageDone prints a package's result line, and the output of its failed tests first (a
// parent's output holds its subtests', so only the innermost failures are printed).
func (s *Summary) packageDone(w io.Writer, e event, outputs map[[2]string]*strings.Builder, failed map[string][]string) {
	switch e.Action {
	case "fail":
		s.PackagesFailed++
		for _, name := range innermost(failed[e.Package]) {
			if b := outputs[[2]string{e.Package, name}]; b != nil {
				io.WriteString(w, b.String())
			}
		}
		// A package that failed outside its tests (TestMain, a panic, a timeout) says why in
		// its own output.
		if b := outputs[[2]string{e.Package, ""}]; b != nil && len(failed[e.Package]) == 0 {
			for _, l := range strings.SplitAfter(b.String(), "\n") {
				if t := strings.TrimSpace(l); t != "" && t != "FAIL" && !strings.HasPrefix(t, "FAIL\t") {
					io.WriteString(w, l)
				}
			}
		}
		fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
	default:
		fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	}
}

// innermost drops every test that has a failed subtest in names.
func innermost(names []string) []string {
	var out []string
	for _, n := range names {
		parent := false
		for _, m := range names {
			if strings.HasPrefix(m, n+"/") {
				parent = true
			}
		}
		if !parent {
			out = append(out, n)
		}
	}
	return out
}

// logLine is a line t.Log, t.Skip and their kin print: four spaces (more for a subtest), the
// file and line, the message.
var logLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

// skipReason is the message a skipped test gave: its last logged lines (a message can span
// lines; the continuation lines are indented deeper).
func skipReason(out string) string {
	var msg []string
	for _, l := range strings.Split(out, "\n") {
		if m := logLine.FindStringSubmatch(l); m != nil {
			msg = []string{m[1]}
		} else if len(msg) > 0 && strings.HasPrefix(l, "        ") && !strings.HasPrefix(strings.TrimSpace(l), "--- ") {
			msg = append(msg, strings.TrimSpace(l))
		}
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

// Write prints the summary: the skipped tests and why, the reduced ones, the benchmarks not
// run, the failed tests, and a last line with the counts.
func (s *Summary) Write(w io.Writer, logPath string) {
	list := func(title string, tests []Test, withWhy bool) {
		if len(tests) == 0 {
			return
		}
		sort.SliceStable(tests, func(i, j int) bool {
			if tests[i].Package != tests[j].Package {
				return tests[i].Package < tests[j].Package
			}
			return tests[i].Name < tests[j].Name
		})
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(tests))
		for _, t := range tests {
			if withWhy {
				fmt.Fprintf(w, "  %s %s: %s\n", shortPkg(t.Package), t.Name, t.Why)
			} else {
				fmt.Fprintf(w, "  %s %s\n", shortPkg(t.Package), t.Name)
			}
		}
	}
	if len(s.Benchmarks) > 0 {
		var names []string
		for _, t := range s.Benchmarks {
			names = append(names, t.Name)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\nbenchmarks not run (make bench-*; FSBENCH_BENCH=1): %s\n", strings.Join(names, ", "))
	}
	if len(s.LeftOut) > 0 {
		var names []string
		for _, t := range s.LeftOut {
			names = append(names, shortPkg(t.Package)+" "+t.Name)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\nleft out, they boot an emulator or a farm (%d; %s runs them, %s=1): %s\n",
			len(names), slow.Command, slow.Env, strings.Join(names, ", "))
	}
	if len(s.Slowest) > 0 {
		fmt.Fprintf(w, "\nslowest tests:")
		for i, t := range s.Slowest {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %s %s %s", sep, shortPkg(t.Package), t.Name, t.Took.Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	list("reduced (ran a smaller version of themselves)", s.Reduced, true)
	list("skipped", s.Skipped, true)
	var failed []Test
	byPkg := map[string][]string{}
	for _, t := range s.Failed {
		byPkg[t.Package] = append(byPkg[t.Package], t.Name)
	}
	for _, t := range s.Failed {
		if slices.Contains(innermost(byPkg[t.Package]), t.Name) {
			failed = append(failed, t)
		}
	}
	list("FAILED", failed, false)
	for _, p := range s.BuildFailed {
		fmt.Fprintf(w, "  %s: did not build\n", p)
	}
	verdict := "PASS"
	if len(s.Failed) > 0 || s.PackagesFailed > 0 || len(s.BuildFailed) > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d skipped, %d reduced", verdict,
		s.Passed, len(failed), len(s.Skipped), len(s.Reduced))
	if len(s.LeftOut) > 0 {
		fmt.Fprintf(w, ", %d left out (%s)", len(s.LeftOut), slow.Command)
	}
	fmt.Fprintf(w, " in %d packages (%d failed)", s.Packages, s.PackagesFailed)
	if s.Took > 0 {
		fmt.Fprintf(w, ", %s", s.Took.Round(time.Second))
	}
	if logPath != "" {
		fmt.Fprintf(w, "; full output: %s", logPath)
	}
	fmt.Fprintln(w)
}

// OK reports whether nothing failed.
func (s *Summary) OK() bool {
	return len(s.Failed) == 0 && s.PackagesFailed == 0 && len(s.BuildFailed) == 0
}

// shortPkg drops the module's path from a package's import path.
func shortPkg(p string) string {
	if i := strings.Index(p, "/internal/"); i >= 0 {
		return p[i+1:]
	}
	if i := strings.Index(p, "/cmd/"); i >= 0 {
		return p[i+1:]
	}
	return p
}
