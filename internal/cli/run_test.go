package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/fsbench/fsbench/internal/runner"
)

// resolve parses args as `fsbench run` would and returns the resolved configuration.
func resolve(t *testing.T, args ...string) (plan.Config, error) {
	t.Helper()
	var cfg plan.Config
	var rerr error
	cmd := newRunCmdWith(IO{Out: io.Discard, Err: io.Discard}, func(_ context.Context, cmd *cobra.Command, f runFlags, _ IO) error {
		var opt runner.Options
		opt, rerr = resolveRequest(cmd, f, "", nil)
		cfg = opt.Config
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		return cfg, err
	}
	return cfg, rerr
}

func TestResolveConfig(t *testing.T) {
	dir := t.TempDir()
	matrix := filepath.Join(dir, "matrix.toml")
	os.WriteFile(matrix, []byte("size = \"512M\"\nrepetitions = 5\n\n[[variant]]\nfs = [\"ext4\", \"xfs\"]\nmount = \"noatime\"\n"), 0o644)
	// A probe of a card with 16 KiB pages and 4 MiB AUs, as fsbench probe writes it.
	pr := probe.Result{Schema: probe.Schema, SizeBytes: 1 << 30}
	pr.Estimates.AU = probe.Estimate{Value: 4 << 20, Confidence: probe.High}
	pr.Estimates.ReadPage = probe.Estimate{Value: 16 << 10, Confidence: probe.High}
	probeJSON := filepath.Join(dir, "probe.json")
	if b, err := json.Marshal(pr); err != nil {
		t.Fatal(err)
	} else {
		os.WriteFile(probeJSON, b, 0o644)
	}
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c plan.Config)
		wantErr string
	}{
		{name: "tuned variants from a probe", args: []string{"--tuned", dir, "--variants", "ext4,ext4-tuned"}, check: func(t *testing.T, c plan.Config) {
			if len(c.Variants) != 2 || c.Variants[1].Name != "ext4-tuned" || !strings.Contains(strings.Join(c.Variants[1].MkfsArgs, " "), "stride=4,stripe-width=1024") {
				t.Errorf("tuned: %+v", c.Variants)
			}
		}},
		{name: "tuned without a probe", args: []string{"--tuned", filepath.Join(dir, "nope")}, wantErr: "fsbench probe"},
		{name: "defaults", check: func(t *testing.T, c plan.Config) {
			if c.Size != 1<<30 || c.Repetitions != plan.DefaultRepetitions || len(c.Variants) != 11 || c.Timeout.Duration != 10*time.Minute {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "flags", args: []string{"--size", "512M", "-n", "2", "--warmup", "--tests", "mkfs, read", "--timeout", "90s", "--variants", "xfs,ext4"},
			check: func(t *testing.T, c plan.Config) {
				if c.Size != 512<<20 || c.Repetitions != 2 || !c.Warmup || strings.Join(c.Tests, ",") != "mkfs,read" || c.Timeout.Duration != 90*time.Second {
					t.Errorf("flags not applied: %+v", c)
				}
				if len(c.Variants) != 2 || c.Variants[0].Name != "xfs" || c.Variants[1].Name != "ext4" {
					t.Errorf("--variants keeps the order given: %+v", c.Variants)
				}
			}},
		{name: "config file", args: []string{"-c", matrix}, check: func(t *testing.T, c plan.Config) {
			if c.Size != 512<<20 || c.Repetitions != 5 || len(c.Variants) != 2 || c.Variants[1].FS != "xfs" || c.Variants[1].MountOptions != "noatime" {
				t.Errorf("config: %+v", c)
			}
		}},
		{name: "flag overrides config", args: []string{"-c", matrix, "-n", "1"}, check: func(t *testing.T, c plan.Config) {
			if c.Repetitions != 1 || c.Size != 512<<20 {
				t.Errorf("override: %+v", c)
			}
		}},
		{name: "dataset made absolute", args: []string{"--dataset", "rel/tree"}, check: func(t *testing.T, c plan.Config) {
			if !filepath.IsAbs(c.Dataset) {
				t.Errorf("dataset %q not absolute", c.Dataset)
			}
		}},
		{name: "preset", args: []string{"--preset", "mount-options", "-n", "1"}, check: func(t *testing.T, c plan.Config) {
			if len(c.Variants) < 4 || c.Repetitions != 1 {
				t.Errorf("preset mount-options: %d variants, %d repetitions", len(c.Variants), c.Repetitions)
			}
		}},
		{name: "unknown preset", args: []string{"--preset", "nope"}, wantErr: `unknown preset "nope"`},
		{name: "preset and config", args: []string{"--preset", "mount-options", "-c", matrix}, wantErr: "not both"},
		{name: "bad size", args: []string{"--size", "lots"}, wantErr: "--size"},
		{name: "bad timeout", args: []string{"--timeout", "soon"}, wantErr: "--timeout"},
		{name: "unknown variant", args: []string{"--variants", "ext5"}, wantErr: `no variant "ext5"`},
		{name: "unknown test", args: []string{"--tests", "reed"}, wantErr: "reed"},
		{name: "zero repetitions", args: []string{"-n", "0"}, wantErr: "repetitions"},
		{name: "test of another suite", args: []string{"--suite", "bonnie", "--tests", "write"}, wantErr: `suite bonnie has no test "write"`},
		{name: "missing config", args: []string{"-c", filepath.Join(dir, "nope.toml")}, wantErr: "nope.toml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := resolve(t, tc.args...)
			if tc.wantErr != "" {
				var ue UsageError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"list"}, ExitOK},
		{[]string{"run", "--nope"}, ExitUsage},
		{[]string{"frobnicate"}, ExitUsage},
		{[]string{"cleanup", "extra"}, ExitUsage},
	}
	for _, tc := range tests {
		if got := Main(context.Background(), tc.args, IO{Out: io.Discard, Err: io.Discard}); got != tc.want {
			t.Errorf("Main(%v) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestCardName(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.toml")
	clash := filepath.Join(dir, "clash.toml")
	b, err := os.ReadFile("../flash/profiles/sd-cheap-old.toml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(own, []byte(strings.Replace(string(b), `name = "sd-cheap-old"`, `name = "my-card"`, 1)), 0o644)
	os.WriteFile(clash, []byte(strings.Replace(string(b), `name = "sd-cheap-old"`, `name = "sd-typical"`, 1)), 0o644)
	tests := []struct {
		in, want, wantErr string
	}{
		{"", "", ""},
		{"emmc", "emmc", ""},
		{"../flash/profiles/sd-cheap-old.toml", "sd-cheap-old", ""}, // the built-in, as a file
		{own, "my-card", ""},
		{clash, "", "differs from it"},
		{filepath.Join(dir, "missing.toml"), "", "missing.toml"},
	}
	for _, tc := range tests {
		got, err := cardName(tc.in)
		if tc.wantErr != "" {
			var ue UsageError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) {
				t.Errorf("cardName(%q) error = %v, want a usage error mentioning %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("cardName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// The LAVA test definition shipped in contrib/lava passes flags this fsbench has (it is run for
// real by LAVA's dispatcher in internal/lavalab's test; this check needs no LAVA).
func TestLAVADefinition(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "lava", "fsbench.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	def := string(b)
	for _, want := range []string{"format: Lava-Test Test Definition 1.0", "params:", "run:", "steps:", "DEVICE:", "RESULTS:",
		"mktemp -d", "lava-test-case fsbench-run --result fail"} {
		if !strings.Contains(def, want) {
			t.Errorf("the definition lacks %q", want)
		}
	}
	// The docs name the test cases as the export writes them (its golden file).
	golden, err := os.ReadFile(filepath.Join("..", "export", "testdata", "lava-commands.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(golden), "lava-test-case fsbench_ext4_mkfs ") {
		t.Errorf("the export's cases are no longer fsbench_VARIANT_TEST: %.60s", golden)
	}
	// docs/farms.md explains them; the README may only point there, never name them otherwise.
	for _, doc := range []struct {
		path    string
		mustSay bool
	}{{filepath.Join("..", "..", "docs", "farms.md"), true}, {filepath.Join("..", "..", "README.md"), false}} {
		b, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		if (doc.mustSay && !strings.Contains(string(b), "fsbench_VARIANT_TEST")) || strings.Contains(string(b), "VARIANT/TEST") {
			t.Errorf("%s does not name the test cases fsbench_VARIANT_TEST, as the export does", doc.path)
		}
	}
	// A step is a YAML plain scalar: ": " would make it a mapping, " #" start a comment.
	for _, line := range strings.Split(def, "\n") {
		if step, ok := strings.CutPrefix(line, "    - "); ok && (strings.Contains(step, ": ") || strings.Contains(step, " #")) {
			t.Errorf("a step that YAML does not read as one string: %s", step)
		}
	}
	cmds := map[string]*cobra.Command{"run": newRunCmd(IO{Out: io.Discard, Err: io.Discard}), "export": newExportCmd(IO{Out: io.Discard, Err: io.Discard})}
	flag := regexp.MustCompile(`(?:^|\s|")(--?[a-z][a-z-]*)`)
	for _, line := range strings.Split(def, "\n") {
		for name, cmd := range cmds {
			_, rest, ok := strings.Cut(line, `"${FSBENCH}" `+name+" ")
			if !ok {
				continue
			}
			rest, _, _ = strings.Cut(rest, "||")
			for _, m := range flag.FindAllStringSubmatch(rest, -1) {
				long, f := strings.HasPrefix(m[1], "--"), strings.TrimLeft(m[1], "-")
				if long && cmd.Flags().Lookup(f) == nil || !long && (len(f) != 1 || cmd.Flags().ShorthandLookup(f) == nil) {
					t.Errorf("fsbench %s has no %s (the definition passes it)", name, m[1])
				}
			}
		}
	}
}
