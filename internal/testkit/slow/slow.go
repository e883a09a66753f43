// Package slow marks the tests that boot an emulator (the QEMU guest, an emulated ARM board) or
// start a farm (a labgrid coordinator with its places, LAVA's dispatcher). They take minutes
// each and take turns on one emulator lock, so they ran make test up to 48 minutes: make test
// leaves them out, make test-slow runs them (CI runs both). One mechanism, used everywhere: the
// environment variable Env, checked by Need at the top of each such test. It is for tests only;
// it lives outside a _test.go file because tests of several packages share it.
package slow

import (
	"os"
	"testing"
)

// Env is the environment variable that lets the slow tests run: FSBENCH_SLOW=1.
const Env = "FSBENCH_SLOW"

// Marker starts the reason a slow test gives when it is left out; the test command's summary
// (tools/internal/testsum) gathers the tests whose skip carries it into one line.
const Marker = "slow test"

// Command is what runs the slow tests, named in every skip.
const Command = "make test-slow"

// Enabled reports whether the slow tests run (FSBENCH_SLOW=1, or full).
func Enabled() bool { return os.Getenv(Env) == "1" || Full() }

// Full reports whether the slow tests run whole (FSBENCH_SLOW=full, make test-slow-full): a few
// of them run a smaller version of themselves otherwise, so that make test-slow, which CI runs
// beside make test, stays within its time (the emulators take turns: their minutes add up).
func Full() bool { return os.Getenv(Env) == "full" }

// Reduced logs, unless the slow tests run whole, that t runs a smaller version of itself and
// what it leaves out (the test command's summary lists these lines), and reports whether it is
// reduced.
func Reduced(t testing.TB, leftOut string) bool {
	t.Helper()
	if Full() {
		return false
	}
	t.Logf("reduced: %s (%s=full runs it: make test-slow-full)", leftOut, Env)
	return true
}

// Need skips t, naming what makes it slow, unless the slow tests run.
func Need(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skip(Reason(what))
	}
}

// Reason is the skip message of a slow test left out: the marker, what makes it slow, and how
// to run it.
func Reason(what string) string {
	return Marker + " (" + what + "): " + Env + "=1 runs it (" + Command + ")"
}
