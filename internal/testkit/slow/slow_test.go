package slow

import (
	"fmt"
	"strings"
	"testing"
)

// TestReasonNamesTheWayToRunIt: the test command's summary finds left-out tests by the marker,
// and a reader needs the command that runs them.
func TestReasonNamesTheWayToRunIt(t *testing.T) {
	r := Reason("boots the QEMU guest")
	for _, want := range []string{Marker, "boots the QEMU guest", Env + "=1", Command} {
		if !strings.Contains(r, want) {
			t.Errorf("Reason = %q, want it to contain %q", r, want)
		}
	}
}

// skipRecorder is a testing.TB whose Skip records its message instead of ending the test: the
// left-out skip of a real subtest would be listed by make test's summary as a slow test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Helper()          {}
func (r *skipRecorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...) }

// TestNeed: left out unless FSBENCH_SLOW=1, run when it is.
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		env     string
		skipped bool
	}{{"", true}, {"0", true}, {"1", false}, {"full", false}} {
		t.Run("FSBENCH_SLOW="+tc.env, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			r := &skipRecorder{TB: t}
			Need(r, "boots nothing")
			if got := r.skipped != ""; got != tc.skipped {
				t.Errorf("skipped = %v (%q), want %v", got, r.skipped, tc.skipped)
			}
			if tc.skipped && r.skipped != Reason("boots nothing") {
				t.Errorf("skip message %q, want %q", r.skipped, Reason("boots nothing"))
			}
		})
	}
}

// TestReduced: a slow test runs reduced, and says so with what it leaves out, unless the slow
// tests run whole (FSBENCH_SLOW=full).
func TestReduced(t *testing.T) {
	for _, tc := range []struct {
		env     string
		reduced bool
	}{{"1", true}, {"full", false}} {
		t.Run(Env+"="+tc.env, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			r := &logRecorder{TB: t}
			if got := Reduced(r, "the second card"); got != tc.reduced {
				t.Errorf("Reduced = %v, want %v", got, tc.reduced)
			}
			if tc.reduced && !strings.HasPrefix(r.logged, "reduced: the second card") {
				t.Errorf("logged %q, want the reduced line the summary gathers", r.logged)
			}
			if !tc.reduced && r.logged != "" {
				t.Errorf("logged %q when running whole", r.logged)
			}
		})
	}
}

type logRecorder struct {
	testing.TB
	logged string
}

func (r *logRecorder) Helper()                         {}
func (r *logRecorder) Logf(format string, args ...any) { r.logged = fmt.Sprintf(format, args...) }
