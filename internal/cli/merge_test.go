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
	// occupied is a directory that already holds a results.json.
	occupied := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	kept := occupied()
	noOut := filepath.Join(t.TempDir(), "never")
	tests := []struct {
		name    string
		args    []string
		out     string // the output directory, when the merge must succeed
		usage   bool   // the error must be a UsageError
		errText string
		// created is the output directory a failed merge must not leave behind.
		created string
	}{
		{name: "new nested directory", out: filepath.Join(t.TempDir(), "a", "merged"),
			args: []string{host, filepath.Join(guest, "results.json")}},
		{name: "existing results.json replaced with --force", out: occupied(),
			args: []string{host, guest, "--force"}},
		{name: "existing results.json kept without --force", args: []string{"-o", kept, host, guest},
			usage: true, errText: "pass --force"},
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
				got = append(got, v.Name+" "+v.Status+" "+v.Source.Dir+" "+v.Source.Kernel+" "+v.Source.Guest)
			}
			want := []string{
				"ext4 ok " + host + " 6.18.44 ",
				"f2fs ok " + guest + " 6.1.0-56-amd64 qemu tcg",
				"vfat ok " + guest + " 6.1.0-56-amd64 qemu tcg",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("merged variants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			page, err := os.ReadFile(filepath.Join(tc.out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), "<th>ran on</th>") || !strings.Contains(string(page), "6.1.0-56-amd64 (qemu tcg)") {
				t.Error("report.html does not say where each variant ran")
			}
			if _, err := os.Stat(filepath.Join(tc.out, "results.csv")); err != nil {
				t.Error(err)
			}
			for _, w := range []string{
				"variant  kernel", "f2fs     6.1.0-56-amd64 (qemu tcg)", "ext4     6.18.44 (host)",
				filepath.Join(tc.out, "results.json") + "\n" + filepath.Join(tc.out, "report.html") + "\n",
			} {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			if strings.Contains(stdout.String(), "skipped variants") {
				t.Errorf("the guest filled every skipped variant, yet some are listed:\n%s", stdout.String())
			}
		})
	}
}
