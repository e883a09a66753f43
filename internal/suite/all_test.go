package suite_test

// The suites whose tests this package runs register from their own packages, which import
// this one: linking them into the test binary here lets its tests select them.
import _ "github.com/fsbench/fsbench/internal/suites/all"
