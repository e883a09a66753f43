package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// saveRun writes a run on kernel (in a TCG guest when guest is set) to a new results
// directory: every variant named ran (write and mount, three repetitions), those in skipped
// were skipped.
func saveRun(t *testing.T, kernel string, guest bool, ran, skipped []string) string {
	t.Helper()
	r := &results.Run{
		Schema: results.Schema, Status: results.RunComplete,
		Started: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Machine: results.Machine{Hostname: "bench", Arch: "amd64", Kernel: kernel},
		Target:  results.Target{Kind: "image", Device: "/dev/loop3", SizeBytes: 512 << 20},
	}
	if guest {
		r.Guest = &results.Guest{KernelRelease: kernel, Accel: "tcg"}
	}
	for _, name := range ran {
		r.Variants = append(r.Variants, results.Variant{Name: name, FS: name, Status: results.OK})
		for rep := 1; rep <= 3; rep++ {
			r.Measurements = append(r.Measurements,
				results.Measurement{Variant: name, Test: "write", Rep: rep, Status: results.OK, Value: results.Float(2), Unit: "s", WallSeconds: 2, LogicalBytes: 50e6},
				results.Measurement{Variant: name, Test: "mount", Rep: rep, Status: results.OK, Value: results.Float(0.01), Unit: "s"})
		}
	}
	for _, name := range skipped {
		r.Variants = append(r.Variants, results.Variant{Name: name, FS: name, Status: results.Skipped, Reason: "this kernel has no " + name})
	}
	dir := t.TempDir()
	if err := results.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMergeCmd(t *testing.T) {
	host := saveRun(t, "6.18.44", false, []string{"ext4"}, []string{"f2fs", "vfat"})
	guest := saveRun(t, "6.1.0-56-amd64", true, []string{"f2fs", "vfat"}, nil)
	// Three cards, one kernel: the Pandora study's comparison.
	card1 := saveRun(t, "6.18.44", false, []string{"ext4", "vfat"}, nil)
	card2 := saveRun(t, "6.18.44", false, []string{"ext4", "vfat"}, nil)
	card3 := saveRun(t, "6.18.44", false, []string{"ext4", "vfat"}, nil)
	// occupied is an earlier fsbench results directory: its marker and a results.json.
	occupied := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".fsbench"), []byte(`{"fsbench": "results directory"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	kept := occupied()
	// users is a directory of the user's: files, no marker.
	users := t.TempDir()
	for _, f := range []string{"results.json", "thesis.tex"} {
		if err := os.WriteFile(filepath.Join(users, f), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noOut := filepath.Join(t.TempDir(), "never")
	hostGuest := []string{
		"ext4 ok " + host + " 6.18.44  ",
		"f2fs ok " + guest + " 6.1.0-56-amd64 qemu tcg ",
		"vfat ok " + guest + " 6.1.0-56-amd64 qemu tcg ",
	}
	tests := []struct {
		name    string
		args    []string
		out     string   // the output directory, when the merge must succeed
		want    []string // then: name, status, dir, kernel, guest and label of each variant
		usage   bool     // the error must be a UsageError
		errText string
		// created is the output directory a failed merge must not leave behind.
		created string
	}{
		{name: "new nested directory", out: filepath.Join(t.TempDir(), "a", "merged"),
			args: []string{host, filepath.Join(guest, "results.json")}, want: hostGuest},
		{name: "existing results.json replaced with --force", out: occupied(),
			args: []string{host, guest, "--force"}, want: hostGuest},
		{name: "labels by directory or results.json", out: t.TempDir(),
			args: []string{"--label", host + "=sandisk-64G", "--label", filepath.Join(guest, "results.json") + "=sandisk-16G", host, guest + "/"},
			want: []string{
				"ext4 ok " + host + " 6.18.44  sandisk-64G",
				"f2fs ok " + guest + " 6.1.0-56-amd64 qemu tcg sandisk-16G",
				"vfat ok " + guest + " 6.1.0-56-amd64 qemu tcg sandisk-16G",
			}},
		// This failed before labels: the third f2fs had nowhere to go.
		{name: "the same guest run three times, unlabelled", out: t.TempDir(),
			args: []string{host, guest, guest, guest},
			want: append(hostGuest[:3:3],
				"f2fs@6.1.0-56-amd64 ok "+guest+" 6.1.0-56-amd64 qemu tcg ",
				"vfat@6.1.0-56-amd64 ok "+guest+" 6.1.0-56-amd64 qemu tcg ",
				"f2fs@6.1.0-56-amd64#2 ok "+guest+" 6.1.0-56-amd64 qemu tcg ",
				"vfat@6.1.0-56-amd64#2 ok "+guest+" 6.1.0-56-amd64 qemu tcg ")},
		{name: "three cards on one kernel, one unlabelled", out: t.TempDir(),
			args: []string{"--label", card1 + "=sandisk-64G", "--label", card3 + "=micro-16G", card1, card2, card3},
			want: []string{
				"ext4 ok " + card1 + " 6.18.44  sandisk-64G",
				"vfat ok " + card1 + " 6.18.44  sandisk-64G",
				"ext4@6.18.44 ok " + card2 + " 6.18.44  ",
				"vfat@6.18.44 ok " + card2 + " 6.18.44  ",
				"ext4@micro-16G ok " + card3 + " 6.18.44  micro-16G",
				"vfat@micro-16G ok " + card3 + " 6.18.44  micro-16G",
			}},
		{name: "label without a run", args: []string{"-o", noOut, "--label", "sandisk", host, guest},
			usage: true, errText: `--label "sandisk": write RUN=NAME`},
		{name: "label without a name", args: []string{"-o", noOut, "--label", host + "=", host, guest},
			usage: true, errText: "gives no name"},
		{name: "label of no run given", args: []string{"-o", noOut, "--label", card1 + "=sandisk", host, guest},
			usage: true, errText: "is none of the runs given", created: noOut},
		{name: "run labelled twice", args: []string{"-o", noOut, "--label", host + "=a", "--label", host + "/results.json=b", host, guest},
			usage: true, errText: `is labelled twice, "a" and "b"`, created: noOut},
		{name: "earlier results kept without --force", args: []string{"-o", kept, host, guest},
			usage: true, errText: "add --force"},
		{name: "a directory of the user's, even with --force", args: []string{"-o", users, "--force", host, guest},
			usage: true, errText: "files fsbench did not write"},
		{name: "one input", args: []string{"-o", t.TempDir(), host}, usage: true, errText: "at least two"},
		{name: "no -o", args: []string{host, guest}, usage: true, errText: "-o DIR"},
		{name: "missing input", args: []string{"-o", noOut, host, filepath.Join(t.TempDir(), "none")},
			errText: "run 2 (", created: noOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.out != "" {
				args = append([]string{"-o", tc.out}, args...)
			}
			var stdout, stderr bytes.Buffer
			cmd := newMergeCmd(IO{Out: &stdout, Err: &stderr})
			cmd.SetArgs(args)
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.out == "" {
				var ue UsageError
				if err == nil || !strings.Contains(err.Error(), tc.errText) || errors.As(err, &ue) != tc.usage {
					t.Fatalf("error %v (usage error: %v), want one containing %q (usage error: %v)", err, errors.As(err, &ue), tc.errText, tc.usage)
				}
				if b, _ := os.ReadFile(filepath.Join(kept, "results.json")); string(b) != "keep me" {
					t.Error("results.json replaced without --force")
				}
				if entries, _ := os.ReadDir(users); len(entries) != 2 {
					t.Errorf("the user's directory now holds %d entries, want its 2 files", len(entries))
				}
				if _, err := os.Stat(tc.created); tc.created != "" && err == nil {
					t.Errorf("the failed merge created %s", tc.created)
				}
				return
			}
			if err != nil {
				t.Fatalf("merge: %v\n%s", err, stderr.String())
			}
			merged, err := results.Load(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range merged.Variants {
				got = append(got, v.Name+" "+v.Status+" "+v.Source.Dir+" "+v.Source.Kernel+" "+v.Source.Guest+" "+v.Source.Label)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("merged variants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			page, err := os.ReadFile(filepath.Join(tc.out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(tc.out, "results.csv")); err != nil {
				t.Error(err)
			}
			if !strings.Contains(stdout.String(), filepath.Join(tc.out, "results.json")+"\n"+filepath.Join(tc.out, "report.html")+"\n") {
				t.Errorf("output does not end with the files written:\n%s", stdout.String())
			}
			if strings.Contains(stdout.String(), "skipped variants") {
				t.Errorf("every skipped variant was filled, yet some are listed:\n%s", stdout.String())
			}
			// Each row says where it ran: the kernel when kernels differ, the label when the
			// runs have labels.
			var wantOut, wantPage []string
			if merged.Variants[0].Source.Kernel != merged.Variants[len(merged.Variants)-1].Source.Kernel {
				wantOut = append(wantOut, "kernel", "6.1.0-56-amd64 (qemu tcg)", "6.18.44 (host)")
				wantPage = append(wantPage, "<th>ran on</th>", "6.1.0-56-amd64 (qemu tcg)")
			}
			for _, v := range merged.Variants {
				if l := v.Source.Label; l != "" {
					wantOut = append(wantOut, "merged from ", "variant", " run ", l)
					wantPage = append(wantPage, "<th>run</th>", "<b>"+l+"</b>")
				}
			}
			for _, w := range wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range wantPage {
				if !strings.Contains(string(page), w) {
					t.Errorf("report.html lacks %q", w)
				}
			}
		})
	}
}

// TestMergeWarnsOnCalibration: runs whose card profiles carry different calibrations merge,
// with a warning that names the card and says which run's model each variant was rated on.
func TestMergeWarnsOnCalibration(t *testing.T) {
	calibrated := func(dir string, v int) string {
		r, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		r.CardCalibrations = map[string]int{"sd-typical": v}
		if err := results.Save(dir, r); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := calibrated(saveRun(t, "6.18.44", false, []string{"ext4"}, nil), 1)
	b := calibrated(saveRun(t, "6.18.44", false, []string{"xfs"}, nil), 2)
	var stdout, stderr bytes.Buffer
	cmd := newMergeCmd(IO{Out: &stdout, Err: &stderr})
	cmd.SetArgs([]string{"-o", t.TempDir(), a, b})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	if want := "warning: card sd-typical: calibration 1 in " + a + ", 2 in " + b; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want the warning %q", stderr.String(), want)
	}
}
