package suites

import (
	"context"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// sizedRep is a repetition that holds one suite's sizes (or none: nil).
type sizedRep struct {
	Rep   // nil: a test that calls anything else panics
	sizes map[string]any
}

func (r sizedRep) Params(suite string) any { return r.sizes[suite] }

type sizes struct{ Files int }

// TestWithParams: a test gets the run's sizes of its own suite, and the defaults when the run
// has none (an Env a test built) or holds another type under the name.
func TestWithParams(t *testing.T) {
	def := func() *sizes { return &sizes{Files: 16} }
	var got int
	run := WithParams("s", def, func(_ context.Context, _ Rep, p *sizes) ([]results.Measurement, error) {
		got = p.Files
		return nil, nil
	})
	for _, tc := range []struct {
		name string
		held map[string]any
		want int
	}{
		{"the run's sizes", map[string]any{"s": &sizes{Files: 2048}, "other": &sizes{Files: 3}}, 2048},
		{"none: the defaults", nil, 16},
		{"a nil pointer: the defaults", map[string]any{"s": (*sizes)(nil)}, 16},
		{"another suite's type: the defaults", map[string]any{"s": &struct{ Files int }{Files: 5}}, 16},
	} {
		got = 0
		if _, err := run(context.Background(), sizedRep{sizes: tc.held}); err != nil || got != tc.want {
			t.Errorf("%s: files %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}
