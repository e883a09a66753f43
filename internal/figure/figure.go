// Package figure is fsbench's one way to print a measured figure: every report, summary and
// log line shows a value with the same digits, so that one figure never reads differently in
// two places of the same page.
package figure

import (
	"math"
	"strconv"
)

// maxDecimals bounds the decimals of a tiny figure: below 10^-9 nothing fsbench measures
// (seconds, MB/s, IOPS, ratios) is more than noise, and the text must stay short.
const maxDecimals = 9

// Format shows a measured figure as people read it: three significant digits, never an
// exponent (115557 stays "115557", 12.345 is "12.3", 1.5 is "1.50", 0.01234 is "0.0123").
// Trailing zeros are kept: they say how many digits are significant.
func Format(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "NaN"
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', min(2+int(math.Ceil(-math.Log10(a))), maxDecimals), 64)
	}
}

// Ratio shows how many times one figure is another ("2.81×", "16.8×"): the same three
// significant digits as Format, and the multiplication sign. It is the one way a ratio is
// printed (ratings' "× the best", verdicts' "× faster than", aging's "× worse"), so that one
// ratio never reads 1.9× in the verdict and 1.87x in a table.
func Ratio(v float64) string { return Format(v) + "×" }
