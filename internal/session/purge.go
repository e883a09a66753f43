package session

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsbench/fsbench/internal/plan"
)

// PurgeRun removes, on a board, a run directory a host left there (--remote-dir/runs/ID), if it
// carries fsbench's marks, and says why not otherwise: its request.json names the directory as
// the run's work directory and its res/ as the results (what the host wrote when it handed the
// run over), or its res/ holds fsbench's results marker (what the board's fsbench wrote). A
// directory without them (the user's, a symlink, anything else that ended up under runs/) is
// left alone, and so is one with something mounted inside.
func PurgeRun(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || filepath.Base(filepath.Dir(dir)) != "runs" {
		return fmt.Errorf("left %s alone: not a run directory of fsbench's (a directory in runs/)", dir)
	}
	if !isRunDir(dir) {
		return fmt.Errorf("left %s alone: it does not carry fsbench's marks (a request.json naming it, or %s in res/)", dir, MarkerName)
	}
	under, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	if len(under) > 0 {
		return fmt.Errorf("left %s alone: %s is mounted inside it (fsbench cleanup unmounts what a killed run left)", dir, under[0])
	}
	return os.RemoveAll(dir) // follows no symlink
}

// isRunDir reports whether dir carries fsbench's marks of a board run.
func isRunDir(dir string) bool {
	regular := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	if p := filepath.Join(dir, "request.json"); regular(p) {
		var r plan.Request
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &r) == nil &&
			filepath.Clean(r.Work) == dir && filepath.Clean(r.Out) == filepath.Join(dir, "res") {
			return true
		}
	}
	res := filepath.Join(dir, "res")
	if fi, err := os.Lstat(res); err != nil || !fi.IsDir() {
		return false
	}
	p := filepath.Join(res, MarkerName)
	if !regular(p) {
		return false
	}
	var m marker
	b, err := os.ReadFile(p)
	return err == nil && json.Unmarshal(b, &m) == nil && m.Fsbench == "results directory"
}
