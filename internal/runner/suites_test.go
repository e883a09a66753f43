package runner

// The engine asks the suite registry which suites exist; the binary loads every suite through
// internal/cli, and this package's tests load them here, as the binary does.
import _ "github.com/fsbench/fsbench/internal/suites/all"
