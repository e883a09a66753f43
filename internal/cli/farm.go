package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/runner"
)

// splitTargets reads the --target values: each one target, or a comma list of boards
// (labgrid:a,labgrid:b). A value is split only when every piece is a board, so that a local
// target whose argument holds a comma (a profile file's name) stays whole.
func splitTargets(vals []string) []string {
	var out []string
	for _, v := range vals {
		parts := strings.Split(v, ",")
		board := len(parts) > 1
		for _, p := range parts {
			p = strings.TrimSpace(p)
			if !strings.HasPrefix(p, "labgrid:") && !strings.HasPrefix(p, "ssh://") {
				board = false
			}
		}
		if !board {
			out = append(out, v)
			continue
		}
		for _, p := range parts {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// farmSkipFlags are the run flags a farm does not pass on to each board's run: it gives each
// its own target and results directory.
var farmSkipFlags = map[string]bool{"target": true, "out": true, "force": true, "results": true, "request": true, "stop-on-stdin-eof": true, "stop-on-stdin-silence": true}

// farmArgs are the run flags the user gave, as arguments for each board's `fsbench run`.
func farmArgs(fl *pflag.FlagSet) []string {
	var args []string
	fl.Visit(func(f *pflag.Flag) {
		if farmSkipFlags[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// runFarm runs the matrix on several boards at once and merges their results.
func runFarm(ctx context.Context, cmd *cobra.Command, f runFlags, targets []string, stdio IO, ui *progressUI) error {
	// The configuration is checked here, once, before any board is acquired.
	opt, err := resolveRequest(cmd, f, "", ui.logf)
	if err != nil {
		return err
	}
	card, err := cardName(opt.Config.Card)
	if err != nil {
		return err
	}
	var members []runner.FarmMember
	for _, t := range targets {
		spec, err := plan.ParseTarget(t)
		if err != nil {
			return UsageError{fmt.Errorf("--target: %w", err)}
		}
		members = append(members, runner.FarmMember{Name: spec.Short(), Target: spec})
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	ui.logf("farm: %d boards side by side: %s", len(members), strings.Join(names, ", "))
	opt.Log = ui.logf
	out, err := runner.RunFarm(ctx, runner.FarmOptions{Options: opt, Members: members, Args: farmArgs(cmd.Flags())})
	ui.finish()
	if out != nil && out.Run != nil {
		fmt.Fprintf(stdio.Out, "\neach board's own results: %s/places/NAME\n", out.Dir)
	}
	return finishRun(ctx, out, err, card, stdio)
}
