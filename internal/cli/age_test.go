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
		var opt runner.Options
		var rerr error
		cmd := newRunCmdWith(IO{Out: io.Discard, Err: io.Discard}, func(_ context.Context, cmd *cobra.Command, f runFlags, _ IO) error {
			opt, rerr = runOptions(cmd, f, nil)
			return nil
		})
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
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
