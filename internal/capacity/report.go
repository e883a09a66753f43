package capacity

import (
	"fmt"
	"io"
	"strings"
)

// Explain writes the verdict and how it was reached: what was written where and what came
// back, round by round, so that a verdict is never "damaged" without saying where (f3 issues
// #119, #228).
func Explain(w io.Writer, r *Result) error {
	var b strings.Builder
	head := strings.ToUpper(r.Verdict)
	if r.Class != "" {
		head += " (" + r.Class + ")"
	}
	fmt.Fprintf(&b, "%s: %s: announces %s, ", r.Device, head, size(r.Announced))
	switch r.Verdict {
	case VerdictGenuine:
		fmt.Fprintf(&b, "holds all of it\n")
	default:
		fmt.Fprintf(&b, "holds %s (%d bytes", size(r.Usable), r.Usable)
		if r.Uncertainty > 0 {
			fmt.Fprintf(&b, "; the real end is less than %s above", size(r.Uncertainty))
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(&b, "  %s\n", r.Why)
	fmt.Fprintf(&b, "method: %s\n", r.Method)
	b.WriteString("what was written where, and what came back:\n")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "  %s", s.What)
		if s.Settle != "" {
			fmt.Fprintf(&b, " [%s]", s.Settle)
		}
		b.WriteString("\n")
		if len(s.Wrote) > 0 && len(s.Wrote) <= 2 {
			fmt.Fprintf(&b, "    wrote %s\n", joinSizes(s.Wrote))
		}
		for _, run := range runs(s.Read) {
			fmt.Fprintf(&b, "    %s: %s\n", run.where, run.what)
		}
		if s.Note != "" {
			fmt.Fprintf(&b, "    → %s\n", s.Note)
		}
	}
	fmt.Fprintf(&b, "cost: %s written (probe and restore", size(r.BytesWritten))
	if r.BytesCopied > 0 {
		fmt.Fprintf(&b, "; %s of it past the write cache, each block written back with what it held", size(r.BytesCopied))
	}
	fmt.Fprintf(&b, "), %s read, %.2f s; a genuine card was estimated beforehand at %s written, %s read\n", size(r.BytesRead), r.Seconds, size(r.Estimate.Written), size(r.Estimate.Read))
	if r.Restored {
		b.WriteString("the card holds again what it held before the check\n")
	} else {
		fmt.Fprintf(&b, "THE CARD WAS NOT RESTORED: %s; its undo log %s is kept: run fsbench cleanup\n", r.RestoreError, r.UndoLog)
	}
	fmt.Fprintf(&b, "exit code %d\n", r.ExitCode())
	_, err := io.WriteString(w, b.String())
	return err
}

type readRun struct{ where, what string }

// runs groups consecutive observations that read back alike.
func runs(obs []Observation) []readRun {
	var out []readRun
	for i := 0; i < len(obs); {
		j := i
		d := describe(obs[i])
		for j+1 < len(obs) && describe(obs[j+1]) == d && obs[j+1].State != StateOverwritten {
			j++
		}
		where := "read " + size(obs[i].Offset)
		if j > i {
			where = fmt.Sprintf("read %s … %s (%d blocks)", size(obs[i].Offset), size(obs[j].Offset), j-i+1)
		}
		out = append(out, readRun{where, d})
		i = j + 1
	}
	return out
}

func joinSizes(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = size(x)
	}
	return strings.Join(s, ", ")
}

// VerdictError carries a verdict that is not "genuine" out of a command, with its exit code.
type VerdictError struct{ R *Result }

func (e VerdictError) Error() string {
	if !e.R.Restored && !e.R.NotSaved {
		return fmt.Sprintf("the card %s was NOT put back as it was (%s); its undo log %s is kept: fsbench cleanup replays it", e.R.Device, e.R.RestoreError, e.R.UndoLog)
	}
	return fmt.Sprintf("%s is %s: %s", e.R.Device, e.R.Verdict, e.R.Why)
}

// ExitCode is the result's exit code.
func (e VerdictError) ExitCode() int { return e.R.ExitCode() }
