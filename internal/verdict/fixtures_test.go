package verdict

import (
	"github.com/fsbench/fsbench/internal/testkit/runs"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// runOf and loadRun are the shared fixtures (internal/testkit/runs).
var runOf = runs.Of

func loadRun(t *testing.T) *results.Run { return runs.Frozen(t) }
