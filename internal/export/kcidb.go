package export

// KernelCI's KCIDB reports (this file) and SQUAD's metrics (squad.go): the formats of the
// dashboards farms keep their results in.

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// KCIDB's schema version written: v5 (kcidb-io 141 validates 5.0 to 5.3; nothing here needs
// more than 5.0's tests with their number).
const (
	KCIDBMajor = 5
	KCIDBMinor = 0
	// KCIDBOrigin is the CI system's name in every id: fsbench.
	KCIDBOrigin = "fsbench"
)

// kcidbReport is a KCIDB I/O report: the run as one checkout (the machine's kernel, which
// fsbench does not build or check out: the report says so), one build of it, and one test per
// cell (variant × test) with its median as the test's number, and each secondary figure as a
// test below it.
type kcidbReport struct {
	Version   kcidbVersion    `json:"version"`
	Checkouts []kcidbCheckout `json:"checkouts"`
	Builds    []kcidbBuild    `json:"builds"`
	Tests     []kcidbTest     `json:"tests"`
}

type kcidbVersion struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

type kcidbCheckout struct {
	ID        string         `json:"id"`
	Origin    string         `json:"origin"`
	Comment   string         `json:"comment,omitempty"`
	StartTime string         `json:"start_time,omitempty"`
	Misc      map[string]any `json:"misc,omitempty"`
}

type kcidbBuild struct {
	ID           string         `json:"id"`
	CheckoutID   string         `json:"checkout_id"`
	Origin       string         `json:"origin"`
	Architecture string         `json:"architecture,omitempty"`
	Comment      string         `json:"comment,omitempty"`
	StartTime    string         `json:"start_time,omitempty"`
	Misc         map[string]any `json:"misc,omitempty"`
}

type kcidbTest struct {
	ID          string            `json:"id"`
	BuildID     string            `json:"build_id"`
	Origin      string            `json:"origin"`
	Path        string            `json:"path"`
	Status      string            `json:"status"`
	Comment     string            `json:"comment,omitempty"`
	StartTime   string            `json:"start_time,omitempty"`
	Duration    float64           `json:"duration,omitempty"`
	Number      *kcidbNumber      `json:"number,omitempty"`
	Environment *kcidbEnvironment `json:"environment,omitempty"`
	Misc        map[string]any    `json:"misc,omitempty"`
}

type kcidbNumber struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

type kcidbEnvironment struct {
	Comment    string         `json:"comment,omitempty"`
	Compatible []string       `json:"compatible,omitempty"`
	Misc       map[string]any `json:"misc,omitempty"`
}

// KCIDB test statuses fsbench uses: a cell measured is DONE (a measurement, not a verdict on the
// kernel); one whose every repetition failed is ERROR (the test did not complete, the kernel's
// status unknown); a cell not run, a variant this machine could not make, is SKIP.
const (
	kcidbDone  = "DONE"
	kcidbError = "ERROR"
	kcidbSkip  = "SKIP"
)

// RunID names a run among fsbench's: its machine and when it started, which no other run shares.
func RunID(r *results.Run) string {
	host := r.Machine.Hostname
	if r.Remote != nil && r.Remote.Hostname != "" {
		host = r.Remote.Hostname
	}
	if host == "" {
		host = "host"
	}
	return pathPart(host) + "-" + r.Started.UTC().Format("20060102T150405Z")
}

// KCIDB writes r as a KCIDB v5 report (JSON) to w and returns how many tests it holds.
func KCIDB(w io.Writer, r *results.Run) (int, error) {
	id := KCIDBOrigin + ":" + RunID(r)
	start := r.Started.UTC().Format(time.RFC3339)
	kernel := r.Machine.Kernel
	rep := kcidbReport{Version: kcidbVersion{KCIDBMajor, KCIDBMinor},
		Checkouts: []kcidbCheckout{{ID: id, Origin: KCIDBOrigin, StartTime: start,
			Comment: fmt.Sprintf("the kernel fsbench ran on, %s (fsbench neither checks it out nor builds it)", kernel),
			Misc:    map[string]any{"kernel_release": kernel, "fsbench_version": r.Tool.Version, "run_status": r.Status}}},
		Builds: []kcidbBuild{{ID: id, CheckoutID: id, Origin: KCIDBOrigin, Architecture: archName(r.Machine.Arch), StartTime: start,
			Comment: "kernel " + kernel, Misc: map[string]any{"kernel_release": kernel}}},
		Tests: []kcidbTest{},
	}
	env := environment(r)
	for _, c := range Cells(r) {
		t := kcidbTest{ID: id + ":" + c.Path, BuildID: id, Origin: KCIDBOrigin, Path: c.Path, Status: kcidbDone, StartTime: start,
			Environment: env, Comment: c.Comment, Duration: c.WallSeconds, Misc: c.misc()}
		switch {
		case c.Skipped:
			t.Status = kcidbSkip
		case c.Failed:
			t.Status = kcidbError
		default:
			t.Number = &kcidbNumber{Value: c.Median, Unit: c.Unit}
		}
		rep.Tests = append(rep.Tests, t)
		for _, x := range c.Extra {
			rep.Tests = append(rep.Tests, kcidbTest{ID: id + ":" + c.Path + "." + x.Name, BuildID: id, Origin: KCIDBOrigin,
				Path: c.Path + "." + x.Name, Status: kcidbDone, StartTime: start, Environment: env,
				Number: &kcidbNumber{Value: x.Median, Unit: x.Unit}, Misc: map[string]any{"values": x.Values}})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return len(rep.Tests), enc.Encode(rep)
}

// environment is where the run's tests ran: the board or the machine, its kernel and target.
func environment(r *results.Run) *kcidbEnvironment {
	e := &kcidbEnvironment{Misc: map[string]any{"kernel_release": r.Machine.Kernel, "arch": r.Machine.Arch, "target": string(r.Target.Kind)}}
	what := r.Machine.Hostname
	if rm := r.Remote; rm != nil {
		what = rm.Hostname
		if rm.Model != "" {
			what += " (" + rm.Model + ")"
		}
		e.Compatible = rm.Compatible
		e.Misc["remote_target"] = rm.Target
	}
	if r.Target.Device != "" {
		e.Misc["device"] = r.Target.Device
	}
	if r.Target.Profile != "" {
		e.Misc["card_profile"] = r.Target.Profile
	}
	e.Comment = fmt.Sprintf("%s, kernel %s, %s", what, r.Machine.Kernel, r.Machine.Arch)
	return e
}

// archName is an architecture as KCIDB spells one (lower-case letters, digits, underscores).
func archName(a string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			return c
		}
		if c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return '_'
	}, a)
}

// Cell is one variant × test of a run as the farms' formats see it: its path, its median over
// the repetitions that measured it, its unit, and its secondary figures.
type Cell struct {
	Variant, Test string
	// Path is fsbench.VARIANT.TEST, each part kept to letters, digits, - and _.
	Path   string
	Median float64
	Unit   string
	// Values are the repetitions' headline figures (warm-ups left out).
	Values []float64
	// WallSeconds is the cell's measured time over its repetitions.
	WallSeconds float64
	// Failed: every repetition failed; Skipped: not run or not applicable (Comment says why).
	Failed, Skipped bool
	Comment         string
	Extra           []Figure
	variant         *results.Variant
}

// Figure is a secondary figure of a cell (a measurement's Extra), over its repetitions.
type Figure struct {
	Name   string
	Median float64
	Unit   string
	Values []float64
}

func (c Cell) misc() map[string]any {
	m := map[string]any{"variant": c.Variant, "test": c.Test, "values": c.Values}
	if v := c.variant; v != nil {
		m["fs"] = v.FS
		if len(v.MkfsArgs) > 0 {
			m["mkfs_args"] = strings.Join(v.MkfsArgs, " ")
		}
		if v.MountOptions != "" {
			m["mount_options"] = v.MountOptions
		}
	}
	return m
}

// Cells are r's cells in the order its variants and tests ran, and one skipped cell (Test "")
// for each variant the run could not make.
func Cells(r *results.Run) []Cell {
	var out []Cell
	byName := map[string]*results.Variant{}
	for i := range r.Variants {
		v := &r.Variants[i]
		byName[v.Name] = v
		if v.Status == results.Skipped {
			out = append(out, Cell{Variant: v.Name, Path: "fsbench." + pathPart(v.Name), Skipped: true, Comment: v.Reason, variant: v})
		}
	}
	type key struct{ v, t string }
	var order []key
	cells := map[key][]results.Measurement{}
	for _, m := range r.Measurements {
		if m.Warmup {
			continue
		}
		k := key{m.Variant, m.Test}
		if _, ok := cells[k]; !ok {
			order = append(order, k)
		}
		cells[k] = append(cells[k], m)
	}
	for _, k := range order {
		ms := cells[k]
		c := Cell{Variant: k.v, Test: k.t, Path: "fsbench." + pathPart(k.v) + "." + pathPart(k.t), variant: byName[k.v]}
		extras := map[string]*Figure{}
		var names []string
		var errs []string
		for _, m := range ms {
			c.WallSeconds += m.WallSeconds
			switch {
			case m.Status == results.OK && m.Value != nil:
				c.Values = append(c.Values, *m.Value)
				c.Unit = m.Unit
				for name, x := range m.Extra {
					f, ok := extras[name]
					if !ok {
						f = &Figure{Name: pathPart(name), Unit: unitOf(name)}
						extras[name] = f
						names = append(names, name)
					}
					f.Values = append(f.Values, x)
				}
			case m.Status == results.Failed:
				errs = append(errs, m.Error)
			default:
				if m.Note != "" {
					errs = append(errs, m.Note)
				}
			}
		}
		switch {
		case len(c.Values) > 0:
			c.Median = median(c.Values)
		case len(errs) > 0 && ms[0].Status == results.Failed:
			c.Failed, c.Comment = true, errs[0]
		default:
			c.Skipped = true
			if len(errs) > 0 {
				c.Comment = errs[0]
			}
		}
		slices.Sort(names)
		for _, n := range names {
			f := extras[n]
			f.Median = median(f.Values)
			c.Extra = append(c.Extra, *f)
		}
		out = append(out, c)
	}
	return out
}

// unitOf reads a secondary figure's unit from its name, as fsbench names them (catalog):
// "_s" seconds, "_pct" percent, "_bytes" bytes, "_per_hour" and "_per_minute" rates.
func unitOf(name string) string {
	for _, s := range []struct{ suffix, unit string }{{"_pct", "%"}, {"_s", "s"}, {"_bytes", "B"}, {"per_hour", "1/h"}, {"per_minute", "1/min"}} {
		if strings.HasSuffix(name, s.suffix) {
			return s.unit
		}
	}
	return ""
}

// pathPart keeps a name to what a KCIDB path part, a SQUAD name and a LAVA test case name all
// take: letters, digits, - and _; anything else becomes _.
func pathPart(s string) string {
	out := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, s)
	if out == "" {
		return "_"
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
