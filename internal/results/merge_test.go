package results

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// mergeRun is a run on kernel (in a QEMU guest with accel when accel is set) with the given
// variants, "name" for one that ran and "name!" for one that was skipped. Each variant that
// ran has one measurement of test "write" whose value is start, so that the test can tell
// which run a figure came from.
func mergeRun(kernel, accel, status string, start int, variants ...string) *Run {
	r := &Run{
		Schema:   Schema,
		Tool:     Tool{Name: "fsbench", Version: kernel},
		Status:   status,
		Started:  t0.Add(time.Duration(start) * time.Hour),
		Finished: t0.Add(time.Duration(start+1) * time.Hour),
		Machine:  Machine{Hostname: "h-" + kernel, Kernel: kernel},
		Tools:    map[string]string{"mkfs.ext4": "mke2fs " + kernel},
	}
	if accel != "" {
		r.Guest = &Guest{KernelRelease: kernel, Accel: accel}
	}
	for _, name := range variants {
		if n, ok := strings.CutSuffix(name, "!"); ok {
			r.Variants = append(r.Variants, Variant{Name: n, FS: n, Status: Skipped, Reason: "no " + n + " in " + kernel})
			continue
		}
		r.Variants = append(r.Variants, Variant{Name: name, FS: name, Status: OK})
		r.Measurements = append(r.Measurements, Measurement{Variant: name, Test: "write", Rep: 1, Status: OK, Value: Float(float64(start)), Unit: "s"})
	}
	return r
}

// describe flattens what Merge decided about variants and measurements: one line per
// variant (name, status, source, and label when there is one) and one per measurement
// (variant and the run it came from).
func describe(r *Run) []string {
	var out []string
	for _, v := range r.Variants {
		s := fmt.Sprintf("%s %s", v.Name, v.Status)
		if v.Source != nil {
			s += fmt.Sprintf(" from %s kernel %s guest %q", v.Source.Dir, v.Source.Kernel, v.Source.Guest)
			if v.Source.Label != "" {
				s += fmt.Sprintf(" label %q", v.Source.Label)
			}
		}
		if v.Reason != "" {
			s += " (" + v.Reason + ")"
		}
		out = append(out, s)
	}
	for _, m := range r.Measurements {
		out = append(out, fmt.Sprintf("m %s %s=%g", m.Variant, m.Test, *m.Value))
	}
	return out
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name   string
		runs   []*Run
		dirs   []string
		labels []string // nil: Merge, else MergeLabeled
		want   []string
	}{
		{
			name: "guest fills what the host skipped; both ran ext4",
			runs: []*Run{
				mergeRun("6.18.44", "", RunComplete, 0, "ext4", "f2fs!", "nilfs2!", "vfat!"),
				mergeRun("6.1.0-56-amd64", "tcg", RunComplete, 2, "ext4", "f2fs", "nilfs2", "vfat!"),
			},
			dirs: []string{"host", "guest"},
			want: []string{
				`ext4 ok from host kernel 6.18.44 guest ""`,
				`f2fs ok from guest kernel 6.1.0-56-amd64 guest "qemu tcg"`,
				`nilfs2 ok from guest kernel 6.1.0-56-amd64 guest "qemu tcg"`,
				`vfat skipped from host kernel 6.18.44 guest "" (no vfat in 6.18.44)`,
				`ext4@6.1.0-56-amd64 ok from guest kernel 6.1.0-56-amd64 guest "qemu tcg"`,
				"m ext4 write=0",
				"m ext4@6.1.0-56-amd64 write=2",
				"m f2fs write=2",
				"m nilfs2 write=2",
			},
		},
		{
			name: "the run that ran it wins whichever comes first",
			runs: []*Run{
				mergeRun("6.1.0", "kvm", RunComplete, 0, "f2fs"),
				mergeRun("6.18.44", "", RunComplete, 1, "ext4", "f2fs!"),
			},
			dirs: []string{"guest", "host"},
			want: []string{
				`f2fs ok from guest kernel 6.1.0 guest "qemu kvm"`,
				`ext4 ok from host kernel 6.18.44 guest ""`,
				"m f2fs write=0",
				"m ext4 write=1",
			},
		},
		{
			name: "three runs: renamed after each later kernel",
			runs: []*Run{
				mergeRun("6.18.44", "", RunComplete, 0, "ext4"),
				mergeRun("6.1.0", "tcg", RunComplete, 1, "ext4"),
				mergeRun("5.10.0", "kvm", RunComplete, 2, "ext4"),
			},
			dirs: []string{"host", "guest", "third"},
			want: []string{
				`ext4 ok from host kernel 6.18.44 guest ""`,
				`ext4@6.1.0 ok from guest kernel 6.1.0 guest "qemu tcg"`,
				`ext4@5.10.0 ok from third kernel 5.10.0 guest "qemu kvm"`,
				"m ext4 write=0",
				"m ext4@6.1.0 write=1",
				"m ext4@5.10.0 write=2",
			},
		},
		{
			// This failed before labels: the third ext4 had nowhere to go.
			name: "two guests on one kernel: the second is counted",
			runs: []*Run{
				mergeRun("6.18.44", "", RunComplete, 0, "ext4"),
				mergeRun("6.1.0", "tcg", RunComplete, 1, "ext4"),
				mergeRun("6.1.0", "kvm", RunComplete, 2, "ext4"),
			},
			dirs: []string{"a", "b", "c"},
			want: []string{
				`ext4 ok from a kernel 6.18.44 guest ""`,
				`ext4@6.1.0 ok from b kernel 6.1.0 guest "qemu tcg"`,
				`ext4@6.1.0#2 ok from c kernel 6.1.0 guest "qemu kvm"`,
				"m ext4 write=0",
				"m ext4@6.1.0 write=1",
				"m ext4@6.1.0#2 write=2",
			},
		},
		{
			name: "the renamed name is a variant of the same run",
			runs: []*Run{
				mergeRun("6.18.44", "", RunComplete, 0, "ext4"),
				mergeRun("6.1.0", "tcg", RunComplete, 1, "ext4", "ext4@6.1.0"),
			},
			dirs: []string{"a", "b"},
			want: []string{
				`ext4 ok from a kernel 6.18.44 guest ""`,
				`ext4@6.1.0#2 ok from b kernel 6.1.0 guest "qemu tcg"`,
				`ext4@6.1.0 ok from b kernel 6.1.0 guest "qemu tcg"`,
				"m ext4 write=0",
				"m ext4@6.1.0#2 write=1",
				"m ext4@6.1.0 write=1",
			},
		},
		{
			name: "a run without a kernel is told apart by its place",
			runs: []*Run{
				mergeRun("6.18.44", "", RunComplete, 0, "ext4"),
				mergeRun("", "", RunComplete, 1, "ext4"),
			},
			dirs: []string{"a", "b"},
			want: []string{
				`ext4 ok from a kernel 6.18.44 guest ""`,
				`ext4@run2 ok from b kernel  guest ""`,
				"m ext4 write=0",
				"m ext4@run2 write=1",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Merge(tc.runs, tc.dirs)
			if tc.labels != nil {
				got, err = MergeLabeled(tc.runs, tc.dirs, tc.labels)
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, describe(got)); d != "" {
				t.Errorf("merged variants and measurements (-want +got):\n%s", d)
			}
			if got.Guest != nil {
				t.Errorf("Guest = %+v, want nil (the variants' sources say it)", got.Guest)
			}
			// The summary is derived from the merged measurements, one cell per variant that ran.
			ran := 0
			for _, v := range got.Variants {
				if v.Status == OK {
					ran++
				}
			}
			if len(got.Summary) != ran {
				t.Errorf("%d summary cells, want %d", len(got.Summary), ran)
			}
		})
	}
}

// TestMergeThreeCards merges three runs on one kernel with the same variants, as the Pandora
// study's three SD cards: nothing but the label tells the runs apart, and no combination of
// labels may make the merge fail.
func TestMergeThreeCards(t *testing.T) {
	cards := func(variants ...[]string) []*Run {
		var runs []*Run
		for i, vs := range variants {
			runs = append(runs, mergeRun("6.18.44", "", RunComplete, i, vs...))
		}
		return runs
	}
	both := []string{"ext4", "vfat"}
	dirs := []string{"r/64G", "r/16G", "r/micro"}
	tests := []struct {
		name   string
		runs   []*Run
		labels []string
		want   []string
	}{
		{
			name:   "labelled: the later cards are renamed after their labels",
			runs:   cards(both, both, both),
			labels: []string{"sandisk-64G", "sandisk-16G", "micro-16G"},
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest "" label "sandisk-64G"`,
				`vfat ok from r/64G kernel 6.18.44 guest "" label "sandisk-64G"`,
				`ext4@sandisk-16G ok from r/16G kernel 6.18.44 guest "" label "sandisk-16G"`,
				`vfat@sandisk-16G ok from r/16G kernel 6.18.44 guest "" label "sandisk-16G"`,
				`ext4@micro-16G ok from r/micro kernel 6.18.44 guest "" label "micro-16G"`,
				`vfat@micro-16G ok from r/micro kernel 6.18.44 guest "" label "micro-16G"`,
				"m ext4 write=0", "m vfat write=0",
				"m ext4@sandisk-16G write=1", "m vfat@sandisk-16G write=1",
				"m ext4@micro-16G write=2", "m vfat@micro-16G write=2",
			},
		},
		{
			name: "no labels: the kernel, then a count",
			runs: cards(both, both, both),
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest ""`,
				`vfat ok from r/64G kernel 6.18.44 guest ""`,
				`ext4@6.18.44 ok from r/16G kernel 6.18.44 guest ""`,
				`vfat@6.18.44 ok from r/16G kernel 6.18.44 guest ""`,
				`ext4@6.18.44#2 ok from r/micro kernel 6.18.44 guest ""`,
				`vfat@6.18.44#2 ok from r/micro kernel 6.18.44 guest ""`,
				"m ext4 write=0", "m vfat write=0",
				"m ext4@6.18.44 write=1", "m vfat@6.18.44 write=1",
				"m ext4@6.18.44#2 write=2", "m vfat@6.18.44#2 write=2",
			},
		},
		{
			name:   "some labelled: the unlabelled run falls back to the kernel",
			runs:   cards([]string{"ext4"}, []string{"ext4"}, []string{"ext4"}),
			labels: []string{"sandisk-64G", "", "micro-16G"},
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest "" label "sandisk-64G"`,
				`ext4@6.18.44 ok from r/16G kernel 6.18.44 guest ""`,
				`ext4@micro-16G ok from r/micro kernel 6.18.44 guest "" label "micro-16G"`,
				"m ext4 write=0", "m ext4@6.18.44 write=1", "m ext4@micro-16G write=2",
			},
		},
		{
			name:   "one card three times: the label, then a count",
			runs:   cards([]string{"ext4"}, []string{"ext4"}, []string{"ext4"}),
			labels: []string{"card", "card", "card"},
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest "" label "card"`,
				`ext4@card ok from r/16G kernel 6.18.44 guest "" label "card"`,
				`ext4@card#2 ok from r/micro kernel 6.18.44 guest "" label "card"`,
				"m ext4 write=0", "m ext4@card write=1", "m ext4@card#2 write=2",
			},
		},
		{
			name:   "skipped on the first card: the second fills the place, the third is renamed",
			runs:   cards([]string{"ext4", "vfat!"}, both, both),
			labels: []string{"a", "b", "c"},
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest "" label "a"`,
				`vfat ok from r/16G kernel 6.18.44 guest "" label "b"`,
				`ext4@b ok from r/16G kernel 6.18.44 guest "" label "b"`,
				`ext4@c ok from r/micro kernel 6.18.44 guest "" label "c"`,
				`vfat@c ok from r/micro kernel 6.18.44 guest "" label "c"`,
				"m ext4 write=0",
				"m ext4@b write=1", "m vfat write=1",
				"m ext4@c write=2", "m vfat@c write=2",
			},
		},
		{
			name:   "a label that a later run already uses as a variant name",
			runs:   cards([]string{"ext4"}, []string{"ext4", "ext4@b"}, []string{"ext4"}),
			labels: []string{"a", "b", "b"},
			want: []string{
				`ext4 ok from r/64G kernel 6.18.44 guest "" label "a"`,
				`ext4@b#2 ok from r/16G kernel 6.18.44 guest "" label "b"`,
				`ext4@b ok from r/16G kernel 6.18.44 guest "" label "b"`,
				`ext4@b#3 ok from r/micro kernel 6.18.44 guest "" label "b"`,
				"m ext4 write=0",
				"m ext4@b#2 write=1", "m ext4@b write=1",
				"m ext4@b#3 write=2",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergeLabeled(tc.runs, dirs, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, describe(got)); d != "" {
				t.Errorf("merged variants and measurements (-want +got):\n%s", d)
			}
			// Every merged name is unique, and every measurement names a merged variant.
			seen := map[string]bool{}
			for _, v := range got.Variants {
				if seen[v.Name] {
					t.Errorf("variant %q twice", v.Name)
				}
				seen[v.Name] = true
			}
			for _, m := range got.Measurements {
				if !seen[m.Variant] {
					t.Errorf("measurement of %q, which is no merged variant", m.Variant)
				}
			}
		})
	}
}

func TestMergeRunFields(t *testing.T) {
	tests := []struct {
		name     string
		statuses []string
		want     string
	}{
		{"all complete", []string{RunComplete, RunComplete}, RunComplete},
		{"one interrupted", []string{RunComplete, RunInterrupted}, RunInterrupted},
		{"failed beats interrupted", []string{RunInterrupted, RunFailed, RunComplete}, RunFailed},
		{"interrupted beats running", []string{RunRunning, RunInterrupted}, RunInterrupted},
		{"running is not complete", []string{RunComplete, RunRunning}, RunRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var runs []*Run
			var dirs []string
			// Later runs start earlier here, so that earliest/latest are not just first/last.
			for i, s := range tc.statuses {
				r := mergeRun(fmt.Sprintf("k%d", i), "", s, 10-3*i, fmt.Sprintf("v%d", i))
				if s == RunFailed {
					r.Error = "device vanished"
				}
				runs = append(runs, r)
				dirs = append(dirs, fmt.Sprintf("d%d", i))
			}
			runs[0].Tools["only-first"] = "1"
			runs[len(runs)-1].Tools["only-last"] = "2"
			runs[len(runs)-1].Card = &CardState{BlocksErased: 7}
			got, err := Merge(runs, dirs)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want {
				t.Errorf("Status = %q, want %q", got.Status, tc.want)
			}
			last := len(runs) - 1
			if !got.Started.Equal(runs[last].Started) || !got.Finished.Equal(runs[0].Finished) {
				t.Errorf("Started %v Finished %v, want the earliest %v and the latest %v", got.Started, got.Finished, runs[last].Started, runs[0].Finished)
			}
			wantTools := map[string]string{"mkfs.ext4": "mke2fs k0", "only-first": "1", "only-last": "2"}
			if d := cmp.Diff(wantTools, got.Tools); d != "" {
				t.Errorf("Tools (-want +got):\n%s", d)
			}
			if got.Machine.Kernel != "k0" || got.Tool.Version != "k0" {
				t.Errorf("Machine/Tool from %q/%q, want the first run's", got.Machine.Kernel, got.Tool.Version)
			}
			if got.Card == nil || got.Card.BlocksErased != 7 {
				t.Errorf("Card = %+v, want the only one given", got.Card)
			}
			if tc.want == RunFailed && !strings.Contains(got.Error, "d1: device vanished") {
				t.Errorf("Error = %q, want the failed run's error with its directory", got.Error)
			}
			if len(got.Variants) != len(runs) {
				t.Errorf("%d variants, want %d", len(got.Variants), len(runs))
			}
		})
	}
}

func TestMergeKeepsSourceOfMergedInput(t *testing.T) {
	// Merging a merged file again: its variants already say where they ran, and its machine
	// is only its first run's, so the recorded sources stand.
	merged, err := Merge([]*Run{
		mergeRun("6.18.44", "", RunComplete, 0, "ext4", "f2fs!"),
		mergeRun("6.1.0", "tcg", RunComplete, 1, "f2fs"),
	}, []string{"host", "guest"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Merge([]*Run{merged, mergeRun("5.10.0", "kvm", RunComplete, 2, "btrfs")}, []string{"merged", "old"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ext4 ok from host kernel 6.18.44 guest ""`,
		`f2fs ok from guest kernel 6.1.0 guest "qemu tcg"`,
		`btrfs ok from old kernel 5.10.0 guest "qemu kvm"`,
		"m ext4 write=0",
		"m f2fs write=1",
		"m btrfs write=2",
	}
	if d := cmp.Diff(want, describe(again)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestMergeKeepsLabelsOfMergedInput(t *testing.T) {
	// A labelled merge merged again: its variants keep their labels; the label given to the
	// merged file names only the variants its own merge left unlabelled.
	merged, err := MergeLabeled([]*Run{
		mergeRun("6.18.44", "", RunComplete, 0, "ext4"),
		mergeRun("6.18.44", "", RunComplete, 1, "ext4"),
	}, []string{"a", "b"}, []string{"card-a", ""})
	if err != nil {
		t.Fatal(err)
	}
	again, err := MergeLabeled([]*Run{merged, mergeRun("6.18.44", "", RunComplete, 2, "ext4")},
		[]string{"merged", "c"}, []string{"outer", "card-c"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ext4 ok from a kernel 6.18.44 guest "" label "card-a"`,
		`ext4@6.18.44 ok from b kernel 6.18.44 guest "" label "outer"`,
		`ext4@card-c ok from c kernel 6.18.44 guest "" label "card-c"`,
		"m ext4 write=0",
		"m ext4@6.18.44 write=1",
		"m ext4@card-c write=2",
	}
	if d := cmp.Diff(want, describe(again)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// The input runs are not changed: their variants' sources are shared, not rewritten.
	if l := merged.Variants[1].Source.Label; l != "" {
		t.Errorf("the merged input's variant now has label %q", l)
	}
}

func TestMergeErrors(t *testing.T) {
	other := mergeRun("6.1.0", "", RunComplete, 1, "ext4")
	other.Schema = "fsbench.results/v0"
	two := func() []*Run {
		return []*Run{mergeRun("a", "", RunComplete, 0, "ext4"), mergeRun("b", "", RunComplete, 0, "ext4")}
	}
	tests := []struct {
		name   string
		runs   []*Run
		dirs   []string
		labels []string
		want   string
	}{
		{"no runs", nil, nil, nil, "no runs given"},
		{"dirs do not match", []*Run{mergeRun("a", "", RunComplete, 0, "ext4")}, []string{"a", "b"}, nil, "1 runs but 2 directories"},
		{"nil run", []*Run{mergeRun("a", "", RunComplete, 0, "ext4"), nil}, []string{"a", "b"}, nil, "run 2 (b) is missing"},
		{"schema differs", []*Run{mergeRun("6.18.44", "", RunComplete, 0, "ext4"), other}, []string{"a", "b"}, nil, `b has schema "fsbench.results/v0"`},
		{"labels do not match", two(), []string{"a", "b"}, []string{"x"}, "2 runs but 1 labels"},
		{"control character in a label", two(), []string{"a", "b"}, []string{"", "x\ny"}, `the label "x\ny" of b contains a control character`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MergeLabeled(tc.runs, tc.dirs, tc.labels)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCardOf(t *testing.T) {
	tests := []struct {
		name string
		d    *DeviceIdentity
		want string
	}{
		{"none", nil, ""},
		{"sd card", &DeviceIdentity{Name: "mmcblk0", Device: map[string]string{"type": "SD", "name": "SC16G", "manfid": "0x000003", "oemid": "0x5344", "date": "06/2019", "serial": "0x1234abcd"}},
			"SD SC16G manfid 0x000003 oemid 0x5344 06/2019 serial 0x1234abcd"},
		{"disk", &DeviceIdentity{Name: "sda", Device: map[string]string{"vendor": "SanDisk ", "model": "Extreme"}}, "SanDisk Extreme"},
		{"loop", &DeviceIdentity{Name: "loop3", Loop: &Loop{BackingFile: "/tmp/x.img"}}, "image file on loop3"},
		{"bare", &DeviceIdentity{Name: "vdb"}, "vdb"},
	}
	for _, tc := range tests {
		if got := CardOf(tc.d); got != tc.want {
			t.Errorf("%s: CardOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}
