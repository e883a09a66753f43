//go:build benchmath

// This file checks Compare and MedianCI against golang.org/x/perf/benchmath itself. It needs
// github.com/aclements/go-moremath in go.sum, which the module does not list yet, so it only
// builds with the tag:
//
//	go test -tags benchmath -modfile=/path/to/go.mod-with-moremath ./internal/stats/
package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/perf/benchmath"
)

func TestAgainstBenchmath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	th := &benchmath.DefaultThresholds
	for i := 0; i < 1000; i++ {
		n1, n2 := 1+rng.IntN(12), 1+rng.IntN(12)
		if i%10 == 0 {
			n1, n2 = 20+rng.IntN(40), 20+rng.IntN(40)
		}
		gen := func(n int, shift float64) []float64 {
			xs := make([]float64, n)
			for j := range xs {
				xs[j] = shift + rng.NormFloat64()
				if i%3 == 0 {
					xs[j] = math.Round(xs[j] * 2) // ties
				}
			}
			return xs
		}
		a, b := gen(n1, 0), gen(n2, rng.Float64()*2)
		c := Compare(a, b, 0.05)
		want := benchmath.AssumeNothing.Compare(benchmath.NewSample(append([]float64(nil), a...), th), benchmath.NewSample(append([]float64(nil), b...), th))
		// With ties go-moremath's tie-conditional distribution differs from the exact
		// permutation distribution Compare uses (checked by enumeration in
		// TestCompareTiesExact), so only the medians' CIs are compared then.
		tol := 1e-9
		if i%3 == 0 {
			tol = math.Inf(1)
		}
		if math.Abs(c.P-math.Min(1, want.P)) > tol {
			t.Fatalf("Compare(%v, %v).P = %v, benchmath %v", a, b, c.P, want.P)
		}
		if !math.IsInf(tol, 1) && (c.Delta() == "~") != (want.FormatDelta(1, 2) == "~") {
			t.Fatalf("significance differs for %v, %v", a, b)
		}
		// Above 20 samples go-moremath computes binomial coefficients through Lgamma, whose
		// rounding breaks the tie between two equally likely order statistics either way, and
		// above 30 it approximates the binomial by a normal distribution; MedianCI stays exact
		// (left on ties), so bounds may differ by one order statistic there.
		for _, conf := range []float64{0.95, 0.99} {
			if n1 > 20 {
				break
			}
			iv := MedianCI(a, conf)
			s := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), a...), th), conf)
			if math.Abs(iv.Median-s.Center) > 1e-12*math.Max(1, math.Abs(s.Center)) || iv.Lo != s.Lo || iv.Hi != s.Hi {
				t.Fatalf("MedianCI(%v, %v) = %+v, benchmath %+v", a, conf, iv, s)
			}
		}
	}
}

func TestReferenceValues(t *testing.T) {
	th := &benchmath.DefaultThresholds
	for _, p := range [][2][]float64{
		{{1, 2, 3, 4, 5, 6}, {1.5, 2.5, 3.5, 4.5, 5.5, 6.5}},
		{{1, 2, 2}, {2, 3, 3}},
		{{1, 2, 3}, {4, 5, 6, 7}},
	} {
		c := benchmath.AssumeNothing.Compare(benchmath.NewSample(p[0], th), benchmath.NewSample(p[1], th))
		t.Logf("%v vs %v: p=%v %v", p[0], p[1], c.P, c.Warnings)
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample([]float64{1, 2, 3, 4, 5}, th), 0.95)
	t.Logf("CI of 1..5: %+v", s)
}
