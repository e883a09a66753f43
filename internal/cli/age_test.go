package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/runner"
)

func TestRunAgeFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: ""},
		{args: []string{"--age", "80%"}, want: "80%"},
		{args: []string{"--age", "year-of-updates"}, want: "year-of-updates"},
		{args: []string{"--age", "80"}, wantErr: "unknown profile"},
		{args: []string{"--age", "updates:99%"}, wantErr: "between 1 % and 95 %"},
	}
	for _, tc := range tests {
		opt, rerr := parseRunOptions(t, tc.args)
		if tc.wantErr != "" {
			var ue UsageError
			if rerr == nil || !strings.Contains(rerr.Error(), tc.wantErr) || !errors.As(rerr, &ue) {
				t.Errorf("%v: err = %v, want a usage error mentioning %q", tc.args, rerr, tc.wantErr)
			}
			continue
		}
		if rerr != nil || opt.Config.Age != tc.want {
			t.Errorf("%v: age %q, %v; want %q", tc.args, opt.Config.Age, rerr, tc.want)
		}
	}
}

// parseRunOptions parses a run command line into the engine's options, as run does.
func parseRunOptions(t *testing.T, args []string) (runner.Options, error) {
	t.Helper()
	var opt runner.Options
	var rerr error
	cmd := newRunCmdWith(IO{Out: io.Discard, Err: io.Discard}, func(_ context.Context, cmd *cobra.Command, f runFlags, _ IO) error {
		opt, rerr = runOptions(cmd, f, nil)
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return opt, rerr
}

func TestRunCardStateFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: ""}, // fresh, the default, is left out of results files
		{args: []string{"--card-state", "fresh"}, want: ""},
		{args: []string{"--card-state", "used"}, want: "used"},
		{args: []string{"--card-state", "old"}, wantErr: "use fresh or used"},
	}
	for _, tc := range tests {
		opt, err := parseRunOptions(t, tc.args)
		if tc.wantErr != "" {
			var ue UsageError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) {
				t.Errorf("%v: err = %v, want a usage error mentioning %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || opt.Config.CardState != tc.want {
			t.Errorf("%v: card state %q, %v; want %q", tc.args, opt.Config.CardState, err, tc.want)
		}
	}
}
