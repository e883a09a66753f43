package plan

import (
	"math"
	"strconv"
)

// FormatFigure shows a measured figure as people read it: three significant digits, never an
// exponent (115557 stays "115557", 0.01234 is "0.0123", 0.861 is "0.861").
func FormatFigure(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2+int(math.Ceil(-math.Log10(a))), 64)
	}
}
